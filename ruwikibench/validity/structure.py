"""The structure rung of the validity ladder: does a metric see the ORDER and the HIERARCHY of an outline?

Per article (the first ``articles`` with at least :data:`MIN_UNITS` scored reference headings and more than
one level), three outputs made of the same restated headings (:data:`STRUCTURE_RUNGS`):

- ``in order``: every scored reference heading restated, at its reference level, in the reference order;
- ``shuffled``: the same headings with their levels, in a random order (drawn from a hash of the article's
  name; never the reference order);
- ``shuffled and flattened``: the shuffled headings, all at one level.

The three rungs hold the same set of headings, so a set-based metric (heading P/R/F1, soft recall) gives them
the same score by construction: it cannot pass. A structure metric (a floored metric of kind ``structure``,
:func:`~ruwikibench.stage.metric.structure_keys`) PASSES when in order > shuffled > shuffled and flattened,
each adjacent pair separated: the paired difference over articles of the scores rescaled by the floor
(measured as in a run: the reference outline against other articles' outlines) has its 95 % CI above 0.

A heading is restated as its words in dictionary form, lowercased («Ранние годы» → «ранний год»; pymorphy3,
other words lowercased), never equal to a reference heading. Verbatim headings would let an embedder of random
vectors pass: identical strings get identical vectors, so every heading would find itself, and the rung would
be true by construction. A restated heading is another string, matched to its heading only by an embedder
that sees they mean the same. The decisive chain's proxies (a section's opening words) are not used: with
e5-int8 only 19 of the sample's 107 proxied headings have their own heading as mutual best match (restated
headings: 95 of 96), so the rung would test the matching rather than the structure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import lru_cache
from itertools import pairwise
from typing import Any

from pydantic import BaseModel

from ruwikibench.aggregation.floors import PER_ITEM, SEED
from ruwikibench.conf.builtin_options import OutlineConfig
from ruwikibench.dataset import Article, Dataset
from ruwikibench.evaluators.floor import draw_others, rescale, rescaled_estimate
from ruwikibench.evaluators.outline import FLAT_LEVEL, HeadingSelection, reference_outline
from ruwikibench.evaluators.stats import Estimate, bootstrap_ci, paired_difference
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Stage
from ruwikibench.stage.metric import headline, structure_keys
from ruwikibench.stage.registry import get_stage
from ruwikibench.validity.check import MIN_ITEMS, Step, steps_verdict, undecided_name
from ruwikibench.validity.ladder import MIN_UNITS, PlantedItem, item_rng

STRUCTURE_RUNGS = ("in order", "shuffled", "shuffled and flattened")
"""Best first; every adjacent pair decides."""


@lru_cache(maxsize=1)
def _morph() -> Any:  # pymorphy3.MorphAnalyzer
    import pymorphy3

    return pymorphy3.MorphAnalyzer()


def restated_heading(title: str) -> str:
    """The heading's words in dictionary form, lowercased, ё as е: «Ранние годы» → «ранний год»."""
    words = re.findall(r"\w+", title.casefold().replace("ё", "е"))
    morph = _morph()
    return " ".join(
        morph.parse(w)[0].normal_form.replace("ё", "е") if re.search("[а-я]", w) else w for w in words
    )


def restated_outline(article: Article, selection: HeadingSelection) -> list[tuple[int, str]]:
    """(level, restated title) of every scored reference heading whose restatement is a new string (equal to
    no heading of the article, no earlier restatement), in document order."""
    titles = {s.title for s in article.sections()}
    found: list[tuple[int, str]] = []
    for level, title in reference_outline(article, selection):
        restated = restated_heading(title)
        if restated and restated not in titles and restated not in {t for _, t in found}:
            found.append((level, restated))
    return found


def _shuffled_order(size: int, *keys: str) -> list[int]:
    """A permutation of ``range(size)`` drawn from a hash of ``keys``, never the identity (size ≥ 2)."""
    rng = item_rng(*keys)
    order = list(range(size))
    while size > 1 and order == sorted(order):
        rng.shuffle(order)
    return order


def structure_item(article: Article, restated: list[tuple[int, str]]) -> PlantedItem:
    """The three rungs of one article, and its reference outline verbatim (``reference``, for the floor).
    Each output is ``(article title, titles, levels)``, as the outline stage's ``cross_score`` takes it."""
    order = _shuffled_order(len(restated), article.name, "structure")
    shuffled = [restated[i] for i in order]
    verbatim = reference_outline(article)
    rungs = {
        "reference": verbatim,
        "in order": restated,
        "shuffled": shuffled,
        "shuffled and flattened": [(FLAT_LEVEL, t) for _, t in shuffled],
    }
    outputs = {
        rung: (article.title, [t for _, t in heads], [lv for lv, _ in heads]) for rung, heads in rungs.items()
    }
    return PlantedItem(article=article.name, item="article", reference=article.name, outputs=outputs)


def structure_items(dataset: Dataset, articles: int, selection: HeadingSelection) -> list[PlantedItem]:
    """The structure rung of the first ``articles`` articles with :data:`MIN_UNITS`+ restated headings on more
    than one level (flattening an outline of one level changes nothing)."""
    items = []
    for article in dataset.articles:
        restated = restated_outline(article, selection)
        if len(restated) >= MIN_UNITS and len({level for level, _ in restated}) > 1:
            items.append(structure_item(article, restated))
        if len(items) == articles:
            break
    if len(items) < 2:
        raise ValueError(
            f"check-metrics (outline structure): the dataset needs two articles with {MIN_UNITS}+ headings "
            "on more than one level"
        )
    return items


