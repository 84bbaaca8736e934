"""Aggregation with bootstrap confidence intervals."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel


class Estimate(BaseModel):
    mean: float
    low: float
    high: float
    n: int

    def fmt(self, scale: float = 1.0, digits: int = 2) -> str:
        if self.n == 0:
            return "—"
        return f"{self.mean * scale:.{digits}f} [{self.low * scale:.{digits}f}, {self.high * scale:.{digits}f}]"


def bootstrap_rows(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``resamples`` bootstrap resamples of ``n`` items (one row each, drawn with replacement): the one
    resampling every CI of the project uses."""
    return rng.integers(0, n, size=(resamples, n))


def resampled_means(data: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The mean of each bootstrap resample of ``data``."""
    return data[bootstrap_rows(data.size, resamples, rng)].mean(axis=1)


def bootstrap_ci(
    values: Sequence[float], *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> Estimate:
    """Mean (the plain sample mean, not the bootstrap median) with a percentile bootstrap CI."""
    data = np.asarray([v for v in values if v is not None], dtype=float)
    if data.size == 0:
        return Estimate(mean=float("nan"), low=float("nan"), high=float("nan"), n=0)
    if data.size == 1:
        value = float(data[0])
        return Estimate(mean=value, low=value, high=value, n=1)
    rng = np.random.default_rng(seed)
    means = resampled_means(data, resamples, rng)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Estimate(mean=float(data.mean()), low=float(low), high=float(high), n=int(data.size))
