import itertools
import math
import random

import pytest
from sklearn.metrics import ndcg_score

from ruwikibench.evaluators.ranking import dcg, ndcg, pool_recall, r_precision, ranking_metrics, recall_at_r


def sk_ndcg(labels: list[int], k: int | None = None) -> float:
    """sklearn's NDCG of a ranked list: scores strictly decreasing with position (no ties)."""
    scores = [len(labels) - i for i in range(len(labels))]
    return float(ndcg_score([labels], [scores], k=k))


@pytest.mark.parametrize("seed", range(20))
def test_ndcg_matches_sklearn(seed: int) -> None:
    rng = random.Random(seed)
    labels = [int(rng.random() < 0.35) for _ in range(rng.randint(3, 40))]
    if not any(labels):
        labels[rng.randrange(len(labels))] = 1
    assert ndcg(labels) == pytest.approx(sk_ndcg(labels), abs=1e-12)
    for k in (1, 3, 10):
        assert ndcg(labels, k) == pytest.approx(sk_ndcg(labels, k), abs=1e-12)


def test_dcg_by_hand() -> None:
    assert dcg([1, 0, 1]) == pytest.approx(1 + 1 / 2)
    assert dcg([0, 1, 1], k=2) == pytest.approx(1 / math.log2(3))
    assert ndcg([0, 1]) == pytest.approx((1 / math.log2(3)) / 1)


def test_r_precision_by_hand() -> None:
    # 3 relevant in the pool -> look at the top 3: two of them relevant.
    assert r_precision([1, 0, 1, 0, 1, 0]) == pytest.approx(2 / 3)
    assert r_precision([0, 0, 1, 1]) == 0.0
    assert r_precision([1, 1, 0, 0]) == 1.0
    assert r_precision([1, 0, 0, 1], r=4) == 0.5
    assert r_precision([0, 0, 0]) == 0.0


def test_oracle_is_one_and_reversed_oracle_is_the_minimum() -> None:
    labels = [0, 1, 0, 0, 1, 0, 1]
    oracle = sorted(labels, reverse=True)
    reverse = sorted(labels)
    assert ndcg(oracle) == 1.0 and r_precision(oracle) == 1.0
    every = {ndcg(list(p)) for p in set(itertools.permutations(labels))}
    assert ndcg(reverse) == pytest.approx(min(every))
    assert ndcg(oracle) == pytest.approx(max(every))
    # 3 relevant of 7: the reversed top 3 holds none of them.
    assert r_precision(reverse) == 0.0
    # More relevant than non-relevant: reversed R-Pr = (R - (N - R)) / R.
    assert r_precision([0, 1, 1, 1]) == pytest.approx((3 - 1) / 3)


def test_no_relevant_in_pool_scores_zero() -> None:
    assert ndcg([0, 0, 0]) == 0.0 and ndcg([]) == 0.0


def test_ranking_metrics_keys_and_values() -> None:
    metrics = ranking_metrics([0, 1, 1, 0], [1, 1, 0, 0], relevant_total=4, ks=(2,))
    assert metrics["pool_recall"] == 0.5
    assert (
        metrics["rerank_ndcg"] == 1.0
        and metrics["rerank_r_precision"] == 1.0
        and metrics["rerank_ndcg@2"] == 1.0
    )
    assert metrics["bm25_r_precision"] == 0.5
    assert metrics["bm25_ndcg"] == pytest.approx(sk_ndcg([0, 1, 1, 0]))
    assert metrics["bm25_ndcg@2"] == pytest.approx(sk_ndcg([0, 1, 1, 0], 2))
    with pytest.raises(ValueError, match="permutation"):
        ranking_metrics([0, 1], [1, 1], relevant_total=2)
    assert pool_recall(0, 0) == 0.0
    # recall at R over all 4 of the article's snippets: the first 4 of each order hold 2 of them
    assert metrics["bm25_recall_at_r"] == metrics["rerank_recall_at_r"] == 0.5


def test_recall_at_r_by_hand() -> None:
    # 5 relevant snippets in the article; the order's first 5 hold 3 of them (positions 1, 3, 4).
    assert recall_at_r([1, 0, 1, 1, 0, 1, 0], 5) == pytest.approx(3 / 5)
    assert recall_at_r([1, 1], 5) == pytest.approx(2 / 5)  # a pool shorter than R
    assert recall_at_r([0, 1], 0) == 0.0
    assert recall_at_r([1, 1, 1], 3) == 1.0


def test_a_pool_that_misses_snippets_scores_lower_recall_though_its_r_precision_is_perfect() -> None:
    """The article has 16 snippets. A title query's pool finds 10 of them, ranked first: R-Precision 1.0
    (R = 10, the pool's count). A description's pool of 48 finds all 16, 13 of them in its first 16:
    R-Precision 13/16, yet it found more of the article."""
    title_pool = [1] * 10 + [0] * 2
    description_pool = [1] * 12 + [0, 1, 0, 0, 1] + [0] * 28 + [1, 0, 1]
    assert sum(description_pool) == 16 and len(description_pool) == 48
    title = ranking_metrics(title_pool, title_pool, relevant_total=16)
    description = ranking_metrics(description_pool, description_pool, relevant_total=16)
    assert title["rerank_r_precision"] == 1.0 and title["rerank_ndcg"] == 1.0
    assert description["rerank_r_precision"] == pytest.approx(13 / 16)  # below the title pool's 1.0
    # recall at R: first 16 of each order over the 16 snippets of the article
    assert title["rerank_recall_at_r"] == pytest.approx(10 / 16)
    assert description["rerank_recall_at_r"] == pytest.approx(13 / 16)
    assert description["rerank_recall_at_r"] > title["rerank_recall_at_r"]
