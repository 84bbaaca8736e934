"""Russian + English token normalization for BM25: pymorphy3 lemmas or Snowball stems, package stopwords.

A :class:`Normalizer` has the ``stemWords(list[str]) -> list[str]`` method bm25s expects of a stemmer.
Cyrillic words go to the Russian normalizer (pymorphy3 lemma or Snowball «russian»), every other word to
Snowball «english». «ё» is folded to «е» before anything else.
"""

from __future__ import annotations

import hashlib
import re
import threading
from functools import lru_cache
from typing import Literal

NormalizerKind = Literal["lemma", "stem"]
TOKEN_PATTERN = r"(?u)\b\w\w+\b"
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_LOCK = threading.Lock()


def fold(text: str) -> str:
    """Lower-case and fold «ё» to «е»."""
    return text.lower().replace("ё", "е")


@lru_cache(maxsize=1)
def stopwords() -> tuple[str, ...]:
    """Russian and English stopwords of the ``stop-words`` package, folded, sorted."""
    from stop_words import get_stop_words

    words = {fold(w) for lang in ("russian", "english") for w in get_stop_words(lang)}
    return tuple(sorted(words))


def stopwords_hash() -> str:
    return hashlib.sha256("\n".join(stopwords()).encode()).hexdigest()[:8]


@lru_cache(maxsize=1)
def _morph():  # -> pymorphy3.MorphAnalyzer
    import pymorphy3

    return pymorphy3.MorphAnalyzer()


@lru_cache(maxsize=4)
def _snowball(language: str):  # -> Stemmer.Stemmer
    import Stemmer

    return Stemmer.Stemmer(language)


class Normalizer:
    """Maps folded words to index terms. Thread-safe (PyStemmer objects are guarded by a lock)."""

    def __init__(self, kind: NormalizerKind = "lemma") -> None:
        if kind not in ("lemma", "stem"):
            raise ValueError(f"unknown normalizer {kind!r}; use 'lemma' or 'stem'")
        self.kind = kind
        self._memo: dict[str, str] = {}

    def _russian(self, words: list[str]) -> list[str]:
        if self.kind == "stem":
            with _LOCK:
                return list(_snowball("russian").stemWords(words))
        morph = _morph()
        return [morph.parse(w)[0].normal_form.replace("ё", "е") for w in words]

    def _english(self, words: list[str]) -> list[str]:
        with _LOCK:
            return list(_snowball("english").stemWords(words))

    def stemWords(self, words: list[str]) -> list[str]:
        """Normalize a list of (lower-cased) words, memoizing each distinct word."""
        todo = sorted({w for w in words if w not in self._memo})
        russian = [w for w in todo if _CYRILLIC.search(w)]
        other = [w for w in todo if not _CYRILLIC.search(w)]
        for group, terms in ((russian, self._russian(russian)), (other, self._english(other))):
            self._memo.update(zip(group, terms, strict=True))
        return [self._memo[w] for w in words]

    def terms(self, text: str) -> list[str]:
        """Index terms of a text: folded ``\\w\\w+`` tokens, stopwords removed, normalized."""
        import bm25s

        tokens = bm25s.tokenize(
            [fold(text)],
            lower=False,
            token_pattern=TOKEN_PATTERN,
            stopwords=list(stopwords()),
            stemmer=self,
            return_ids=False,
            show_progress=False,
        )
        return list(tokens[0])