class StructureCheck(BaseModel):
    """One metric on the structure rung; ``required``: a structure metric (its verdict counts), else a
    set-based metric shown for contrast."""

    stage: str
    metric: str
    required: bool
    floor: Estimate
    rescaled: dict[str, Estimate]
    steps: list[Step]
    items: int

    @property
    def decidable(self) -> bool:
        """Enough articles for a step to be told from chance (``MIN_ITEMS``)."""
        return self.items >= MIN_ITEMS

    @property
    def passed(self) -> bool:
        means = [self.rescaled[r].mean for r in STRUCTURE_RUNGS]
        return all(a > b for a, b in pairwise(means)) and all(s.separated for s in self.steps)

    def reason(self, scale: float = 100.0) -> str:
        """PASS, FAIL with the first step that does not separate its rungs, or 'cannot decide' with too few
        articles."""
        return steps_verdict(self.steps, self.items, scale)


def _item_floors(
    stage: Stage[Any], items: list[PlantedItem], context: StageContext, keys: Sequence[str]
) -> list[dict[str, float]]:
    """Per item and key: its verbatim reference outline against up to :data:`PER_ITEM` other items' reference
    outlines, averaged (as a run's floor, :mod:`ruwikibench.aggregation.floors`); NaN without another item."""
    keyed = [(i.article, i.item) for i in items]
    draws = draw_others(keyed, keyed, PER_ITEM, SEED)
    floors = []
    for item, drawn in zip(items, draws, strict=True):
        cross = [stage.cross_score(item.outputs["reference"], items[j].reference, context) for j in drawn]
        floors.append({k: sum(c[k] for c in cross) / len(cross) if cross else math.nan for k in keys})
    return floors


def structure_checks(
    stage_name: str, items: list[PlantedItem], context: StageContext
) -> list[StructureCheck]:
    """A stage's structure metrics on the structure rung (required), and its headline (shown), scored with the
    stage's own ``cross_score``."""
    stage = get_stage(stage_name)
    required = structure_keys(stage.metrics)
    shown = headline(stage.metrics)
    keys = [*required, *([shown.key] if shown is not None and shown.key not in required else [])]
    values: dict[str, dict[str, list[float]]] = {k: {r: [] for r in STRUCTURE_RUNGS} for k in keys}
    for item in items:
        for rung in STRUCTURE_RUNGS:
            scores = stage.cross_score(item.outputs[rung], item.reference, context)
            for key in keys:
                values[key][rung].append(scores[key])
    floors = _item_floors(stage, items, context, keys)
    return [_check(stage_name, key, key in required, values[key], [f[key] for f in floors]) for key in keys]


def _check(
    stage: str, metric: str, required: bool, values: dict[str, list[float]], floors: list[float]
) -> StructureCheck:
    floor = bootstrap_ci([f for f in floors if not math.isnan(f)])
    rescaled = {rung: [rescale(v, floor.mean) for v in values[rung]] for rung in STRUCTURE_RUNGS}
    return StructureCheck(
        stage=stage,
        metric=metric,
        required=required,
        floor=floor,
        items=len(values[STRUCTURE_RUNGS[0]]),
        rescaled={rung: rescaled_estimate(values[rung], floors) for rung in STRUCTURE_RUNGS},
        steps=[
            Step(upper=a, lower=b, difference=paired_difference(rescaled[a], rescaled[b]))
            for a, b in pairwise(STRUCTURE_RUNGS)
        ],
    )


def structure_rows(checks: list[StructureCheck], scale: float = 100.0) -> list[list[str]]:
    """The structure rung's table (header first): per metric the floor, each rung's rescaled mean [95% CI],
    the paired differences and the verdict (a set-based metric shown for contrast: 'not required')."""
    steps = [f"{a} − {b}" for a, b in pairwise(STRUCTURE_RUNGS)]
    rows = [["stage", "metric", "floor", *STRUCTURE_RUNGS, *steps, "verdict"]]
    for check in checks:
        verdict = check.reason(scale)
        rows.append(
            [
                check.stage,
                check.metric,
                check.floor.fmt(scale),
                *[check.rescaled[r].fmt(scale) for r in STRUCTURE_RUNGS],
                *[s.difference.fmt(scale) for s in check.steps],
                verdict if check.required else f"not required ({verdict})",
            ]
        )
    return rows


def failed_structure(checks: list[StructureCheck]) -> list[str]:
    """``stage/metric`` of every required metric that fails the structure rung (with enough articles)."""
    return [f"{c.stage}/{c.metric}" for c in checks if c.required and c.decidable and not c.passed]


def undecided_structure(checks: list[StructureCheck]) -> list[str]:
    """``stage/metric (n items, needs ≥ M)`` of every required metric whose rung has too few articles."""
    return [undecided_name(c.stage, c.metric, c.items) for c in checks if c.required and not c.decidable]


def stage_structure_items(
    stage_name: str, dataset: Dataset, articles: int, context: StageContext
) -> list[PlantedItem]:
    """:func:`structure_items` for a stage that plants headings and declares structure metrics, under the
    context's heading selection; none for any other stage."""
    from ruwikibench.graphs.outline import selection

    stage = get_stage(stage_name)
    if stage.planted_output != "headings" or not structure_keys(stage.metrics):
        return []
    return structure_items(dataset, articles, selection(context.config.options(OutlineConfig)))
