"""The numpy BM25 builder against bm25s's own tokenize + index: the same score for every document and
query."""

import random

import bm25s
import numpy as np
import pytest

from ruwikibench.retrieval import BM25Index, Normalizer, stopwords
from ruwikibench.retrieval.bm25_build import build_retriever, count_terms, tokenize_chunk
from ruwikibench.retrieval.normalize import TOKEN_PATTERN, fold
from tests.sample import sample_dataset_or_skip

WORDS = [
    "Квантовый",
    "квантовых",
    "компьютеров",
    "кубит",
    "Ёлка",
    "елки",
    "и",
    "в",
    "the",
    "and",
    "Python's",
    "3.11",
    "x",
    "я",
    "snake_case",
    "кто-то",
    "«цитата»",
    "—",
    "2024",
    "Computers",
    "computing",
    "№5",
]
QUERIES = ["квантовые компьютеры и кубиты", "елка Python", "computing 2024", "snake_case кто", "и в the"]


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 40))) for _ in range(n)]
    return texts + ["", "и в the", "одно"]  # an empty text, a stopwords-only text, a one-word text


def _reference(texts: list[str], norm: Normalizer) -> bm25s.BM25:
    tokens = bm25s.tokenize(
        [fold(t) for t in texts],
        lower=False,
        token_pattern=TOKEN_PATTERN,
        stopwords=list(stopwords()),
        stemmer=norm,
        return_ids=False,
        show_progress=False,
    )
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    return retriever


def _assert_same_scores(texts: list[str], kind: str, queries: list[str]) -> None:
    norm = Normalizer(kind)  # type: ignore[arg-type]
    reference, built = _reference(texts, Normalizer(kind)), build_retriever(texts, norm)  # type: ignore[arg-type]
    assert set(built.vocab_dict) == set(reference.vocab_dict)
    for query in queries:
        terms = [t for t in norm.terms(query) if t in reference.vocab_dict]
        if terms:
            assert np.array_equal(built.get_scores(terms), reference.get_scores(terms)), query


@pytest.mark.parametrize("kind", ["lemma", "stem"])
def test_same_scores_as_bm25s_bit_for_bit(kind: str) -> None:
    _assert_same_scores(_texts(300, seed=1), kind, QUERIES)


def test_same_scores_on_the_real_sample() -> None:
    dataset = sample_dataset_or_skip()
    texts = [s.text for s in dataset.snippets]
    titles = [a.title for a in dataset.articles]
    _assert_same_scores(texts, "lemma", titles + ["история развития языка программирования"])


def test_worker_processes_count_what_one_process_counts() -> None:
    texts = _texts(2500, seed=2)
    one, lengths_one, table_one = count_terms(texts, Normalizer("stem"), workers=1)
    import ruwikibench.retrieval.bm25_build as build

    chunk, build.CHUNK = build.CHUNK, 300  # several chunks for two workers
    try:
        two, lengths_two, table_two = count_terms(texts, Normalizer("stem"), workers=2)
    finally:
        build.CHUNK = chunk
    assert table_one.columns == table_two.columns
    assert np.array_equal(lengths_one, lengths_two) and (one != two).nnz == 0


def test_tokens_are_folded_word_runs_of_two_or_more() -> None:
    words, text, word, count, n_texts = tokenize_chunk(["Ёж и X-ray ёж 42", "", "ёж"])
    pairs = sorted((int(t), words[w], int(c)) for t, w, c in zip(text, word, count))
    assert pairs == [(0, "42", 1), (0, "ray", 1), (0, "еж", 2), (2, "еж", 1)] and n_texts == 3


def test_an_index_built_here_saves_and_loads_with_the_same_hits(tmp_path) -> None:
    from tests.retrieval.synthetic import make_dataset

    dataset = make_dataset()
    index = BM25Index.build(dataset, "lemma")
    index.save(tmp_path / "index")
    loaded = BM25Index.load(tmp_path / "index")
    query = "квантовые компьютеры и кубиты"
    assert [h.model_dump() for h in loaded.search(query, 8)] == [
        h.model_dump() for h in index.search(query, 8)
    ]
