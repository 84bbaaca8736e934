"""The validity ladder of the embedding metrics: does the configured embedder rank outputs of known order?

Each stage's embedding metrics score the planted rungs of :mod:`ruwikibench.validity.ladder` per item with the
stage's own scoring code (``cross_score``). The permutation floor is measured as in a run (the reference rung
of each item against the references of other articles, :mod:`ruwikibench.aggregation.floors`), and every rung
is rescaled by it. A metric PASSES when the means of the decisive rungs (:data:`DECISIVE`: restated → 25 % →
50 % → 75 % → wrong article) go strictly down and every adjacent pair is separated: the paired difference over
items (upper − lower rung, :func:`~ruwikibench.evaluators.stats.paired_difference`) has its 95 % CI above 0.
The identity rung (the reference itself, 100 by construction) and the title-template and word-salad rungs are
reported, with where they land, but do not decide.

A ladder of fewer than :data:`MIN_ITEMS` items CANNOT DECIDE: a percentile bootstrap CI of n paired
differences lies above 0 whenever all n are positive (at n = 2 one time in four by chance), and the sign-flip
test of the same differences cannot reach p < 0.05 below 6 items (2 / 2^5 = 0.0625). Its verdict says so
instead of PASS or FAIL, and ``check-metrics`` exits with :data:`EXIT_UNDECIDED`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import pairwise

from pydantic import BaseModel

from ruwikibench.aggregation.floors import PER_ITEM, SEED
from ruwikibench.conf.builtin_options import OutlineConfig
from ruwikibench.dataset import Dataset
from ruwikibench.evaluators.floor import FloorSide, draw_others, rescale, rescaled_estimate
from ruwikibench.evaluators.stats import Estimate, bootstrap_ci, items_needed, paired_difference
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.metric import headline, ladder_keys
from ruwikibench.stage.registry import get_stage
from ruwikibench.validity.ladder import RUNGS, PlantedItem, outline_items, section_items, shuffle_words

DECISIVE = ("restated", "25%", "50%", "75%", "wrong article")
REPORTED = ("reference", "title template", "shuffled words")
CONFIDENCE = 0.95  # of the steps' paired CIs
MIN_ITEMS = items_needed(1 - CONFIDENCE)
"""The fewest items a ladder decides on: the smallest n whose two-sided sign-flip test reaches p < .05 (6)."""
EXIT_UNDECIDED = 4
"""``check-metrics`` exit status when no checked headline metric fails but one has too few items to
decide."""

__all__ = [
    "DECISIVE",
    "RUNGS",
    "MetricCheck",
    "PlantedItem",
    "Step",
    "check_rows",
    "check_stage",
    "entity_checks",
    "failed_headlines",
    "ladder_items",
    "outline_items",
    "section_items",
    "shuffle_words",
    "step_rows",
    "undecided_headlines",
]


class Step(BaseModel):
    """Adjacent decisive rungs: the paired difference upper − lower of their rescaled item scores."""

    upper: str
    lower: str
    difference: Estimate

    @property
    def separated(self) -> bool:
        return self.difference.low > 0

    def describe(self, scale: float = 100.0) -> str:
        return f"{self.upper} → {self.lower}: {self.difference.fmt(scale)}"


class MetricCheck(BaseModel):
    stage: str
    metric: str
    floor: Estimate
    raw: dict[str, Estimate]
    rescaled: dict[str, Estimate]
    steps: list[Step]

    @property
    def headline(self) -> bool:
        return _is_headline(self.stage, self.metric)

    @property
    def monotone(self) -> bool:
        """The decisive rungs' rescaled means go strictly down."""
        means = [self.rescaled[r].mean for r in DECISIVE]
        return all(a > b for a, b in pairwise(means))

    @property
    def items(self) -> int:
        """The items the steps are paired over (the fewest of any step)."""
        return min((s.difference.n for s in self.steps), default=0)

    @property
    def decidable(self) -> bool:
        """Enough items for a step to be told from chance (:data:`MIN_ITEMS`)."""
        return self.items >= MIN_ITEMS

    @property
    def passed(self) -> bool:
        return self.decidable and self.monotone and all(s.separated for s in self.steps)

    def reason(self, scale: float = 100.0) -> str:
        """PASS, FAIL with the first step that breaks the ladder, or 'cannot decide' with too few items."""
        return steps_verdict(self.steps, self.items, scale)

    def lands(self, rung: str) -> str:
        """Where a reported rung lands among the decisive ones, by mean: 'above restated', '25%–50%', …"""
        value = self.rescaled[rung].mean
        means = {r: self.rescaled[r].mean for r in DECISIVE}
        above = [r for r in DECISIVE if means[r] > value]
        below = [r for r in DECISIVE if means[r] <= value]
        if not above:
            return f"above {max(below, key=means.__getitem__)}"
        if not below:
            return f"below {min(above, key=means.__getitem__)}"
        return f"{min(above, key=means.__getitem__)}–{max(below, key=means.__getitem__)}"


