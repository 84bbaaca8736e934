"""The permutation floor and rescaling: hand-computed cases."""

import math

import numpy as np
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
    constant = rescaled_estimate([0.9, 0.9, 0.9], [0.6, 0.6, float("nan")])  # the third item has no floor
    assert (constant.mean, constant.low, constant.high) == pytest.approx((0.75, 0.75, 0.75))
    assert rescaled_estimate([], []).n == 0 and rescaled_estimate([0.5], [float("nan")]).n == 0
    with pytest.raises(ValueError, match="one per item"):
        rescaled_estimate([0.9, 0.9], [0.6])


def test_rescaled_estimate_widens_with_the_floor_uncertainty() -> None:
    fixed = rescaled_estimate([0.9, 0.92, 0.94, 0.96], [0.8] * 4)
    noisy = rescaled_estimate([0.9, 0.92, 0.94, 0.96], [0.7, 0.9, 0.75, 0.85])
    assert fixed.mean == pytest.approx(noisy.mean)
    assert noisy.high - noisy.low > fixed.high - fixed.low


def test_rescaled_estimate_resamples_score_floor_pairs() -> None:
    """Items whose floor moves with their score (an easy item: high score, high floor): resampled as pairs,
    every resample rescales to nearly the same value, so the CI is far narrower than with independent
    resampling."""
    scores = [0.95, 0.85, 0.75, 0.65, 0.9, 0.8, 0.7, 0.6]
    floors = [s - 0.1 for s in scores]  # each item's score sits 0.1 above its own floor
    paired = rescaled_estimate(scores, floors)
    assert paired.mean == pytest.approx(0.1 / (1 - (sum(floors) / 8)))
    independent = np.random.default_rng(0)
    boot = []
    for _ in range(2000):
        s = np.mean(independent.choice(scores, 8))
        f = np.mean(independent.choice(floors, 8))
        boot.append((s - f) / (1 - f))
    low, high = np.quantile(boot, [0.025, 0.975])
    assert paired.high - paired.low < 0.5 * (high - low)


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
    assert draw_others([("B", "t1")], pool, per_item=3, seed=8) != [first[1]]  # ... and the seed changes it


def _keys(pool: list[tuple[str, str]], draws: list[list[int]]) -> list[list[tuple[str, str]]]:
    return [[pool[j] for j in draw] for draw in draws]


def test_draw_is_independent_of_pool_order() -> None:
    """The pool in outputs.jsonl order depends on which unit finished first: reversed, the same references."""
    pool = [(f"A{i % 7}", f"s{i}") for i in range(40)]
    items = pool[:10]
    forward = _keys(pool, draw_others(items, pool, per_item=5, seed=0))
    reverse = list(reversed(pool))
    assert _keys(reverse, draw_others(items, reverse, per_item=5, seed=0)) == forward


def test_a_new_article_only_enters_draws_it_ranks_into() -> None:
    """Consistent sampling: with an article added, each item's references are the old ones, except where the
    new article's items displace some; an item whose draw holds none of them keeps exactly its old draw."""
    pool = [(f"A{i % 6}", f"s{i}") for i in range(36)]
    grown = pool + [("NEW", f"n{i}") for i in range(6)]
    before = _keys(pool, draw_others(pool, pool, per_item=8, seed=0))
    after = _keys(grown, draw_others(pool, grown, per_item=8, seed=0))
    unchanged = 0
    for old, new in zip(before, after, strict=True):
        kept = [key for key in new if key[0] != "NEW"]
        assert set(kept) <= set(old) and len(new) == 8
        unchanged += old == new
    assert 0 < unchanged < len(pool)  # some draws took a new candidate, the others are untouched


def _draw_by_sorting(items, pool, per_item, seed=0):  # type: ignore[no-untyped-def]
    """The draw as first written (a Python scan of the pool and a full sort per item): the specification."""
    from ruwikibench.evaluators.floor import _key_hash, _mix

    keys = [(str(a), str(i)) for a, i in pool]
    hashed = _mix(np.array([_key_hash(seed, *key) for key in keys], dtype=np.uint64))
    draws = []
    for article, item in items:
        others = [j for j, (a, _) in enumerate(keys) if a != article]
        if not others:
            others = [j for j, key in enumerate(keys) if key != (article, item)]
        if len(others) > per_item:
            order = np.argsort(_mix(hashed[others] ^ _key_hash(seed, article, item)), kind="stable")[
                :per_item
            ]
            others = [others[int(o)] for o in order]
        draws.append(sorted(others, key=lambda j: keys[j]))
    return draws


def test_draw_equals_the_full_sort_on_a_large_pool() -> None:
    pool = [(f"A{a}", f"s{i}") for a in range(60) for i in range(a % 7 + 1)]
    items = pool[::3] + [("solo", "x")]
    for per_item, seed in ((8, 0), (3, 5), (40, 1)):
        assert draw_others(items, pool, per_item, seed) == _draw_by_sorting(items, pool, per_item, seed)
    one_article = [("A", f"s{i}") for i in range(50)]
    assert draw_others(one_article, one_article, 8) == _draw_by_sorting(one_article, one_article, 8)


def test_lowest_keeps_the_stable_order_of_ties() -> None:
    from ruwikibench.evaluators.floor import _lowest

    values = np.array([5, 1, 3, 1, 9, 1, 2, 1, 7, 4, 1, 8, 6, 0, 1, 3, 2, 5, 1, 1, 9, 9, 9], dtype=np.uint64)
    for k in (1, 2, 3, 4, 5):
        assert _lowest(values, k).tolist() == np.argsort(values, kind="stable")[:k].tolist()
