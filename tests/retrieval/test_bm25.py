import threading

import bm25s
import numpy as np
import pytest

from ruwikibench.dataset import Dataset
from ruwikibench.retrieval import BM25Index, Normalizer, get_index, index_dir, stopwords
from ruwikibench.retrieval.bm25 import IndexShelf
from tests.retrieval.synthetic import make_dataset


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    return make_dataset()


def test_lemmas_and_stems_unify_inflections() -> None:
    lemma, stem = Normalizer("lemma"), Normalizer("stem")
    assert (
        lemma.terms("квантовых компьютеров")
        == lemma.terms("квантовый компьютер")
        == ["квантовый", "компьютер"]
    )
    assert stem.terms("квантовых компьютеров") == stem.terms("квантовый компьютер")
    assert lemma.terms("Ёлка") == lemma.terms("елки")
    assert stem.terms("computers computing") == ["comput", "comput"]


def test_stopwords_from_package_both_languages() -> None:
    words = set(stopwords())
    assert {"и", "в", "the", "and"} <= words and len(words) > 1000
    assert Normalizer("lemma").terms("и в the and") == []


def test_unknown_normalizer_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown normalizer"):
        Normalizer("porter")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["lemma", "stem"])
def test_topic_query_retrieves_its_article(dataset: Dataset, kind: str) -> None:
    index = BM25Index.build(dataset, kind)  # type: ignore[arg-type]
    hits = index.search("квантовые компьютеры и кубиты", k=6)
    assert len(hits) == 6 and [h.rank for h in hits] == list(range(1, 7))
    assert all(dataset.snippet(h.snippet_id).article == "Квантовый компьютер" for h in hits[:3])
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_scores_match_bm25s_reference(dataset: Dataset) -> None:
    """Our wrapper gives the scores bm25s computes on the same terms, document by document."""
    norm = Normalizer("stem")
    corpus = [norm.terms(s.text) for s in dataset.snippets]
    reference = bm25s.BM25()
    reference.index(corpus, show_progress=False)
    query = "Олимпийские игры в Париже, медали спортсменов"
    expected = reference.get_scores(norm.terms(query))
    np.testing.assert_allclose(BM25Index.build(dataset, "stem").scores(query), expected, rtol=1e-6)


def test_k_is_clamped_and_empty_queries_retrieve_nothing(dataset: Dataset) -> None:
    index = BM25Index.build(dataset, "stem")
    query = "кубит Python Париж Сколково"
    expected = int((index.scores(query) > 0).sum())
    assert 0 < expected <= len(dataset.snippets)
    assert len(index.search(query, k=10_000)) == expected
    assert index.search("и в на the", k=5) == []
    assert index.search("слововнесловаря", k=5) == []
    assert index.search("кубит", k=0) == []


def test_ties_keep_corpus_order() -> None:
    dataset = make_dataset()
    for snip in dataset.snippets:
        object.__setattr__(snip, "text", "одинаковый текст")
    hits = BM25Index.build(dataset, "lemma").search("одинаковый", k=4)
    assert [h.snippet_id for h in hits] == [s.id for s in dataset.snippets[:4]]


def test_persisted_index_reloads_identically(dataset: Dataset, tmp_path) -> None:
    built = get_index(dataset, "lemma", tmp_path)
    folder = index_dir(tmp_path, dataset.dataset_id, "lemma")
    assert (folder / "ruwikibench_index.json").exists()
    loaded = get_index(dataset, "lemma", tmp_path)
    assert loaded is not built and loaded.doc_ids == built.doc_ids
    query = "инновационный центр Сколково и стартапы"
    np.testing.assert_allclose(loaded.scores(query), built.scores(query))
    assert loaded.search(query, 5) == built.search(query, 5)


def test_a_shelf_builds_once_under_concurrency(dataset: Dataset, tmp_path, monkeypatch) -> None:
    builds = []
    original = BM25Index.build.__func__  # type: ignore[attr-defined]

    def counting(cls, *args, **kwargs):
        builds.append(1)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(BM25Index, "build", classmethod(counting))
    results: list[BM25Index] = []
    shelf = IndexShelf()
    threads = [
        threading.Thread(target=lambda: results.append(shelf.get(dataset, "stem", tmp_path)))
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(builds) == 1 and len({id(r) for r in results}) == 1
    assert (
        IndexShelf().get(dataset, "stem", tmp_path) is not results[0]
    )  # another run loads its own (from disk)
    assert len(builds) == 1
    assert len(shelf) == 1
    shelf.clear()  # the run's units are done: the shelf lets go, a later get loads again (from disk)
    assert len(shelf) == 0
    again = shelf.get(dataset, "stem", tmp_path)
    assert again is not results[0] and again.doc_ids == results[0].doc_ids and len(builds) == 1
