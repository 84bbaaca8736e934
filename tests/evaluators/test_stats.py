import itertools
import math

import numpy as np
import pytest

from ruwikibench.evaluators.stats import (
    Estimate,
    bootstrap_ci,
    paired_bootstrap,
    paired_difference,
    paired_randomization,
    randomization_p_value,
)


def test_bootstrap_mean_is_sample_mean_and_ci_brackets_it() -> None:
    values = list(np.linspace(0, 1, 50))
    est = bootstrap_ci(values)
    assert abs(est.mean - 0.5) < 1e-12 and est.low < 0.5 < est.high and est.n == 50
    # normal approximation of the 95% interval: mean ± 1.96·sd/√n
    half = 1.96 * np.std(values, ddof=1) / np.sqrt(len(values))
    assert abs((est.high - est.low) / 2 - half) < 0.02


def test_an_estimate_without_a_number_prints_a_dash() -> None:
    nan = float("nan")
    assert Estimate(mean=0.5, low=0.4, high=0.6, n=3).fmt(100) == "50.00 [40.00, 60.00]"
    assert Estimate(mean=nan, low=nan, high=nan, n=3).fmt(100) == "—"  # a rescaled mean whose floor is 100
    assert Estimate(mean=nan, low=nan, high=nan, n=0).fmt() == "—"


def test_bootstrap_edge_cases() -> None:
    assert bootstrap_ci([]).n == 0
    single = bootstrap_ci([0.3])
    assert single.low == single.high == 0.3


def test_paired_difference_matches_scipy_paired_bootstrap() -> None:
    """Cross-check with scipy.stats.bootstrap(paired=True, method='percentile'): same estimate, CIs within MC
    noise."""
    from scipy.stats import bootstrap

    rng = np.random.default_rng(3)
    base = rng.uniform(0.2, 0.9, 40)
    a, b = base + rng.normal(0.03, 0.02, 40), base
    est = paired_difference(a, b, resamples=5000)
    ref = bootstrap(
        (a, b),
        lambda x, y, axis=-1: np.mean(x - y, axis=axis),
        paired=True,
        vectorized=True,
        method="percentile",
        n_resamples=5000,
        random_state=1,
    ).confidence_interval
    assert abs(est.mean - float(np.mean(a - b))) < 1e-12 and est.n == 40
    assert abs(est.low - ref.low) < 0.002 and abs(est.high - ref.high) < 0.002


def test_paired_interval_is_narrower_than_two_independent_ones() -> None:
    """Items differ a lot, the two systems little: pairing removes the item spread (why the report pairs)."""
    rng = np.random.default_rng(0)
    base = rng.uniform(0.0, 1.0, 30)
    a, b = base + 0.02, base
    paired = paired_difference(a, b)
    assert paired.low > 0  # a beats b on every item: the paired CI excludes 0
    ci_a, ci_b = bootstrap_ci(list(a)), bootstrap_ci(list(b))
    assert ci_a.low < ci_b.high  # ... while the two separate CIs overlap


def test_randomization_p_value_equals_exact_enumeration() -> None:
    """n = 6: all 2^6 swaps enumerated by hand; the test enumerates them exactly too."""
    a = np.array([0.9, 0.8, 0.75, 0.6, 0.7, 0.95])
    b = np.array([0.7, 0.85, 0.5, 0.55, 0.4, 0.9])
    d = a - b
    observed = abs(d.mean())
    flips = [np.array(s) for s in itertools.product([1, -1], repeat=6)]
    exact = sum(abs((d * s).mean()) >= observed - 1e-12 for s in flips) / len(flips)
    assert abs(randomization_p_value(a, b) - exact) < 1e-9


@pytest.mark.parametrize(("n", "shift"), [(12, 0.1), (40, 0.0), (40, 0.03), (300, 0.01), (2000, 0.004)])
def test_randomization_p_value_agrees_with_scipy(n: int, shift: float) -> None:
    """scipy's permutation_test (pairs swapped at random, or all 2^n swaps for n = 12) is the independent
    check: the same p-value up to the Monte-Carlo error of 9,999 resamples (sd ≤ 0.005), and the same draws as
    the project's generic paired_randomization."""
    from scipy.stats import permutation_test

    rng = np.random.default_rng(n)
    a = rng.uniform(0, 1, n)
    b = a + shift + rng.normal(0, 0.1, n)
    ours = randomization_p_value(b, a)
    scipy_p = permutation_test(
        (b, a),
        lambda u, v, axis=-1: np.mean(u - v, axis=axis),
        permutation_type="samples",
        n_resamples=9999,
        vectorized=True,
        random_state=0,
    ).pvalue
    assert ours == pytest.approx(scipy_p, abs=1e-9 if n == 12 else 0.025)
    if n > 12:
        generic = paired_randomization(
            [b], [a], lambda x, y: np.mean(x - y, axis=1), resamples=9999, batch=500
        )
        assert ours == pytest.approx(generic, abs=1e-12)


