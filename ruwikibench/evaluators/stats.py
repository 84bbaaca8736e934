"""Aggregation with bootstrap confidence intervals."""

from __future__ import annotations

import math
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:  # numpy is imported where it is used: a run loads this module before its first request
    import numpy as np


class Estimate(BaseModel):
    mean: float
    low: float
    high: float
    n: int

    def fmt(self, scale: float = 1.0, digits: int = 2) -> str:
        """'mean [low, high]'; '—' for no estimate (no item, or a rescaled mean whose floor is 100: NaN)."""
        if self.n == 0 or not math.isfinite(self.mean):
            return "—"
        return (
            f"{self.mean * scale:.{digits}f} [{self.low * scale:.{digits}f}, {self.high * scale:.{digits}f}]"
        )


def bootstrap_rows(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``resamples`` bootstrap resamples of ``n`` items (one row each, drawn with replacement): the
    one resampling every CI of the project uses."""
    return rng.integers(0, n, size=(resamples, n))


ROWS_AT_ONCE = (
    250  # resamples gathered at a time: 2,000 × 4,300 items (the paper's sections) is 69 MB per column
)


def bootstrap_row_chunks(n: int, resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """:func:`bootstrap_rows` drawn :data:`ROWS_AT_ONCE` rows at a time: the same indices (the generator fills
    an array in row order, drawing each value from the stream where the last one left off), but the 2,000 × n
    index matrix (69 MB at the paper's 4,300 sections, for every CI of the finish) is never whole."""
    for start in range(0, resamples, ROWS_AT_ONCE):
        yield rng.integers(0, n, size=(min(ROWS_AT_ONCE, resamples - start), n))


ROW_MEMO_BYTES = 64 << 20  # index chunks kept for reuse: ~4 draws of the paper's 4,140 sections as uint16
_row_memo: OrderedDict[tuple[int, int, int], list[np.ndarray]] = OrderedDict()
_row_memo_lock = threading.Lock()


def seeded_row_chunks(n: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """:func:`bootstrap_row_chunks` of ``default_rng(seed)``, drawn once per (n, resamples, seed) and kept
    (the most recently used first, up to :data:`ROW_MEMO_BYTES`, in the smallest integer type that holds n):
    every CI of a run resamples with seed 0, and its items come in few counts — at 285 articles the finish's
    347 CIs had 8 distinct n, and drawing the indices was 3.2 of its 11 s (110 ms at n = 4,140; gathering with
    a kept draw 38 ms). The indices are the very ones drawn afresh."""
    import numpy as np

    key = (n, resamples, seed)
    with _row_memo_lock:
        kept = _row_memo.get(key)
        if kept is not None:
            _row_memo.move_to_end(key)
    if kept is not None:
        yield from (chunk.astype(np.intp) for chunk in kept)
        return
    small = np.min_scalar_type(max(n - 1, 0))
    drawn: list[np.ndarray] = []
    for chunk in bootstrap_row_chunks(n, resamples, np.random.default_rng(seed)):
        drawn.append(chunk.astype(small))
        yield chunk
    _keep(key, drawn)


def _keep(key: tuple[int, int, int], drawn: list[np.ndarray]) -> None:
    size = sum(chunk.nbytes for chunk in drawn)
    if size > ROW_MEMO_BYTES:
        return
    with _row_memo_lock:
        _row_memo[key] = drawn
        while sum(c.nbytes for chunks in _row_memo.values() for c in chunks) > ROW_MEMO_BYTES:
            _row_memo.popitem(last=False)


def by_rows(
    rows: np.ndarray | Iterable[np.ndarray],
    statistic: Callable[..., np.ndarray],
    columns: Sequence[np.ndarray],
) -> np.ndarray:
    """``statistic(*[column[rows] for column in columns])`` computed :data:`ROWS_AT_ONCE` resamples at a time
    (the statistic is one value per row, so the values are the same): the gathered resamples of every column
    are never all in memory at once (hundreds of MB at the paper's size, in the finish of a run). ``rows``:
    the index matrix, or its rows in chunks (:func:`bootstrap_row_chunks`)."""
    import numpy as np

    chunks = (
        (rows[start : start + ROWS_AT_ONCE] for start in range(0, len(rows), ROWS_AT_ONCE))
        if isinstance(rows, np.ndarray)
        else rows
    )
    parts = [statistic(*[column[chunk] for column in columns]) for chunk in chunks]
    return np.concatenate([np.asarray(part) for part in parts]) if parts else np.zeros(0)


def _row_means(data: np.ndarray) -> np.ndarray:
    return data.mean(axis=1)


def resampled_means(data: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """The mean of each bootstrap resample of ``data`` (the indices of :func:`seeded_row_chunks`)."""
    return by_rows(seeded_row_chunks(data.size, resamples, seed), _row_means, [data])


def bootstrap_ci(
    values: Sequence[float], *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> Estimate:
    """Mean (the plain sample mean, not the bootstrap median) with a percentile bootstrap CI."""
    import numpy as np

    data = np.asarray([v for v in values if v is not None], dtype=float)
    if data.size == 0:
        return Estimate(mean=float("nan"), low=float("nan"), high=float("nan"), n=0)
    if data.size == 1:
        value = float(data[0])
        return Estimate(mean=value, low=value, high=value, n=1)
    means = resampled_means(data, resamples, seed)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Estimate(mean=float(data.mean()), low=float(low), high=float(high), n=int(data.size))


def _percentile_estimate(point: float, boot: np.ndarray, n: int, confidence: float) -> Estimate:
    import numpy as np

    boot = boot[np.isfinite(boot)]
    if boot.size == 0 or not np.isfinite(point):
        return Estimate(mean=point, low=float("nan"), high=float("nan"), n=n)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha])
    return Estimate(mean=point, low=float(low), high=float(high), n=n)


def paired_bootstrap(
    columns: Sequence[Sequence[float] | np.ndarray],
    statistic: Callable[..., np.ndarray],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Estimate:
    """A statistic of paired columns (one value per item in each; NaN where an item has none) with a
    percentile bootstrap CI that resamples ITEMS: one index row picks the same items from every column, so the
    values of one item stay together. ``statistic(*arrays)`` takes 2-D arrays (one resample per row) and
    returns one value per row; its value on the data itself is the estimate. ``n`` is the number of items."""
    import numpy as np

    data = [np.asarray(column, dtype=float) for column in columns]
    n = int(data[0].size)
    if n == 0 or any(d.size != n for d in data):
        if any(d.size != n for d in data):
            raise ValueError(f"paired columns differ in length: {[d.size for d in data]}")
        return Estimate(mean=float("nan"), low=float("nan"), high=float("nan"), n=0)
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", RuntimeWarning
        )  # a resample with no value in a NaN column: NaN, dropped
        point = float(statistic(*[d[None, :] for d in data])[0])
        if n == 1:
            return Estimate(mean=point, low=point, high=point, n=1)
        boot = by_rows(seeded_row_chunks(n, resamples, seed), statistic, data)
    return _percentile_estimate(point, np.asarray(boot, dtype=float), n, confidence)


def _mean_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a - b).mean(axis=1)


def paired_difference(
    a: Sequence[float], b: Sequence[float], *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> Estimate:
    """Mean of a − b over items scored by both (a[i] and b[i] belong to the same item), with a paired
    percentile bootstrap CI (items resampled, each keeping its pair)."""
    return paired_bootstrap([a, b], _mean_difference, confidence=confidence, resamples=resamples, seed=seed)


EXACT_MAX_ITEMS = 16
"""Up to this many items every one of the 2^n sign flips (swap patterns) is enumerated (65,536 at 16): the
exact randomization p-value; above, Monte-Carlo draws."""


EXACT_ROWS_AT_ONCE = 4096  # swap patterns evaluated at a time (16 items: 16 batches)


def smallest_p(n: int, resamples: int = 9999) -> float:
    """The smallest two-sided randomization p-value ``n`` paired items allow: 2 / 2^n when the flips are
    enumerated (only the observed pattern and its mirror can be as extreme), 1 / (1 + resamples) from
    Monte-Carlo draws; NaN with no item. 3 items: 0.25 — no difference over 3 items can be significant."""
    if n <= 0:
        return float("nan")
    if n <= EXACT_MAX_ITEMS:
        return 2.0 ** (1 - n)
    return max(2.0 ** (1 - n), 1 / (1 + resamples))


def items_needed(alpha: float, resamples: int = 9999) -> int:
    """The fewest paired items whose :func:`smallest_p` is below ``alpha`` (6 for 0.05: 2 / 2^6 = 0.031,
    while 5 items give 0.0625 at best)."""
    n = 1
    while not smallest_p(n, resamples) < alpha:
        n += 1
        if n > EXACT_MAX_ITEMS and 1 / (1 + resamples) >= alpha:
            raise ValueError(f"no number of items reaches p < {alpha} with {resamples} resamples")
    return n


def randomization_p_value(
    a: Sequence[float], b: Sequence[float], *, resamples: int = 9999, seed: int = 0, batch: int = 500
) -> float:
    """Two-sided p-value of the mean paired difference a − b by approximate randomization (Noreen 1989; Koehn
    2004 for MT metrics): under the null hypothesis the two values of an item are exchangeable, so each item's
    pair is swapped at random — its difference d flips sign. All 2^n sign flips are enumerated exactly up to
    :data:`EXACT_MAX_ITEMS` items (p = the share of flips whose |mean| reaches the observed one: 0.5 or 1.0
    for 2 items); otherwise ``resamples`` random ones, ``batch`` at a time: p = (1 + #{|t*| ≥ |t|}) / (1 +
    resamples), the draws of :func:`paired_randomization` with the mean difference. scipy's
    ``permutation_test`` is the independent check in the tests; it spent ~2 s per comparison at the paper's
    size (random permutations sorted per resample), this ~0.2 s. NaN with no item."""
    import numpy as np

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size != y.size:
        raise ValueError(f"paired values differ in length: {x.size} vs {y.size}")
    if x.size == 0:
        return float("nan")
    if x.size == 1 or np.allclose(x, y):  # one item: its two swaps give ±d, both as extreme as d
        return 1.0
    if x.size <= EXACT_MAX_ITEMS:
        return _exact_sign_flip_p_value(x - y)
    return _random_sign_flip_p_value(x - y, resamples, seed, batch)


def _random_sign_flip_p_value(d: np.ndarray, resamples: int, seed: int, batch: int) -> float:
    """:func:`paired_randomization` of the mean difference, on the differences alone: the same draws (an item
    is swapped when its uniform is below 0.5), each resample's mean as (Σd − 2·Σ swapped d) / n."""
    import numpy as np

    rng = np.random.default_rng(seed)
    observed, total, extreme = abs(float(d.mean())), float(d.sum()), 0
    for start in range(0, resamples, batch):
        swapped = (rng.random((min(batch, resamples - start), d.size)) < 0.5) @ d
        extreme += int(np.sum(np.abs(total - 2.0 * swapped) / d.size >= observed * (1 - 1e-12)))
    return (1 + extreme) / (1 + resamples)


def swap_patterns(n: int, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Rows ``start`` to ``stop`` of the 2^n swap patterns of ``n`` items (row k swaps item i when bit i of k
    is set; row 0 swaps nothing, the last row every item)."""
    import numpy as np

    rows = np.arange(start, 2**n if stop is None else stop)
    return ((rows[:, None] >> np.arange(n)) & 1).astype(bool)


def _exact_sign_flip_p_value(d: np.ndarray) -> float:
    """The share of the 2^n sign flips of ``d`` whose mean is at least as far from 0 as ``d``'s own."""
    import numpy as np

    n = d.size
    flips = np.where(swap_patterns(n), -1.0, 1.0)
    null = np.abs(flips @ d) / n
    return float(np.mean(null >= abs(float(d.mean())) - 1e-12))


def paired_randomization(
    a_columns: Sequence[Sequence[float]],
    b_columns: Sequence[Sequence[float]],
    statistic: Callable[..., np.ndarray],
    *,
    resamples: int = 9999,
    seed: int = 0,
    batch: int = 250,
) -> float:
    """Two-sided randomization p-value of ``statistic(*a_columns, *b_columns)`` (2-D arrays, one resample per
    row, one value per row) for a statistic of two runs that is not a plain mean difference (e.g. a difference
    of rescaled means): under the null hypothesis the runs are exchangeable item by item, so each item's A
    columns and B columns are swapped together. Up to :data:`EXACT_MAX_ITEMS` items every one of the 2^n swap
    patterns is tried and p is the share of them with |t*| ≥ |t| (exact: 0.5 or 1.0 for 2 items); above,
    ``resamples`` random patterns, p = (1 + #{|t*| ≥ |t|}) / (1 + resamples) (as :func:`randomization_p_value`
    for a mean difference). NaN with no item."""
    import numpy as np

    a = np.asarray(a_columns, dtype=float)
    b = np.asarray(b_columns, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired columns differ in shape: {a.shape} vs {b.shape}")
    n = a.shape[-1]
    if n == 0:
        return float("nan")
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        observed = abs(float(statistic(*a[:, None, :], *b[:, None, :])[0]))
        if not np.isfinite(observed):
            return float("nan")

        def extreme(swap: np.ndarray) -> int:
            t = statistic(
                *np.where(swap, b[:, None, :], a[:, None, :]), *np.where(swap, a[:, None, :], b[:, None, :])
            )
            return int(np.sum(np.abs(t) >= observed * (1 - 1e-12)))

        if n <= EXACT_MAX_ITEMS:
            total, rows = 2**n, EXACT_ROWS_AT_ONCE
            found = sum(extreme(swap_patterns(n, s, min(s + rows, total))) for s in range(0, total, rows))
            return found / total
        rng = np.random.default_rng(seed)
        found = sum(
            extreme(rng.random((min(batch, resamples - s), n)) < 0.5) for s in range(0, resamples, batch)
        )
    return (1 + found) / (1 + resamples)
