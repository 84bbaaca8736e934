"""Paired comparison of runs: each run against the first, per stage and headline metric, over the items both
runs scored.

Items are keyed by (article, item) of results.jsonl. An item excluded in either run (the paper's exclusions),
or scored in one run only (failed, missing or not selected in the other), is left out of the pair and counted;
so is, for a metric that declares ``paired_when_equal``, an item whose info value under that key differs
between the runs (ranking: NDCG and R-Precision of articles ranked on different pools).
On the shared items: the mean difference (run − first run) with a paired bootstrap 95% CI (items resampled,
each keeping its pair) and a two-sided randomization p-value (each item's two values swapped under the null
hypothesis: every swap pattern up to 16 items, random ones above). Embedding metrics with a permutation floor
(floors.jsonl) also get the difference of their rescaled means, (mean − floor) / (1 − floor) per run,
resampled and randomized over the four columns (score and floor of each run) of the shared items; an item with
no floor row counts in the score mean but not in the floor mean.

Everything but :func:`load_items` is pure: records in, numbers out. Rendering lives in the report modules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ruwikibench.evaluators.floor import rescaled_means
from ruwikibench.evaluators.stats import (
    Estimate,
    paired_bootstrap,
    paired_difference,
    paired_randomization,
    randomization_p_value,
    smallest_p,
)
from ruwikibench.stage.metric import RESCALED_SUFFIX
from ruwikibench.storage.jsonl import latest
from ruwikibench.storage.results import result_rows
from ruwikibench.storage.rundir import FLOORS_FILE, RunDir

ALPHA = 0.05
ItemKey = tuple[str, str]


@dataclass(frozen=True)
class StageItems:
    """One run's items of one stage: scores of the items scored (not excluded), the excluded keys, floor
    rows."""

    scores: dict[ItemKey, dict[str, float]] = field(default_factory=dict)
    excluded: frozenset[ItemKey] = frozenset()
    floors: dict[ItemKey, dict[str, float]] = field(default_factory=dict)
    tags: dict[ItemKey, dict[str, str]] = field(default_factory=dict)  # the string values of each item's info


@dataclass(frozen=True)
class Alignment:
    """The items both runs scored in ``key`` (sorted), their values, and what was left out."""

    keys: list[ItemKey]
    base: list[float]
    other: list[float]
    only_base: int
    only_other: int
    excluded: int
    differ: int = 0
    differ_on: str = ""

    def left_out(self) -> str:
        parts = [
            (self.only_base, "only in first run"),
            (self.only_other, "only in this run"),
            (self.excluded, "excluded"),
            (self.differ, f"another {self.differ_on}"),
        ]
        return ", ".join(f"{n} {what}" for n, what in parts if n) or "0"


@dataclass(frozen=True)
class PairedRow:
    """One metric of one run against the first: Δ = run − first run (raw units), its CI, p, the alignment."""

    stage: str
    title: str
    key: str
    base: str
    run: str
    difference: Estimate
    p: float
    alignment: Alignment
    scale: float = 100.0
    direction: str = "higher"  # the metric's: "higher" or "lower" is better, or "neither" (no winner)

    @property
    def shared(self) -> int:
        return len(self.alignment.keys)

    @property
    def winner(self) -> str | None:
        """The run that is significantly better (p < ALPHA and the CI on that side of 0: above it for a metric
        where higher is better, below it where lower is), else None; never one for a metric with no better
        direction."""
        higher = self.significant_side()
        if higher is None or self.direction == "neither":
            return None
        lower = self.base if higher == self.run else self.run
        return lower if self.direction == "lower" else higher

    def significant_side(self) -> str | None:
        """The run with the significantly higher value (p < ALPHA, the CI on that side of 0), else None."""
        d = self.difference
        if not (self.p < ALPHA and math.isfinite(d.low) and math.isfinite(d.high)):
            return None
        return self.run if d.low > 0 else self.base if d.high < 0 else None

    @property
    def too_few(self) -> str:
        """'cannot be significant: 3 items allow p ≥ 0.25 at best' when the shared items cannot reach p <
        ALPHA, else ''."""
        return too_few_items(self.shared)

    def verdict(self) -> str:
        if self.shared == 0:
            return "no shared item"
        if not math.isfinite(self.difference.mean):  # a rescaled mean whose floor is 100: nothing to compare
            return "not computed: no floor below 100"
        if self.too_few:
            return self.too_few
        if self.direction == "neither" and self.significant_side() is not None:
            return "significant difference (neither direction is better)"
        if self.winner is None:
            return "no significant difference"
        loser = self.base if self.winner == self.run else self.run
        return f"{self.winner} beats {loser}"

    def sentence(self) -> str:
        """'B beats A on sections Mean F1: +1.20 [0.30, 2.10], p = 0.010, 14 shared items'."""
        return (
            f"{self.verdict()} on {self.stage} {self.title}: {format_delta(self.difference, self.scale)}, "
            f"p = {format_p(self.p)}, {self.shared} shared items"
        )


def p_at_best(n: int, alpha: float = ALPHA) -> str:
    """'3 items allow p ≥ 0.25 at best' when the smallest p ``n`` paired items allow
    (:func:`~ruwikibench.evaluators.stats.smallest_p`) is not below ``alpha``; '' when it is (or no item)."""
    best = smallest_p(n)
    if n <= 0 or best < alpha:
        return ""
    return f"{n} item{'s' if n != 1 else ''} allow{'s' if n == 1 else ''} p ≥ {best:.3g} at best"


def too_few_items(n: int, alpha: float = ALPHA) -> str:
    """The verdict of a comparison of too few items: 'cannot be significant: 3 items allow p ≥ 0.25 at
    best'; '' when ``n`` items can be significant."""
    best = p_at_best(n, alpha)
    return f"cannot be significant: {best}" if best else ""