def _item_floors(
    items: list[PlantedItem],
    score: Callable[..., dict[str, float]],
    context: StageContext,
    keys: Sequence[str],
    per_item: int,
    seed: int,
) -> list[dict[str, float] | None]:
    """Each item's floor: its reference rung against the references of up to ``per_item`` other items."""
    pool = [FloorSide(article=i.article, item=i.item, generated=None, reference=i.reference) for i in items]
    draws = draw_others(
        [(i.article, i.item) for i in items], [(p.article, p.item) for p in pool], per_item, seed
    )
    floors: list[dict[str, float] | None] = []
    for item, drawn in zip(items, draws, strict=True):
        cross = [score(item.outputs["reference"], pool[j].reference, context) for j in drawn]
        floors.append({k: sum(c[k] for c in cross) / len(cross) for k in keys} if cross else None)
    return floors


def _steps(values: dict[str, list[float]], floor: float) -> list[Step]:
    rescaled = {rung: [rescale(v, floor) for v in values[rung]] for rung in DECISIVE}
    return [
        Step(upper=upper, lower=lower, difference=paired_difference(rescaled[upper], rescaled[lower]))
        for upper, lower in pairwise(DECISIVE)
    ]


def _is_headline(stage: str, metric: str) -> bool:
    """The metric is its stage's declared headline (a ladder failure of it fails the check)."""
    try:
        found = headline(get_stage(stage).metrics)
    except KeyError:
        return False
    return found is not None and found.key == metric


def check_stage(
    stage_name: str,
    items: list[PlantedItem],
    context: StageContext,
    *,
    per_item: int = PER_ITEM,
    seed: int = SEED,
    progress: Callable[[int, int], None] | None = None,
) -> list[MetricCheck]:
    """Floor, raw and rescaled estimates of every rung and the ladder's steps, for every floor metric."""
    stage = get_stage(stage_name)
    keys = ladder_keys(stage.metrics)
    score: Callable[..., dict[str, float]] = stage.cross_score
    raw: dict[str, dict[str, list[float]]] = {k: {r: [] for r in RUNGS} for k in keys}
    total, done = len(items) * (len(RUNGS) + 1), 0
    for item in items:
        for rung in RUNGS:
            metrics = score(item.outputs[rung], item.reference, context)
            for key in keys:
                raw[key][rung].append(metrics[key])
            done += 1
            if progress:
                progress(done, total)
    floors = _item_floors(items, score, context, keys, per_item, seed)
    if progress:
        progress(total, total)
    nan = float("nan")
    checks = [
        _metric_check(stage_name, key, raw[key], [f[key] if f else nan for f in floors]) for key in keys
    ]
    return checks + entity_checks(stage_name, items, context)


def _metric_check(
    stage: str, metric: str, values: dict[str, list[float]], floors: list[float]
) -> MetricCheck:
    """``floors``: one per item (NaN where an item has none), paired with its values in the rescaled CI."""
    floor = bootstrap_ci([f for f in floors if not math.isnan(f)])
    return MetricCheck(
        stage=stage,
        metric=metric,
        floor=floor,
        raw={r: bootstrap_ci(values[r]) for r in RUNGS},
        rescaled={r: rescaled_estimate(values[r], floors) for r in RUNGS},
        steps=_steps(values, floor.mean),
    )


NO_FLOOR = Estimate(mean=0.0, low=0.0, high=0.0, n=0)


def _entity_scorer(stage: str, context: StageContext) -> Callable[[object, object], dict[str, float]] | None:
    """Entity scores of a rung's output against an item's reference, as the stage scores them; None for a
    stage without entity metrics."""
    from ruwikibench.evaluators.entities import entity_scores
    from ruwikibench.evaluators.outline import heading_entity_scores
    from ruwikibench.graphs.outline import selection

    planted = get_stage(stage).planted_output
    if planted == "text":
        return lambda generated, reference: entity_scores(str(generated), str(reference))
    if planted == "headings" and context.dataset is not None:
        dataset, chosen = context.dataset, selection(context.config.options(OutlineConfig))
        return lambda generated, reference: heading_entity_scores(
            list(generated[1]),  # type: ignore[index]
            dataset.article(str(reference)),
            chosen,
        )
    return None


