"""Bars with 95% CI whiskers: the one drawing rule of the run report's stage charts and the pairwise
judge's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ruwikibench.evaluators.stats import Estimate


def whiskers(
    estimates: Sequence[Estimate | None], scale: float = 1.0, missing: float = np.nan
) -> tuple[np.ndarray, np.ndarray]:
    """Bar heights and (below, above) whisker lengths, all × ``scale``; a missing or empty estimate is a bar
    of height ``missing`` without whiskers (NaN: matplotlib leaves it out)."""
    means = np.full(len(estimates), missing, dtype=float)
    errors = np.zeros((2, len(estimates)))
    for index, estimate in enumerate(estimates):
        if estimate is None or estimate.n == 0:
            continue
        means[index] = estimate.mean * scale
        errors[:, index] = (
            max(estimate.mean - estimate.low, 0.0) * scale,
            max(estimate.high - estimate.mean, 0.0) * scale,
        )
    return means, errors


def ci_bars(
    ax: Any,
    positions: Sequence[float] | np.ndarray,
    estimates: Sequence[Estimate | None],
    *,
    scale: float = 1.0,
    missing: float = np.nan,
    horizontal: bool = False,
    **style: Any,
) -> Any:
    """Draw one bar per estimate at ``positions`` with its CI as whiskers (``style``: matplotlib bar
    options)."""
    means, errors = whiskers(estimates, scale, missing)
    if horizontal:
        return ax.barh(positions, means, xerr=errors, **style)
    return ax.bar(positions, means, yerr=errors, **style)