def no_winner_line(rows: Sequence[PairedRow]) -> str:
    """The line under a paired table where no run wins: which rows had too few items to be significant."""
    few = sorted({row.shared for row in rows if row.too_few})
    if not few:
        return "No significant difference in any metric."
    notes = "; ".join(p_at_best(n) for n in few)
    if all(row.too_few or row.shared == 0 for row in rows):
        return f"No metric can be significant here: {notes}."
    return f"No significant difference in any metric; rows with too few shared items: {notes}."


def format_delta(estimate: Estimate, scale: float) -> str:
    if estimate.n == 0 or not math.isfinite(estimate.mean):
        return "—"
    low, high = (f"{v * scale:+.2f}" if math.isfinite(v) else "—" for v in (estimate.low, estimate.high))
    return f"{estimate.mean * scale:+.2f} [{low}, {high}]"


def format_p(p: float) -> str:
    """Three decimals; below 0.001 one significant digit (0.0002, 3e-05: still numbers for the HTML
    sorting)."""
    if not math.isfinite(p):
        return "—"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1g}"


def stage_items(
    results: Sequence[dict[str, Any]], floors: Sequence[dict[str, Any]], stage: str
) -> StageItems:
    """One stage's items from score records (results.jsonl or baselines rows, read as :class:`ResultRow`) and
    floors.jsonl rows (the last record of an item wins)."""
    scores: dict[ItemKey, dict[str, float]] = {}
    tags: dict[ItemKey, dict[str, str]] = {}
    excluded: set[ItemKey] = set()
    for record in result_rows([r for r in results if r["stage"] == stage], f"{stage} score records"):
        key = (record.article, record.item)
        if record.excluded:
            excluded.add(key)
            scores.pop(key, None)
        else:
            excluded.discard(key)
            scores[key] = {k: v for k, v in record.metrics.items() if isinstance(v, int | float)}
            tags[key] = {k: v for k, v in (record.info or {}).items() if isinstance(v, str)}
    rows = {
        (str(r["article"]), str(r["item"])): dict(r.get("metrics", {})) for r in floors if r["stage"] == stage
    }
    return StageItems(scores, frozenset(excluded), rows, tags)


def load_items(rundir: RunDir) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The run's latest score records and floor rows (none when the run has no floors.jsonl)."""
    floors = latest(rundir.read(FLOORS_FILE)) if rundir.file(FLOORS_FILE).exists() else []
    return rundir.results(), floors


def align(base: StageItems, other: StageItems, key: str, same: str | None = None) -> Alignment:
    """The items scored in ``key`` by both runs; items scored by one run only, and items excluded in either
    run (whatever the other did), counted. ``same``: an info key both runs' items must agree on to be paired
    (the metric's ``paired_when_equal``); items where both have it and it differs are left out and counted."""
    has_base = {k for k, m in base.scores.items() if _finite(m.get(key))}
    has_other = {k for k, m in other.scores.items() if _finite(m.get(key))}
    excluded = base.excluded | other.excluded
    both = (has_base & has_other) - excluded
    differ = {
        k for k in both if same and _differ(base.tags.get(k, {}).get(same), other.tags.get(k, {}).get(same))
    }
    shared = sorted(both - differ)
    return Alignment(
        keys=shared,
        base=[base.scores[k][key] for k in shared],
        other=[other.scores[k][key] for k in shared],
        only_base=len(has_base - has_other - excluded),
        only_other=len(has_other - has_base - excluded),
        excluded=len(excluded),
        differ=len(differ),
        differ_on=same or "",
    )


def _differ(a: str | None, b: str | None) -> bool:
    """Both known and unequal (a run from before the tag was recorded is paired as it was)."""
    return a is not None and b is not None and a != b


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def compare_metric(
    stage: str, title: str, key: str, names: tuple[str, str], alignment: Alignment, scale: float = 100.0
) -> PairedRow:
    """Δ = other − base of the mean of ``key`` on the aligned items, paired bootstrap CI, randomization p."""
    difference = paired_difference(alignment.other, alignment.base)
    p = randomization_p_value(alignment.other, alignment.base)
    return PairedRow(stage, title, key, names[0], names[1], difference, p, alignment, scale)