def entity_checks(stage: str, items: list[PlantedItem], context: StageContext) -> list[MetricCheck]:
    """The ladder of the entity metrics (no embedder, no floor: 0 is chance, the rescaled column is the raw
    score) over the items whose reference names an entity; none when no reference does."""
    score = _entity_scorer(stage, context)
    keys = ladder_keys(get_stage(stage).metrics, kind="entity")
    if score is None or not keys:
        return []
    values: dict[str, dict[str, list[float]]] = {k: {r: [] for r in RUNGS} for k in keys}
    for item in items:
        if not score(item.outputs["reference"], item.reference):
            continue  # the reference names no entity: the metric is undefined for this item
        for rung in RUNGS:
            metrics = score(item.outputs[rung], item.reference)
            for key in keys:
                values[key][rung].append(metrics.get(key, 0.0))
    if len(values[keys[0]]["reference"]) < 2:
        return []
    return [
        MetricCheck(
            stage=stage,
            metric=key,
            floor=NO_FLOOR,
            raw={r: bootstrap_ci(v[r]) for r in RUNGS},
            rescaled={r: bootstrap_ci(v[r]) for r in RUNGS},
            steps=_steps(v, 0.0),
        )
        for key, v in values.items()
    ]


def check_rows(checks: list[MetricCheck], scale: float = 100.0) -> list[list[str]]:
    """The rungs table (header first): stage, metric, floor, each rung's rescaled mean [95% CI]."""
    rows = [["stage", "metric", "floor", *RUNGS]]
    for check in checks:
        rows.append(
            [
                check.stage,
                check.metric,
                check.floor.fmt(scale),
                *[check.rescaled[r].fmt(scale) for r in RUNGS],
            ]
        )
    return rows


def step_rows(checks: list[MetricCheck], scale: float = 100.0) -> list[list[str]]:
    """The verdict table (header first): each step's paired difference [95% CI], monotone, where the reported
    rungs land, and the verdict with its reason (headline metrics marked *)."""
    steps = [f"{a} − {b}" for a, b in pairwise(DECISIVE)]
    rows = [["stage", "metric", *steps, "monotone", "title template lands", "shuffled lands", "verdict"]]
    for check in checks:
        rows.append(
            [
                check.stage,
                check.metric + (" *" if check.headline else ""),
                *[s.difference.fmt(scale) for s in check.steps],
                "yes" if check.monotone else "no",
                check.lands("title template"),
                check.lands("shuffled words"),
                check.reason(scale),
            ]
        )
    return rows


def steps_verdict(steps: Sequence[Step], items: int, scale: float = 100.0) -> str:
    """The verdict of a chain of paired steps over ``items`` items: 'cannot decide: N items, needs ≥ M'
    below :data:`MIN_ITEMS`, else FAIL with the first step that goes the wrong way or is not separated, else
    PASS."""
    if items < MIN_ITEMS:
        return f"cannot decide: {items} items, needs ≥ {MIN_ITEMS}"
    for step in steps:
        diff = step.difference.fmt(scale)
        if step.difference.mean <= 0:
            return f"FAIL: {step.lower} ≥ {step.upper} (diff {diff})"
        if not step.separated:
            return f"FAIL: {step.lower} not separated from {step.upper} (diff {diff})"
    return "PASS"


def undecided_name(stage: str, metric: str, items: int) -> str:
    """``stage/metric (N items, needs ≥ M)``: a metric whose check has too few items to decide."""
    return f"{stage}/{metric} ({items} items, needs ≥ {MIN_ITEMS})"


def failed_headlines(checks: list[MetricCheck]) -> list[str]:
    """``stage/metric`` of every headline metric that fails the ladder (with enough items to decide)."""
    return [f"{c.stage}/{c.metric}" for c in checks if c.headline and c.decidable and not c.passed]


def undecided_headlines(checks: list[MetricCheck]) -> list[str]:
    """``stage/metric (N items, needs ≥ M)`` of every headline metric with too few items to decide."""
    return [undecided_name(c.stage, c.metric, c.items) for c in checks if c.headline and not c.decidable]


def ladder_items(
    stage: str, dataset: Dataset, articles: int, sections: int, sentences: int
) -> list[PlantedItem]:
    """The planted items of a stage, by the output it plants (headings: ``articles`` articles; text:
    ``sections`` per article)."""
    planted = get_stage(stage).planted_output
    if planted == "headings":
        return outline_items(dataset, articles, stage)
    if planted == "text":
        return section_items(dataset, articles, sections, sentences)
    raise ValueError(f"check-metrics: stage {stage!r} has no validity ladder (no planted_output)")
