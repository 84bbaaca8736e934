"""Embedding similarity of texts as the paper's "BERTScore": greedy matching of sentence embeddings.

P = mean over generated sentences of the best cosine to a reference sentence, R = mean over reference
sentences of the best cosine to a generated sentence, F1 = 2PR / (P + R) (paper eqs. 5–7, sentences instead of
tokens). Sentences come from razdel; vectors must be L2-normalized (every :class:`Embedder` returns them so).
A sentence with no letter or digit («.», «—») is not a sentence to score: it is dropped on both sides, so a
generated text made of punctuation has no sentence and scores 0 (its embedding would sit at the embedder's
chance level).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import TYPE_CHECKING

from ruwikibench.evaluators.coverage import has_content
from ruwikibench.models.embeddings import Embedder, RecentVectors, embed_prompted

if TYPE_CHECKING:  # numpy is imported where it is used: a run loads this module before its first request
    import numpy as np


def split_sentences(text: str) -> list[str]:
    """razdel sentences of ``text``, stripped, empty ones dropped (kept per text: a reference is split for its
    item's score, each baseline's and each floor pair it is drawn into)."""
    return list(_sentences(text or ""))


def scored_sentences(text: str) -> list[str]:
    """The sentences of ``text`` that :func:`sentence_prf` scores: those with a letter or digit."""
    return [s for s in _sentences(text or "") if has_content(s)]


SENTENCE_MEMO = 2_048
"""Texts whose sentences are kept. The memo holds each text (its key) and its sentences: at 16,384 texts, the
earlier size, it grew to ~280 MB at the paper's 285 articles, filled mostly by the sections baselines' snippet
texts; at 2,048 the finish's floors take the same time (``bench/finish.py`` at 285: 18.3 s and 17.2 s with
1,024) and the scoring of 64 articles' units 10–11 s either way."""


@lru_cache(maxsize=SENTENCE_MEMO)
def _sentences(text: str) -> tuple[str, ...]:
    # not at the top: the stage modules import this module before a run's first request
    from razdel import sentenize

    return tuple(s.text.strip() for s in sentenize(text) if s.text.strip())


def greedy_prf(generated: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """P / R / F1 from two matrices of L2-normalized row vectors (generated rows, reference rows)."""
    import numpy as np

    if len(generated) == 0 or len(reference) == 0:
        raise ValueError("greedy_prf needs at least one generated and one reference vector")
    sims = np.clip(
        np.asarray(generated, dtype=np.float64) @ np.asarray(reference, dtype=np.float64).T, -1.0, 1.0
    )
    precision = float(sims.max(axis=1).mean())
    recall = float(sims.max(axis=0).mean())
    f1 = 0.0 if precision + recall <= 0 else 2 * precision * recall / (precision + recall)
    return {"p": precision, "r": recall, "f1": f1}


def sentence_prf(
    generated: str, reference: str, embedder: Embedder, prompt: str | None = None
) -> dict[str, float]:
    """Sentence-level embedding P / R / F1 of ``generated`` against ``reference``; 0 when generated is empty.
    With ``prompt`` every sentence is encoded as ``prompt + sentence`` (:func:`embed_prompted`)."""
    gen_sents, ref_sents = scored_sentences(generated), scored_sentences(reference)
    if not ref_sents:
        raise ValueError("sentence_prf: the reference text has no sentence")
    if not gen_sents:
        return {"p": 0.0, "r": 0.0, "f1": 0.0}
    kept = _KEPT.get()
    if kept is None:
        vectors = embed_prompted(embedder, gen_sents + ref_sents, prompt)
        return greedy_prf(vectors[: len(gen_sents)], vectors[len(gen_sents) :])
    space = f"{id(embedder)}|{prompt}"  # the embedders outlive the block (sentence_vectors_kept)
    found = kept.get_many(space, [generated, reference])
    gen_vectors, ref_vectors = found.get(generated), found.get(reference)
    if gen_vectors is None and ref_vectors is None:  # one call for both, as without the memo
        vectors = embed_prompted(embedder, gen_sents + ref_sents, prompt)
        gen_vectors, ref_vectors = vectors[: len(gen_sents)], vectors[len(gen_sents) :]
    gen_vectors = gen_vectors if gen_vectors is not None else embed_prompted(embedder, gen_sents, prompt)
    ref_vectors = ref_vectors if ref_vectors is not None else embed_prompted(embedder, ref_sents, prompt)
    kept.put_many(space, {generated: gen_vectors, reference: ref_vectors})
    return greedy_prf(gen_vectors, ref_vectors)


_KEPT: ContextVar[RecentVectors | None] = ContextVar("ruwikibench_sentence_vectors", default=None)


@contextmanager
def sentence_vectors_kept(max_bytes: int = 64 * 2**20) -> Iterator[None]:
    """Within the block, :func:`sentence_prf` keeps each text's sentence vectors (at most ``max_bytes``,
    least recently used dropped; the embedders must live as long as the block), so a text scored against many
    others — a permutation floor draws each reference into many pairs, and each item's text into each of its
    pairs — is split, hashed and looked up once: 18 of the 74 s of the finish at the paper's size were those
    look-ups (bench/finish.py). The vectors are the embedder's, so the scores are the same."""
    token = _KEPT.set(RecentVectors(max_bytes))  # a text's sentence matrix per (embedder, prompt)
    try:
        yield
    finally:
        _KEPT.reset(token)
