"""Paired comparison of two systems over the items both scored: the mean difference a − b with a paired
bootstrap CI, an approximate-randomization p-value, and a verdict in words.

Items are matched by key ((article, item) or any hashable); an item only one side scored is left out and
counted. For an embedding metric with a permutation floor the difference is taken on the rescaled scale,
(mean − floor) / (1 − floor) of each side, resampling items with all four of their values (score and floor of
each side; NaN where a side has no floor for the item).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TypeVar

import numpy as np
from pydantic import BaseModel

from ruwikibench.evaluators.stats import (
    Estimate,
    paired_bootstrap,
    paired_difference,
    paired_randomization,
    randomization_p_value,
)

ALPHA = 0.05
K = TypeVar("K", bound=Hashable)


class PairedResult(BaseModel):
    difference: Estimate
    p_value: float
    items: int
    only_a: int
    only_b: int
    verdict: str  # "better" | "worse" | "no significant difference" | "no shared item"


def _rescaled_difference(a: np.ndarray, fa: np.ndarray, b: np.ndarray, fb: np.ndarray) -> np.ndarray:
    floor_a, floor_b = np.nanmean(fa, axis=1), np.nanmean(fb, axis=1)
    return (a.mean(axis=1) - floor_a) / (1 - floor_a) - (b.mean(axis=1) - floor_b) / (1 - floor_b)


def verdict(difference: Estimate, p_value: float) -> str:
    """'better' when the CI lies above 0 and p < 0.05, 'worse' when below, else no significant difference."""
    if difference.n == 0:
        return "no shared item"
    if difference.low > 0 and p_value < ALPHA:
        return "better"
    if difference.high < 0 and p_value < ALPHA:
        return "worse"
    return "no significant difference"


def compare_paired(
    a: Mapping[K, float],
    b: Mapping[K, float],
    floors_a: Mapping[K, float] | None = None,
    floors_b: Mapping[K, float] | None = None,
    *,
    seed: int = 0,
) -> PairedResult:
    """a − b over the keys both hold (sorted, so the result never depends on insertion order). With floors, the
    difference of the rescaled means, its p-value swapping each item's (score, floor) between the sides."""
    shared = sorted(set(a) & set(b), key=str)
    x = [float(a[k]) for k in shared]
    y = [float(b[k]) for k in shared]
    if floors_a is not None and floors_b is not None:
        nan = float("nan")
        fa = [float(floors_a.get(k, nan)) for k in shared]
        fb = [float(floors_b.get(k, nan)) for k in shared]
        difference = paired_bootstrap([x, fa, y, fb], _rescaled_difference, seed=seed)
        p = paired_randomization([x, fa], [y, fb], _rescaled_difference, seed=seed) if shared else float("nan")
    else:
        difference = paired_difference(x, y, seed=seed)
        p = randomization_p_value(x, y, seed=seed) if shared else float("nan")
    return PairedResult(difference=difference, p_value=p, items=len(shared), only_a=len(set(a) - set(b)),
                        only_b=len(set(b) - set(a)), verdict=verdict(difference, p))