def floor_column(items: StageItems, keys: list[ItemKey], key: str) -> list[float]:
    """Each item's floor of ``key`` (NaN where the item has no floor row)."""
    values = [items.floors.get(k, {}).get(key, math.nan) for k in keys]
    return [float(v) if _finite(v) else math.nan for v in values]


def rescaled_difference(
    score_a: np.ndarray, floor_a: np.ndarray, score_b: np.ndarray, floor_b: np.ndarray
) -> np.ndarray:
    """Per resample (row): rescaled mean of B minus rescaled mean of A, rescaled = (mean − floor) / (1 −
    floor), the floor the mean over the items that have one."""
    return rescaled_means(score_b, floor_b) - rescaled_means(score_a, floor_a)


def compare_rescaled(
    stage: str,
    title: str,
    key: str,
    names: tuple[str, str],
    alignment: Alignment,
    base: StageItems,
    other: StageItems,
    scale: float = 100.0,
) -> PairedRow | None:
    """Δ of the rescaled means (other − base) on the aligned items; None when either run has no floor
    there."""
    floor_a = floor_column(base, alignment.keys, key)
    floor_b = floor_column(other, alignment.keys, key)
    if all(math.isnan(f) for f in floor_a) or all(math.isnan(f) for f in floor_b):
        return None
    columns = [alignment.base, floor_a, alignment.other, floor_b]
    difference = paired_bootstrap(columns, rescaled_difference)
    p = paired_randomization([alignment.base, floor_a], [alignment.other, floor_b], rescaled_difference)
    return PairedRow(
        stage, f"{title} rescaled", key + RESCALED_SUFFIX, names[0], names[1], difference, p, alignment, scale
    )


@dataclass(frozen=True)
class Headline:
    """A metric the paired table compares: its title, key, display scale, and whether it has a floor."""

    title: str
    key: str
    scale: float = 100.0
    floor: bool = False
    direction: str = "higher"
    same: str | None = None  # the metric's paired_when_equal


def compare_stage(
    stage: str, headlines: list[Headline], base: tuple[str, StageItems], other: tuple[str, StageItems]
) -> list[PairedRow]:
    """The rows of one stage, one run against the first: each headline metric, then its rescaled
    difference."""
    names = (base[0], other[0])
    rows: list[PairedRow] = []
    for h in headlines:
        alignment = align(base[1], other[1], h.key, h.same)
        if not (alignment.keys or alignment.only_base or alignment.only_other or alignment.differ):
            continue  # neither run has the metric (e.g. entity recall where no reference names an entity)
        rows.append(
            replace(compare_metric(stage, h.title, h.key, names, alignment, h.scale), direction=h.direction)
        )
        if h.floor and (
            row := compare_rescaled(stage, h.title, h.key, names, alignment, base[1], other[1], h.scale)
        ):
            rows.append(replace(row, direction=h.direction))
    return rows


def paired_table(rows: list[PairedRow]) -> list[list[str]]:
    """Table rows (header first): metric, run, Δ vs the first run [95% CI] (×100 for fractions), p, shared
    items, items left out, verdict."""
    base = rows[0].base if rows else "first run"
    header = ["metric", "run", f"Δ vs {base} [95% CI]", "p", "shared items", "left out", "verdict"]
    return [header] + [
        [
            r.title,
            r.run,
            format_delta(r.difference, r.scale),
            format_p(r.p),
            str(r.shared),
            r.alignment.left_out(),
            r.verdict(),
        ]
        for r in rows
    ]


RunItems = tuple[str, list[dict[str, Any]], list[dict[str, Any]]]


def compare_runs_paired(
    runs: Sequence[RunItems], stages: Sequence[str], headlines: dict[str, list[Headline]]
) -> dict[str, list[PairedRow]]:
    """Per stage: every run after the first against the first, one row per headline metric (and rescaled
    metric) and run, metric by metric. ``runs``: (name, score records, floor rows); stages a run lacks are
    skipped."""
    out: dict[str, list[PairedRow]] = {}
    for stage in stages:
        present = [
            (name, stage_items(results, floors, stage))
            for name, results, floors in runs
            if any(r["stage"] == stage for r in results)
        ]
        if len(present) < 2 or not headlines.get(stage):
            continue
        order = {key: i for i, h in enumerate(headlines[stage]) for key in (h.key, h.key + RESCALED_SUFFIX)}
        rows = [
            row for other in present[1:] for row in compare_stage(stage, headlines[stage], present[0], other)
        ]
        out[stage] = sorted(
            rows, key=lambda row: (order[row.key], row.key)
        )  # stable: runs in the order given
    return out
