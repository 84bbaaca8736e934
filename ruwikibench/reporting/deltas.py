"""Per-article deltas of compared runs: each article's headline score in every run and its difference from
the first run; per compared run its biggest wins and losses, and why articles have no delta."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ruwikibench.reporting.data import RunData
from ruwikibench.reporting.failures import short_reason
from ruwikibench.reporting.tables import (
    count_keys,
    marked,
    metric_scale,
    not_run_note,
    run_stages,
    stage_columns,
    stage_metrics,
)
from ruwikibench.stage.metric import headline as headline_metric
from ruwikibench.stage.metric import is_twin
from ruwikibench.storage.results import StageMetrics

TOP_DELTAS = 10


def headline(stage: str, metrics: StageMetrics | None) -> tuple[str, str]:
    """The (title, key) the article index and the deltas rank by: the stage's declared headline metric, else
    its first column (an unknown stage: its first metric key)."""
    declared = headline_metric(stage_metrics(stage))
    if declared is not None:
        return declared.label, declared.key
    columns = [c for c in stage_columns(stage, metrics) if not is_twin(c[1])]
    return columns[0] if columns else ("", "")


def shown(stage: str, key: str, value: float | None) -> float | None:
    return None if value is None else value * metric_scale(key, count_keys(stage))


@dataclass
class DeltaRow:
    """An article's headline score in the first run, in each other run, and the differences (None:
    unscored)."""

    article: str
    page: str
    before: float | None
    afters: list[float | None]
    deltas: list[float | None]


def delta_block(
    data: list[RunData], stage: str, articles: list[str], pages: dict[str, str]
) -> dict[str, Any] | None:
    """Per-article deltas of the stage's headline metric, each run against the first; None for one run."""
    present = [r for r in data if stage in r.metrics]
    if len(present) < 2:
        return None
    base, others = present[0], present[1:]
    title, key = headline(stage, base.metrics[stage])
    rows = []
    for article in articles:
        before = shown(stage, key, base.article_value(stage, article, key))
        afters = [shown(stage, key, r.article_value(stage, article, key)) for r in others]
        if (
            before is None
            and all(a is None for a in afters)
            and not _failed_anywhere(present, stage, article)
        ):
            continue
        deltas = [None if before is None or after is None else after - before for after in afters]
        rows.append(DeltaRow(article, pages[article], before, afters, deltas))
    return {
        "stage": stage,
        "title": marked(stage, title),
        "base": base.name,
        "others": [r.name for r in others],
        "pairs": [
            pair_extremes(rows, index, other.name) | {"skipped": skipped_notes(stage, base, other, articles)}
            for index, other in enumerate(others)
        ],
        "rows": sorted(rows, key=_largest_change),
        "not_run": not_run_note(
            stage, [(r.name, run_stages(r.spec, r.metrics)) for r in data if stage not in r.metrics]
        ),
    }


def pair_extremes(rows: list[DeltaRow], index: int, other: str) -> dict[str, Any]:
    """One compared run against the first: its biggest wins and losses (:data:`TOP_DELTAS` each, by size)
    and how many articles are unchanged."""
    scored = [(row, delta) for row in rows if (delta := row.deltas[index]) is not None]
    wins = sorted((x for x in scored if x[1] > 0), key=lambda x: -x[1])[:TOP_DELTAS]
    losses = sorted((x for x in scored if x[1] < 0), key=lambda x: x[1])[:TOP_DELTAS]
    return {
        "other": other,
        "wins": [{"article": row.article, "page": row.page, "delta": d} for row, d in wins],
        "losses": [{"article": row.article, "page": row.page, "delta": d} for row, d in losses],
        "ties": sum(1 for _, d in scored if d == 0),
    }


def _largest_change(row: DeltaRow) -> float:
    """Sort key of the all-articles table: the largest |Δ| of any compared run first, unscored rows last."""
    known = [abs(d) for d in row.deltas if d is not None]
    return -max(known) if known else math.inf


def _failed_anywhere(runs: list[RunData], stage: str, article: str) -> bool:
    return any(run.failed(stage, article) for run in runs)


def _why_unscored(run: RunData, stage: str, article: str) -> str:
    errors = run.failed(stage, article)
    if errors:
        return f"run {run.name} failed: {short_reason(errors[0]['reason'])}"
    return f"run {run.name} scored no item of it"


def skipped_notes(stage: str, base: RunData, other: RunData, articles: list[str]) -> list[dict[str, Any]]:
    """Why articles have no delta between ``base`` and ``other``: one note per reason ('both articles skipped:
    run X failed: …'), with the articles it covers; articles neither run has anything of are left out."""
    headline_key = headline(stage, base.metrics[stage])[1]
    by_reason: dict[str, list[str]] = {}
    for article in articles:
        values = {run.name: run.article_value(stage, article, headline_key) for run in (base, other)}
        if all(v is not None for v in values.values()):
            continue
        if all(v is None for v in values.values()) and not _failed_anywhere([base, other], stage, article):
            continue
        why = "; ".join(
            _why_unscored(run, stage, article) for run in (base, other) if values[run.name] is None
        )
        by_reason.setdefault(why, []).append(article)
    compared = sum(
        1
        for a in articles
        if _failed_anywhere([base, other], stage, a)
        or any(r.article_value(stage, a, headline_key) is not None for r in (base, other))
    )
    return [
        {"text": f"{_how_many(len(names), compared)} skipped: {why}", "articles": names}
        for why, names in by_reason.items()
    ]


def _how_many(count: int, total: int) -> str:
    if count == total:
        return "both articles" if count == 2 else f"all {count} articles" if count > 1 else "the article"
    return f"{count} article{'s' if count != 1 else ''}"