def test_randomization_p_value_noise_and_signal() -> None:
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 1, 50)
    assert randomization_p_value(x, x) == 1.0
    assert randomization_p_value(x + 0.05, x) < 0.001
    noise = randomization_p_value(x + rng.normal(0, 0.1, 50), x + rng.normal(0, 0.1, 50))
    assert noise > 0.05


def test_paired_bootstrap_keeps_nan_columns_paired() -> None:
    """A statistic with NaN-aware floors (nanmean): only rows present in a resample count; n is the item
    count."""
    values = [0.9, 0.8, 0.0]
    floors = [0.6, 0.6, float("nan")]

    def rescaled(v: np.ndarray, f: np.ndarray) -> np.ndarray:
        floor = np.nanmean(f, axis=1)
        return (v.mean(axis=1) - floor) / (1 - floor)

    est = paired_bootstrap([values, floors], rescaled)
    assert abs(est.mean - ((1.7 / 3) - 0.6) / 0.4) < 1e-12 and est.n == 3
    assert est.low <= est.mean <= est.high


def test_resamples_computed_by_rows_equal_all_at_once(monkeypatch) -> None:
    from ruwikibench.evaluators import stats
    from ruwikibench.evaluators.floor import rescaled_estimate
    from ruwikibench.evaluators.stats import bootstrap_ci, paired_difference

    rng = np.random.default_rng(5)
    values, other = rng.random(1_001), rng.random(1_001)
    floors = np.where(rng.random(1_001) < 0.1, np.nan, rng.random(1_001) * 0.5)
    chunked = (bootstrap_ci(values), paired_difference(values, other), rescaled_estimate(values, floors))
    monkeypatch.setattr(stats, "ROWS_AT_ONCE", 10**9)  # every resample gathered at once, as before
    assert (
        bootstrap_ci(values),
        paired_difference(values, other),
        rescaled_estimate(values, floors),
    ) == chunked


def test_index_rows_drawn_in_chunks_are_the_matrix_drawn_at_once(monkeypatch) -> None:
    """The CIs draw their resample indices ROWS_AT_ONCE rows at a time (the whole matrix is never held): the
    same indices as one draw of the whole matrix, for odd and even sizes and chunk sizes that do not divide
    it."""
    from ruwikibench.evaluators import stats

    for n, resamples, chunk in [(1_001, 2_000, 250), (7, 13, 3), (4_141, 501, 250), (2, 5, 1)]:
        monkeypatch.setattr(stats, "ROWS_AT_ONCE", chunk)
        whole = stats.bootstrap_rows(n, resamples, np.random.default_rng(3))
        parts = list(stats.bootstrap_row_chunks(n, resamples, np.random.default_rng(3)))
        assert max(len(p) for p in parts) == min(chunk, resamples)
        assert np.array_equal(np.concatenate(parts), whole)


def test_kept_index_draws_are_the_fresh_ones_and_are_drawn_once(monkeypatch) -> None:
    """Every CI with seed 0 over n items resamples with the same indices: they are drawn once per (n,
    resamples, seed) and kept; the kept ones (stored small, int16 up to uint32) are exactly those of a fresh
    draw."""
    from ruwikibench.evaluators import stats

    monkeypatch.setattr(stats, "_row_memo", stats.OrderedDict())
    draws = []
    fresh_chunks = stats.bootstrap_row_chunks
    monkeypatch.setattr(
        stats,
        "bootstrap_row_chunks",
        lambda n, resamples, rng: draws.append(n) or fresh_chunks(n, resamples, rng),
    )
    for n, resamples, seed in [(1_001, 2_000, 0), (7, 13, 3), (70_000, 3, 0), (2, 5, 1)]:
        fresh = stats.bootstrap_rows(n, resamples, np.random.default_rng(seed))
        first = np.concatenate(list(stats.seeded_row_chunks(n, resamples, seed)))
        kept = np.concatenate(list(stats.seeded_row_chunks(n, resamples, seed)))
        assert np.array_equal(first, fresh) and np.array_equal(kept, fresh) and kept.dtype == fresh.dtype
    assert draws == [1_001, 7, 70_000, 2]
    values = np.random.default_rng(9).random(1_001)
    before = list(draws)
    warm = (stats.bootstrap_ci(values), stats.paired_difference(values, values[::-1]))
    assert draws == before  # n = 1,001, resamples 2,000, seed 0: kept
    monkeypatch.setattr(stats, "_row_memo", stats.OrderedDict())
    assert (stats.bootstrap_ci(values), stats.paired_difference(values, values[::-1])) == warm


