"""Build the BM25 index of a corpus quickly and in little memory, with bm25s's own scores.

bm25s's ``tokenize`` + ``index`` keep a Python list of strings per document and walk every token in Python:
about 0.5 ms per 600-word snippet here and 4 GB at 100k snippets. This builder tokenizes a chunk of texts with
one regex call per text, counts terms with numpy/scipy, normalizes each distinct word once (pymorphy3 or
Snowball, through :class:`~ruwikibench.retrieval.normalize.Normalizer`), and keeps only a sparse matrix of
term counts; large corpora are tokenized by worker processes, one per core. The result is a ``bm25s.BM25``
whose scores equal those of ``bm25s.tokenize(…)`` + ``BM25().index(…)`` with the same token pattern,
stopwords and normalizer (Lucene variant, k1 = 1.5, b = 0.75; tests compare the two builds bit for bit).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from itertools import chain, islice
from multiprocessing import get_context

import numpy as np

from ruwikibench.retrieval.normalize import TOKEN_PATTERN, Normalizer, fold, stopwords

K1, B = 1.5, 0.75
CHUNK = 4000  # texts per tokenizing job
PARALLEL_FROM = 40_000  # texts; below this, worker processes cost more than they save

_TOKEN = re.compile(TOKEN_PATTERN)
Tokenized = tuple[list[str], np.ndarray, np.ndarray, np.ndarray, int]
SCORE_BATCH = 1 << 24  # (term, document) pairs scored at a time: bounds the float64 temporaries


def tokenize_chunk(texts: list[str]) -> Tokenized:
    """A chunk's word counts: (its distinct folded words, then for every (text, word) pair that occurs: the
    text's position in the chunk, the word's index, how often; and the number of texts)."""
    lists = [_TOKEN.findall(fold(text)) for text in texts]
    flat = list(chain.from_iterable(lists))
    words = list(dict.fromkeys(flat))
    position = {word: i for i, word in enumerate(words)}
    ids = np.fromiter(map(position.__getitem__, flat), dtype=np.int64, count=len(flat))
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    rows = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
    width = max(1, len(words))
    pairs, counts = np.unique(rows * width + ids, return_counts=True)
    return (
        words,
        (pairs // width).astype(np.int32),
        (pairs % width).astype(np.int32),
        counts.astype(np.int32),
        len(texts),
    )


class TermTable:
    """Folded word -> index column (-1 for a stopword); every new word is normalized once, in batches."""

    def __init__(self, normalizer: Normalizer, stop: Iterable[str]) -> None:
        self.normalizer = normalizer
        self.stop = frozenset(stop)
        self.column_of_word: dict[str, int] = {}
        self.columns: dict[str, int] = {}  # term -> column, in order of first appearance

    def columns_for(self, words: list[str]) -> np.ndarray:
        new = [w for w in words if w not in self.column_of_word]
        kept = [w for w in new if w not in self.stop]
        self.column_of_word.update((w, -1) for w in new if w in self.stop)
        for word, term in zip(kept, self.normalizer.stemWords(kept), strict=True):
            self.column_of_word[word] = self.columns.setdefault(term, len(self.columns))
        return np.fromiter(map(self.column_of_word.__getitem__, words), dtype=np.int64, count=len(words))


def _chunks(texts: Iterable[str], size: int) -> Iterator[list[str]]:
    iterator = iter(texts)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _tokenized(texts: Iterable[str], workers: int) -> Iterator[Tokenized]:
    """Chunks tokenized in order: here, or by ``workers`` processes with a bounded number of chunks in
    flight."""
    if workers <= 1:
        yield from map(tokenize_chunk, _chunks(texts, CHUNK))
        return
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        pending: list[Future[Tokenized]] = []
        for chunk in _chunks(texts, CHUNK):
            pending.append(pool.submit(tokenize_chunk, chunk))
            if len(pending) > 2 * workers:
                yield pending.pop(0).result()
        for future in pending:
            yield future.result()


def count_terms(
    texts: Iterable[str], normalizer: Normalizer, workers: int = 1
):  # -> (csc_matrix, ndarray, TermTable)
    """Term counts (documents × columns, CSC, float32), document lengths in index terms, and the term table.

    Workers count (text, word) pairs; here each word becomes its column (stopwords dropped; words sharing a
    lemma share a column, and their counts add up when the pairs are assembled into one matrix at the end)."""
    import scipy.sparse as sp

    table = TermTable(normalizer, stopwords())
    rows, columns, counts, lengths = [], [], [], []
    offset = 0
    for words, text_index, word_index, count, n_texts in _tokenized(texts, workers):
        column = table.columns_for(words)[word_index]
        kept = column >= 0
        row = text_index[kept] + offset
        rows.append(row)
        columns.append(column[kept].astype(np.int32))
        counts.append(count[kept])
        lengths.append(np.bincount(text_index[kept], weights=count[kept], minlength=n_texts).astype(np.int64))
        offset += n_texts
    shape = (offset, len(table.columns))
    if not rows:
        return sp.csc_matrix(shape, dtype=np.float32), np.zeros(0, dtype=np.int64), table
    pairs = sp.coo_matrix(
        (np.concatenate(counts).astype(np.float32), (np.concatenate(rows), np.concatenate(columns))),
        shape=shape,
    )
    del rows, columns, counts
    matrix = pairs.tocsc()  # sums the pairs of words that share a column
    matrix.sum_duplicates()
    return matrix, np.concatenate(lengths), table


def bm25_scores(counts, doc_lengths: np.ndarray, k1: float = K1, b: float = B):  # -> (data, indices, indptr)
    """bm25s's Lucene-variant score of every (term, document) pair, in its CSC layout and float32 rounding
    (computed in float64 as bm25s does, a batch of pairs at a time)."""
    n_docs = counts.shape[0]
    df = np.diff(counts.indptr)
    idf = np.array([math.log(1 + (n_docs - d + 0.5) / (d + 0.5)) for d in df.tolist()], dtype=np.float32)
    average = doc_lengths.mean() if n_docs else 1.0
    denominator = k1 * ((1 - b) + b * doc_lengths / average)
    columns = np.repeat(np.arange(counts.shape[1], dtype=np.int32), df)
    data = np.empty(counts.nnz, dtype=np.float32)
    for start in range(0, counts.nnz, SCORE_BATCH):
        part = slice(start, start + SCORE_BATCH)
        tf = counts.data[part].astype(np.float64)
        data[part] = idf[columns[part]].astype(np.float64) * (tf / (denominator[counts.indices[part]] + tf))
    index_type = np.int32 if counts.nnz < np.iinfo(np.int32).max else np.int64
    return data, counts.indices.astype(np.int32, copy=False), counts.indptr.astype(index_type, copy=False)


def build_retriever(
    texts: Iterable[str], normalizer: Normalizer, n_texts: int | None = None
):  # -> bm25s.BM25
    """A ready ``bm25s.BM25`` (Lucene, k1 1.5, b 0.75) over ``texts``. ``n_texts`` (if known) picks worker
    processes for large corpora, one per core."""
    import bm25s

    workers = (os.cpu_count() or 1) if (n_texts or 0) >= PARALLEL_FROM else 1
    counts, lengths, table = count_terms(texts, normalizer, workers)
    data, indices, indptr = bm25_scores(counts, lengths)
    retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
    retriever.scores = {"data": data, "indices": indices, "indptr": indptr, "num_docs": counts.shape[0]}
    vocab = dict(table.columns)
    vocab[""] = len(vocab)  # as bm25s's own index() adds the empty token
    retriever.vocab_dict = vocab
    retriever.unique_token_ids_set = set(vocab.values())
    retriever.nonoccurrence_array = None
    return retriever
