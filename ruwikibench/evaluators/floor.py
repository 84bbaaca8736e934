"""Chance level of the embedding metrics: a permutation floor from the run's own data, and rescaling.

Embedding cosines are compressed towards 1 (e5-family encoders give unrelated texts 0.7–0.8), so a raw
embedding F1 of 0.86 may be no better than junk. The floor measures what the metric gives an output scored
against references it has nothing to do with:

- for every scored item ``i`` (an article's outline, a section), up to ``per_item`` references of OTHER items
  are drawn — items of other articles first, other items of the same article only when no other article is
  there — by bottom-k sampling on a hash of (seed, item key, candidate key): the order in which units
  finished, or the order of the pool, changes nothing;
- the item's floor is the mean metric of its generated output against those references;
- the run's floor ``b`` is the mean of the item floors;
- rescaled = (x − b) / (1 − b), BERTScore's ``rescale_with_baseline``: 0 = chance level, 1 = a perfect match,
  negative = below chance (an empty output or a failure counted as raw 0 lands at −b / (1 − b)); its bootstrap
  CI resamples items with their (score, floor) pairs.

Everything here is pure arithmetic over numbers and keys; the embedding calls live with the stages.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ruwikibench.evaluators.stats import Estimate, paired_bootstrap

if TYPE_CHECKING:  # numpy is imported where it is used: a run loads this module before its first request
    import numpy as np


_MASK = 0xFFFFFFFFFFFFFFFF


def _key_hash(seed: int, article: str, item: str) -> np.uint64:
    import numpy as np

    digest = hashlib.blake2b(f"{seed}\x1e{article}\x1f{item}".encode(), digest_size=8).digest()
    return np.uint64(int.from_bytes(digest, "little"))


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: a 64-bit hash of each value (numpy, wrapping arithmetic)."""
    import numpy as np

    with np.errstate(over="ignore"):
        z = values.astype(np.uint64) & np.uint64(_MASK)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def draw_others(
    items: Sequence[tuple[str, str]], pool: Sequence[tuple[str, str]], per_item: int, seed: int = 0
) -> list[list[int]]:
    """For each (article, item) of ``items``: indices into ``pool`` of up to ``per_item`` references of other
    articles (or, when the pool holds no other article, of other items of the same article), in key order.

    The draw is bottom-k sampling by a hash of (seed, item, other): each candidate's rank depends on the two
    keys alone, so the order of the pool or of ``items`` changes nothing, and an item's references change when
    the pool grows only where a new candidate ranks among its ``per_item`` lowest (consistent sampling). Each
    item costs a few numpy passes over the pool (thousands of items against thousands at the paper's size)."""
    draws = OtherDraws(pool, seed)
    return [sorted(draws.ranked(article, item, per_item), key=draws.key) for article, item in items]


class OtherDraws:
    """The draw of :func:`draw_others` one item at a time, as deep as asked: :meth:`ranked` gives an item's
    ``k`` lowest-ranked candidates, and the ``k`` lowest always begin the ``k + 1`` lowest, so a caller that
    leaves some out (:mod:`ruwikibench.aggregation.floors`: references the output copies) asks for more and
    gets the next ones in rank order."""

    def __init__(self, pool: Sequence[tuple[str, str]], seed: int = 0) -> None:
        import numpy as np

        self.keys = [(str(a), str(i)) for a, i in pool]
        self.seed = seed
        self._hashed = _mix(np.array([_key_hash(seed, *key) for key in self.keys], dtype=np.uint64))
        self._codes: dict[str, int] = {}
        self._articles = np.array(
            [self._codes.setdefault(a, len(self._codes)) for a, _ in self.keys], dtype=np.int64
        )

    def key(self, index: int) -> tuple[str, str]:
        return self.keys[index]

    def candidates(self, article: str, item: str) -> np.ndarray:
        """Indices of the item's candidates in pool order: other articles', else the same article's other
        items."""
        import numpy as np

        others = np.flatnonzero(self._articles != self._codes.get(article, -1))
        if not len(others):
            same = [j for j, key in enumerate(self.keys) if key != (article, item)]
            others = np.array(same, dtype=np.int64)
        return others

    def ranked(self, article: str, item: str, k: int) -> list[int]:
        """The item's ``k`` lowest-ranked candidates in rank order; all of them, in pool order, when there
        are no more than ``k``."""
        others = self.candidates(article, item)
        if len(others) > k:
            own = _key_hash(self.seed, article, item)
            others = others[_lowest(_mix(self._hashed[others] ^ own), k)]
        return [int(j) for j in others]


def _lowest(values: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` lowest values, as ``np.argsort(values, kind="stable")[:k]`` gives them (ties in
    position order), without sorting the whole array."""
    import numpy as np

    if len(values) <= 4 * k:
        return np.argsort(values, kind="stable")[:k]
    kth = np.partition(values, k - 1)[k - 1]
    candidates = np.flatnonzero(values <= kth)
    return candidates[np.argsort(values[candidates], kind="stable")][:k]


def rescale(value: float, floor: float) -> float:
    """(value − floor) / (1 − floor); NaN when the floor is 1 (or more) and nothing is left to rescale."""
    if floor >= 1.0:
        return float("nan")
    return (value - floor) / (1.0 - floor)


def rescaled_means(values: np.ndarray, floors: np.ndarray) -> np.ndarray:
    """Per row (one bootstrap resample each): (mean value − mean floor) / (1 − mean floor), NaN entries left
    out of either mean (an item without a floor still counts in the value mean); NaN when the floor is 1 or
    more."""
    import numpy as np

    floor = np.nanmean(floors, axis=1)
    return np.where(floor < 1.0, (np.nanmean(values, axis=1) - floor) / (1.0 - floor), np.nan)


def rescaled_estimate(
    values: Sequence[float],
    floors: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Estimate:
    """Mean of ``values`` rescaled by the mean of ``floors``: (mean − floor) / (1 − floor), with a percentile
    bootstrap CI that resamples ITEMS, each keeping its (score, floor) pair. ``floors[i]`` is item i's floor,
    NaN where it has none (an empty output or a failure counted as 0: its score counts, it adds nothing to the
    floor). ``n`` is the number of values."""
    import numpy as np

    data = np.asarray(values, dtype=float)
    base = np.asarray(floors, dtype=float)
    nan = float("nan")
    if data.size == 0 or not np.isfinite(base).any():
        return Estimate(mean=nan, low=nan, high=nan, n=0)
    if base.size != data.size:
        raise ValueError(
            f"rescaled_estimate: {data.size} values but {base.size} floors (one per item, NaN if none)"
        )
    return paired_bootstrap(
        [data, base], rescaled_means, confidence=confidence, resamples=resamples, seed=seed
    )


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
