"""A BM25 index (bm25s, Lucene variant, k1 = 1.5, b = 0.75) over every snippet of a dataset.

Built once per (dataset id, normalizer), saved under ``<cache dir>/bm25/<dataset id>-<normalizer>-<version>/``
and reloaded from there by :func:`get_index`; a run keeps what it loaded on an :class:`IndexShelf`
(thread-safe: one load or build per key even when many articles ask at once).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ruwikibench.dataset import Dataset
from ruwikibench.retrieval.normalize import Normalizer, NormalizerKind, stopwords_hash
from ruwikibench.storage.durable import replace_durably

if TYPE_CHECKING:  # numpy is imported where it is used: a run loads this module before its first request
    import numpy as np

INDEX_VERSION = "1"


class Hit(BaseModel):
    snippet_id: str
    rank: int  # 1-based
    score: float


class BM25Index:
    """Snippet ids plus a bm25s retriever over their normalized terms."""

    def __init__(self, retriever, doc_ids: list[str], normalizer: NormalizerKind, dataset_id: str) -> None:
        self.retriever = retriever
        self.doc_ids = doc_ids
        self.normalizer = Normalizer(normalizer)
        self.dataset_id = dataset_id

    @property
    def kind(self) -> NormalizerKind:
        return self.normalizer.kind

    def __len__(self) -> int:
        return len(self.doc_ids)

    @classmethod
    def build(cls, dataset: Dataset, normalizer: NormalizerKind = "lemma") -> BM25Index:
        """Index every snippet (:mod:`ruwikibench.retrieval.bm25_build`: bm25s's scores, built in numpy)."""
        from ruwikibench.retrieval.bm25_build import build_retriever

        norm = Normalizer(normalizer)
        texts = (s.text for s in dataset.snippets)
        retriever = build_retriever(texts, norm, n_texts=len(dataset.snippets))
        index = cls(retriever, [s.id for s in dataset.snippets], normalizer, dataset.dataset_id)
        index.normalizer = norm  # keep the memo of corpus words for queries
        return index

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for the query (zeros when no query term is in the vocabulary)."""
        import numpy as np

        terms = self.normalizer.terms(query)
        if not self.doc_ids or not terms:
            return np.zeros(len(self.doc_ids), dtype=np.float32)
        return np.asarray(self.retriever.get_scores(terms), dtype=np.float32)

    def search(self, query: str, k: int) -> list[Hit]:
        """Top ``k`` documents by BM25 (k clamped to the corpus size); ties keep corpus order; documents
        sharing no term with the query (score 0) are not retrieved."""
        import numpy as np

        k = max(0, min(int(k), len(self.doc_ids)))
        if k == 0:
            return []
        scores = self.scores(query)
        order = np.argsort(-scores, kind="stable")[:k]
        hits = [
            Hit(snippet_id=self.doc_ids[i], rank=0, score=float(scores[i])) for i in order if scores[i] > 0
        ]
        for rank, hit in enumerate(hits, start=1):
            hit.rank = rank
        return hits

    # -- persistence -------------------------------------------------------------------------------

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        if self.doc_ids:
            self.retriever.save(str(directory), show_progress=False)
        meta = {
            "dataset_id": self.dataset_id,
            "normalizer": self.kind,
            "doc_ids": self.doc_ids,
            "version": INDEX_VERSION,
            "stopwords": stopwords_hash(),
        }
        (directory / "ruwikibench_index.json").write_text(
            json.dumps(meta, ensure_ascii=False), encoding="utf-8"
        )

    @classmethod
    def load(cls, directory: Path) -> BM25Index:
        import bm25s

        meta_path = directory / "ruwikibench_index.json"
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("version") != INDEX_VERSION or meta.get("stopwords") != stopwords_hash():
            raise ValueError(f"{meta_path}: index built by another version; delete the folder to rebuild")
        retriever = bm25s.BM25.load(str(directory), show_progress=False) if meta["doc_ids"] else bm25s.BM25()
        return cls(retriever, meta["doc_ids"], meta["normalizer"], meta["dataset_id"])


def index_dir(cache_dir: str | Path, dataset_id: str, normalizer: NormalizerKind) -> Path:
    return (
        Path(cache_dir).expanduser()
        / "bm25"
        / f"{dataset_id}-{normalizer}-v{INDEX_VERSION}-{stopwords_hash()}"
    )


def _save_atomically(index: BM25Index, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        index.save(tmp)
        replace_durably(tmp, target)
    except OSError:  # another process saved it first
        shutil.rmtree(tmp, ignore_errors=True)


def get_index(
    dataset: Dataset, normalizer: NormalizerKind = "lemma", cache_dir: str | Path | None = None
) -> BM25Index:
    """The dataset's index: loaded from ``<cache_dir>/bm25/…`` when saved there, else built (and saved when a
    cache dir is given). Each call loads anew; a run keeps its loaded indexes on an :class:`IndexShelf`."""
    target = index_dir(cache_dir, dataset.dataset_id, normalizer) if cache_dir is not None else None
    if target is not None and (target / "ruwikibench_index.json").exists():
        index = BM25Index.load(target)
        if index.doc_ids == [s.id for s in dataset.snippets]:
            return index  # (same content hash but another snippet order: rebuilt in memory below)
    index = BM25Index.build(dataset, normalizer)
    if target is not None and not target.exists():
        _save_atomically(index, target)
    return index


class IndexShelf:
    """The BM25 indexes one run has loaded (kept on its :class:`~ruwikibench.stage.context.StageContext`):
    each is loaded or built once, even when many articles ask for it at once from several threads."""

    def __init__(self) -> None:
        self._indexes: dict[tuple[str, str, str], BM25Index] = {}
        self._locks: dict[tuple[str, str, str], threading.Lock] = {}
        self._lock = threading.Lock()

    def get(
        self, dataset: Dataset, normalizer: NormalizerKind = "lemma", cache_dir: str | Path | None = None
    ) -> BM25Index:
        key = (dataset.dataset_id, normalizer, str(cache_dir))
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._indexes:
                self._indexes[key] = get_index(dataset, normalizer, cache_dir)
            return self._indexes[key]

    def __len__(self) -> int:
        return len(self._indexes)

    def clear(self) -> None:
        """Let go of the loaded indexes (a run's units are done: ~65 MB at 36,500 snippets); a later
        :meth:`get` loads again."""
        with self._lock:
            self._indexes.clear()
