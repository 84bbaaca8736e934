"""Chance level of the embedding metrics: a permutation floor from the run's own data, and rescaling.

Embedding cosines are compressed towards 1 (e5-family encoders give unrelated texts 0.7–0.8), so a raw
embedding F1 of 0.86 may be no better than junk. The floor measures what the metric gives an output scored
against references it has nothing to do with:

- for every scored item ``i`` (an article's outline, a section), up to ``per_item`` references of OTHER items
  are drawn — items of other articles first, other items of the same article only when no other article is
  there — with a generator seeded by ``seed`` and the item's key (adding items changes no other item's draw);
- the item's floor is the mean metric of its generated output against those references;
- the run's floor ``b`` is the mean of the item floors;
- rescaled = (x − b) / (1 − b), BERTScore's ``rescale_with_baseline``: 0 = chance level, 1 = a perfect match,
  negative = below chance (an empty output or a failure counted as raw 0 lands at −b / (1 − b)).

Everything here is pure arithmetic over numbers and keys; the embedding calls live with the stages.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ruwikibench.evaluators.stats import Estimate, resampled_means

FLOOR_SUFFIX = "_floor"
RESCALED_SUFFIX = "_rescaled"


def _item_seed(seed: int, key: str) -> list[int]:
    return [seed, int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:12], 16)]


def draw_others(
    items: Sequence[tuple[str, str]], pool: Sequence[tuple[str, str]], per_item: int, seed: int = 0
) -> list[list[int]]:
    """For each (article, item) of ``items``: indices into ``pool`` of up to ``per_item`` references of other
    articles (or, when the pool holds no other article, of other items of the same article), drawn without
    replacement, deterministic for a given seed."""
    draws: list[list[int]] = []
    for article, item in items:
        others = [j for j, (a, _) in enumerate(pool) if a != article]
        if not others:
            others = [j for j, key in enumerate(pool) if key != (article, item)]
        if len(others) > per_item:
            rng = np.random.default_rng(_item_seed(seed, f"{article}\x1f{item}"))
            others = sorted(int(j) for j in rng.choice(others, size=per_item, replace=False))
        draws.append(others)
    return draws


def rescale(value: float, floor: float) -> float:
    """(value − floor) / (1 − floor); NaN when the floor is 1 (or more) and nothing is left to rescale."""
    if floor >= 1.0:
        return float("nan")
    return (value - floor) / (1.0 - floor)


def rescaled_estimate(
    values: Sequence[float],
    floors: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Estimate:
    """Mean of ``values`` rescaled by the mean of ``floors``, with a percentile bootstrap CI that resamples both
    (independently: the floor's own uncertainty widens the interval). ``n`` is the number of values."""
    data = np.asarray(values, dtype=float)
    base = np.asarray(floors, dtype=float)
    nan = float("nan")
    if data.size == 0 or base.size == 0:
        return Estimate(mean=nan, low=nan, high=nan, n=0)
    mean = rescale(float(data.mean()), float(base.mean()))
    rng = np.random.default_rng(seed)
    raw = resampled_means(data, resamples, rng)
    floor = resampled_means(base, resamples, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        boot = np.where(floor < 1.0, (raw - floor) / (1.0 - floor), np.nan)
    boot = boot[np.isfinite(boot)]
    if boot.size == 0 or not np.isfinite(mean):
        return Estimate(mean=mean, low=nan, high=nan, n=int(data.size))
    alpha = (1 - confidence) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha])
    return Estimate(mean=mean, low=float(low), high=float(high), n=int(data.size))


@dataclass(frozen=True)
class FloorSide:
    """One scored item as the floor sees it: what was generated, and what it was scored against.

    ``generated`` and ``reference`` are whatever the stage's ``cross_score(generated, reference, context)``
    takes (a section text; an outline's title and headings; an article name); ``generated`` is None in a
    reference pool."""

    article: str
    item: str
    generated: Any
    reference: Any
