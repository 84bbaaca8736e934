"""Structure F1 of an outline: hand-computed cases, an independent implementation (LCS by dynamic programming
over the two outlines), and controlled vectors through the outline scorer."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ruwikibench.dataset import Article, Section
from ruwikibench.evaluators.outline import outline_similarity, score_outline
from ruwikibench.evaluators.outline_structure import (
    depths,
    longest_increasing,
    mutual_best_pairs,
    structure_score,
)
from tests.evaluators.test_outline import TableEmbedder

# The reference: A (h2) with C (h3) below it, then B (h2) with D (h3) below it.
LETTERS = "ABCDXT"  # X: junk; T: the title (scored by the authors' variant only)
TABLE = {c: [float(i == j) for j in range(len(LETTERS))] for i, c in enumerate(LETTERS)}  # one-hot
REFERENCE = [(2, "A"), (3, "C"), (2, "B"), (3, "D")]


def _article() -> Article:
    c = Section(id="s2", level=3, title="C")
    d = Section(id="s4", level=3, title="D")
    a = Section(id="s1", level=2, title="A", children=[c])
    b = Section(id="s3", level=2, title="B", children=[d])
    return Article(title="T", name="T", root=Section(id="s0", level=1, title="T", children=[a, b]))


def _structure(generated: list[tuple[int, str]]) -> dict[str, float]:
    metrics = score_outline(_article(), generated, TableEmbedder(TABLE)).metrics
    return {"structure": metrics["structure_f1"], "f1": metrics["f1"], "recall": metrics["recall"]}


def test_hand_computed_outlines() -> None:
    """k = matched pairs at the same depth in the same order; F1 = 2k / (|G| + |R|)."""
    reference = _structure(REFERENCE)
    assert reference["structure"] == pytest.approx(1.0)
    # the title echo is dropped and levels are relative: '# T', '## A', '### C', ... is the reference itself
    assert _structure([(1, "T"), (2, "A"), (3, "C"), (2, "B"), (3, "D")])["structure"] == pytest.approx(1.0)
    # shuffled, levels kept: reference positions 2, 3, 0, 1 -> longest increasing run 2 -> 2·2 / 8
    shuffled = [(2, "B"), (3, "D"), (2, "A"), (3, "C")]
    assert _structure(shuffled)["structure"] == pytest.approx(0.5)
    # shuffled and flattened: only A and B keep their depth (0), in the wrong order -> k = 1 -> 2 / 8
    assert _structure([(2, t) for _, t in shuffled])["structure"] == pytest.approx(0.25)
    # flattened in order: A and B placed, in order -> k = 2 -> 0.5
    assert _structure([(2, t) for _, t in REFERENCE])["structure"] == pytest.approx(0.5)
    # C nested under B instead of A: C comes after B -> A, B, D in order (or A, C, D) -> k = 3 -> 6 / 8
    assert _structure([(2, "A"), (2, "B"), (3, "C"), (3, "D")])["structure"] == pytest.approx(0.75)
    # junk appended: nothing is lost from the matches, but |G| grows -> 2·4 / (5 + 4)
    assert _structure([*REFERENCE, (2, "X")])["structure"] == pytest.approx(8 / 9)
    # the set-based metrics see none of it: every rearrangement of the same headings scores like the reference
    for outline in (shuffled, [(2, t) for _, t in shuffled], [*REFERENCE, (2, "X")]):
        assert _structure(outline)["recall"] == pytest.approx(1.0)
    assert _structure([(2, t) for _, t in shuffled])["f1"] == pytest.approx(reference["f1"])
    assert _structure([])["structure"] == 0.0


def test_levels_are_optional_and_flat_by_default() -> None:
    article, embedder = _article(), TableEmbedder(TABLE)
    titles = [t for _, t in REFERENCE]
    flat = outline_similarity(titles, "T", article, embedder)
    leveled = outline_similarity(titles, "T", article, embedder, levels=[lv for lv, _ in REFERENCE])
    assert flat.metrics["structure_f1"] == pytest.approx(0.5)  # as flattened in order
    assert leveled.metrics["structure_f1"] == pytest.approx(1.0)
    assert leveled.structure == {"generated": 4, "reference": 4, "matched": 4, "placed": 4, "in_order": 4}
    with pytest.raises(ValueError):
        outline_similarity(titles, "T", article, embedder, levels=[2])


def test_mutual_best_pairs_leave_out_a_hub() -> None:
    # g0 and g1 both prefer r0; r0 prefers g1: only (1, 0) is mutual, g0 and r1 stay unmatched
    sims = np.array([[0.9, 0.8], [0.95, 0.1]])
    assert mutual_best_pairs(sims) == [(1, 0)]
    assert mutual_best_pairs(np.zeros((0, 3))) == []
    assert depths([3, 2, 4]) == [1, 0, 2] and depths([]) == []


def test_longest_increasing_against_brute_force() -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        values = [int(v) for v in rng.permutation(8)[: int(rng.integers(0, 9))]]
        brute = max(
            (
                len(sub)
                for r in range(len(values) + 1)
                for sub in itertools.combinations(values, r)
                if all(a < b for a, b in itertools.pairwise(sub))
            ),
            default=0,
        )
        assert longest_increasing(values) == brute, values


def _loop_structure_f1(sims: np.ndarray, gen_levels: list[int], ref_levels: list[int]) -> float:
    """An independent implementation: mutual best matches by loops, then the longest common subsequence of
    the two outlines by dynamic programming, two headings equal when matched and at the same depth."""
    n, m = sims.shape
    if not n or not m:
        return 0.0
    best_ref = [max(range(m), key=lambda j, i=i: (sims[i, j], -j)) for i in range(n)]
    best_gen = [max(range(n), key=lambda i, j=j: (sims[i, j], -i)) for j in range(m)]
    top_g, top_r = min(gen_levels, default=0), min(ref_levels, default=0)
    equal = {
        (i, best_ref[i])
        for i in range(n)
        if best_gen[best_ref[i]] == i and gen_levels[i] - top_g == ref_levels[best_ref[i]] - top_r
    }
    lcs = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            step = lcs[i - 1][j - 1] + 1 if (i - 1, j - 1) in equal else 0
            lcs[i][j] = max(lcs[i - 1][j], lcs[i][j - 1], step)
    return 2 * lcs[n][m] / (n + m)


def test_structure_f1_matches_an_independent_implementation() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        n, m = int(rng.integers(0, 9)), int(rng.integers(0, 9))
        sims = rng.uniform(-1, 1, size=(n, m))
        gen_levels = [int(v) for v in rng.integers(1, 4, size=n)]
        ref_levels = [int(v) for v in rng.integers(2, 5, size=m)]
        got = structure_score(gen_levels, ref_levels, sims)
        assert got.f1 == pytest.approx(_loop_structure_f1(sims, gen_levels, ref_levels)), (sims, gen_levels)
        assert got.in_order <= got.placed <= got.matched <= min(n, m)
    with pytest.raises(ValueError, match="shape"):
        structure_score([2, 2], [2], np.zeros((1, 1)))