def test_the_kept_draws_stay_within_their_budget(monkeypatch) -> None:
    from ruwikibench.evaluators import stats

    monkeypatch.setattr(stats, "_row_memo", stats.OrderedDict())
    monkeypatch.setattr(stats, "ROW_MEMO_BYTES", 2_000 * (301 + 302) * 2)  # the draws of 301 and 302 (uint16)
    for n in (300, 301, 302):
        list(stats.seeded_row_chunks(n, 2_000, 0))
    assert [key[0] for key in stats._row_memo] == [301, 302]  # the least recently used one left
    list(stats.seeded_row_chunks(301, 2_000, 0))
    list(stats.seeded_row_chunks(100_000, 2_000, 0))  # larger than the whole budget: not kept
    assert [key[0] for key in stats._row_memo] == [302, 301]


def test_exact_p_by_hand() -> None:
    """d = (0.3, −0.1, 0.2, 0.4), Σd = 0.8. Of the 16 sign flips only four reach |Σ| ≥ 0.8: none (0.8), the
    −0.1 flipped (1.0), and their mirrors: p = 4 / 16 = 0.25, for the mean difference and for any statistic
    of the paired columns."""
    b = np.array([0.5, 0.5, 0.5, 0.5])
    a = b + np.array([0.3, -0.1, 0.2, 0.4])
    assert randomization_p_value(a, b) == pytest.approx(0.25, abs=1e-12)
    assert paired_randomization([a], [b], lambda x, y: np.mean(x - y, axis=1)) == pytest.approx(
        0.25, abs=1e-12
    )


def test_two_items_any_statistic_is_exact() -> None:
    """2 items: the four swap patterns, p ∈ {0.5, 1.0} — Monte-Carlo draws gave 0.4911."""
    mean_difference = lambda x, y: np.mean(x - y, axis=1)
    assert paired_randomization([[0.9, 0.8]], [[0.3, 0.5]], mean_difference) == 0.5  # d = (0.6, 0.3)
    assert paired_randomization([[0.9, 0.1]], [[0.3, 0.8]], mean_difference) == 1.0  # d = (0.6, −0.7)


def test_up_to_16_items_every_flip_is_enumerated() -> None:
    """14 items (16,384 flips, more than the 9,999 draws): the exact share, counted one flip at a time."""
    rng = np.random.default_rng(14)
    a, b = rng.uniform(0, 1, 14), rng.uniform(0, 1, 14)
    d = a - b
    observed = abs(d.sum())
    exact = (
        sum(abs(d @ np.array(s)) >= observed - 1e-12 for s in itertools.product([1, -1], repeat=14)) / 2**14
    )
    assert randomization_p_value(a, b) == pytest.approx(exact, abs=1e-12)
    generic = paired_randomization([a], [b], lambda x, y: np.mean(x - y, axis=1))
    assert generic == pytest.approx(exact, abs=1e-12)


def test_the_smallest_p_of_n_items() -> None:
    from ruwikibench.evaluators.stats import items_needed, smallest_p

    assert [smallest_p(n) for n in (1, 2, 3, 5, 6)] == [1.0, 0.5, 0.25, 0.0625, 0.03125]
    assert smallest_p(40) == pytest.approx(1 / 10_000)  # Monte-Carlo: (1 + 0) / (1 + 9,999)
    assert math.isnan(smallest_p(0))
    assert items_needed(0.05) == 6 and items_needed(0.01) == 8
    for n in (2, 3, 5):  # reached: every difference the same sign and size
        assert randomization_p_value(np.ones(n), np.zeros(n)) == smallest_p(n)
