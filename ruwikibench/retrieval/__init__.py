"""Retrieval: a BM25 index over a dataset's snippets with Russian/English normalization."""

from ruwikibench.retrieval.bm25 import BM25Index, Hit, IndexShelf, get_index, index_dir
from ruwikibench.retrieval.normalize import Normalizer, stopwords

__all__ = ["BM25Index", "Hit", "IndexShelf", "Normalizer", "get_index", "index_dir", "stopwords"]
