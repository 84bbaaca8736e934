"""The permutation floor and rescaling: hand-computed cases."""

import math

import pytest

from ruwikibench.evaluators.floor import draw_others, rescale, rescaled_estimate


def test_rescale_by_hand() -> None:
    assert rescale(0.9, 0.8) == pytest.approx(0.5)
    assert rescale(0.8, 0.8) == 0.0
    assert rescale(1.0, 0.8) == pytest.approx(1.0)
    assert rescale(0.0, 0.8) == pytest.approx(-4.0)  # an empty output (raw 0) lands far below chance
    assert math.isnan(rescale(0.9, 1.0))


def test_rescaled_estimate_mean_and_ci_by_hand() -> None:
    est = rescaled_estimate([0.9, 0.95], [0.8, 0.8])
    assert est.mean == pytest.approx((0.925 - 0.8) / 0.2) and est.n == 2
    # the bootstrap means of two values lie in [0.9, 0.95]: rescaled in [0.5, 0.75]
    assert 0.5 - 1e-9 <= est.low <= est.mean <= est.high <= 0.75 + 1e-9
    constant = rescaled_estimate([0.9, 0.9, 0.9], [0.6, 0.6])
    assert (constant.mean, constant.low, constant.high) == pytest.approx((0.75, 0.75, 0.75))
    assert rescaled_estimate([], [0.5]).n == 0 and rescaled_estimate([0.5], []).n == 0


def test_rescaled_estimate_widens_with_the_floor_uncertainty() -> None:
    fixed = rescaled_estimate([0.9, 0.92, 0.94, 0.96], [0.8] * 4)
    noisy = rescaled_estimate([0.9, 0.92, 0.94, 0.96], [0.7, 0.9, 0.75, 0.85])
    assert fixed.mean == pytest.approx(noisy.mean)
    assert noisy.high - noisy.low > fixed.high - fixed.low


def test_draw_others_prefers_other_articles_and_is_deterministic() -> None:
    items = [("A", "s1"), ("A", "s2"), ("B", "t1")]
    draws = draw_others(items, items, per_item=8, seed=0)
    assert draws == [[2], [2], [0, 1]]
    single = [("A", "s1"), ("A", "s2")]  # no other article: other items of the same article
    assert draw_others(single, single, per_item=8) == [[1], [0]]
    assert draw_others([("A", "s1")], [("A", "s1")], per_item=8) == [[]]

    pool = [(f"P{i}", "x") for i in range(20)]
    first = draw_others([("A", "s1"), ("B", "t1")], pool, per_item=3, seed=7)
    assert all(len(d) == 3 == len(set(d)) for d in first)
    assert draw_others([("A", "s1"), ("B", "t1")], pool, per_item=3, seed=7) == first
    # an item's draw depends on its key and the seed only, not on the other items of the run
    assert draw_others([("B", "t1")], pool, per_item=3, seed=7) == [first[1]]
