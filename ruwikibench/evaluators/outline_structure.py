"""Structure F1 of an outline: headings matched by embedding AND placed as in the reference (order, depth).

The heading P/R/F1 of :mod:`ruwikibench.evaluators.outline` compare two *sets* of headings: the reference's
headings shuffled and flattened to one level score exactly as the reference does. Structure F1 sees the tree:

1. **Matched pairs**: a generated heading g and a reference heading r are matched when each is the other's
   most similar heading by embedding cosine (mutual best match — the intersection of the best matches that
   heading precision and recall already take; one-to-one, no threshold, so it works on any embedder's scale).
2. **Depth**: a heading's level minus the smallest level of its outline (so a ``#`` list and a ``##`` list are
   both depth 0, and the title's level does not matter). A matched pair is *placed* when both depths agree.
3. **In order**: k is the largest number of placed pairs that appear in the same order in both outlines (the
   longest increasing subsequence of their reference positions read in generated order) — equivalently, the
   longest common subsequence of the two outlines read as (heading, depth) sequences, two headings being equal
   when they are a placed pair. A pre-order sequence with depths determines a tree, so k reaches |G| = |R|
   exactly when the two trees are the same up to the wording of their headings.
4. **Structure F1** = 2k / (|G| + |R|): precision k / |G| and recall k / |R|, so a heading with no match
   (junk, a duplicate, a missing section) counts against it on its side. An empty side gives 0.

Chance level is not 0 (mutual best matches exist between unrelated outlines, and a few of them line up by
chance): the metric has a permutation floor like the other embedding metrics.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:  # numpy is imported where it is used
    import numpy as np


class StructureScore(BaseModel):
    """Structure F1 of one outline against one reference outline, with its counts."""

    generated: int
    reference: int
    matched: int
    placed: int
    in_order: int

    @property
    def precision(self) -> float:
        return self.in_order / self.generated if self.generated else 0.0

    @property
    def recall(self) -> float:
        return self.in_order / self.reference if self.reference else 0.0

    @property
    def f1(self) -> float:
        total = self.generated + self.reference
        return 2 * self.in_order / total if total and self.generated and self.reference else 0.0

    def info(self) -> dict[str, int]:
        """The counts, for a record's ``info``."""
        return {
            "generated": self.generated,
            "reference": self.reference,
            "matched": self.matched,
            "placed": self.placed,
            "in_order": self.in_order,
        }


def depths(levels: Sequence[int]) -> list[int]:
    """Each level minus the smallest level of the outline (0 = the outline's top level)."""
    top = min(levels, default=0)
    return [level - top for level in levels]


def mutual_best_pairs(sims: np.ndarray) -> list[tuple[int, int]]:
    """(generated row, reference column) of every pair that is each other's best match in the cosine matrix
    ``sims`` (rows: generated, columns: reference; ties go to the first), in generated order."""
    import numpy as np

    if sims.size == 0:
        return []
    best_reference = np.argmax(sims, axis=1)
    best_generated = np.argmax(sims, axis=0)
    return [(i, int(j)) for i, j in enumerate(best_reference) if int(best_generated[j]) == i]


def longest_increasing(values: Sequence[int]) -> int:
    """Length of the longest strictly increasing subsequence (patience sorting, O(n log n))."""
    tails: list[int] = []
    for value in values:
        at = bisect_left(tails, value)
        if at == len(tails):
            tails.append(value)
        else:
            tails[at] = value
    return len(tails)


def structure_score(
    generated_levels: Sequence[int], reference_levels: Sequence[int], sims: np.ndarray
) -> StructureScore:
    """Structure F1 (see the module) of a generated outline against a reference outline: their headings'
    levels in document order and the cosine matrix of their headings (generated rows × reference
    columns)."""
    if sims.shape != (len(generated_levels), len(reference_levels)):
        raise ValueError(
            f"structure_score: cosines of shape {sims.shape} for {len(generated_levels)} generated and "
            f"{len(reference_levels)} reference headings"
        )
    pairs = mutual_best_pairs(sims)
    gen_depth, ref_depth = depths(generated_levels), depths(reference_levels)
    placed = [(i, j) for i, j in pairs if gen_depth[i] == ref_depth[j]]
    return StructureScore(
        generated=len(generated_levels),
        reference=len(reference_levels),
        matched=len(pairs),
        placed=len(placed),
        in_order=longest_increasing([j for _, j in placed]),
    )
