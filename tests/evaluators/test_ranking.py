import itertools
import math
import random

import pytest
from sklearn.metrics import ndcg_score

from ruwikibench.evaluators.ranking import dcg, ndcg, pool_recall, r_precision, ranking_metrics


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
