"""No-LLM baselines of a run, on disk (``baselines.jsonl``), and beside the run in its metrics.

For every saved unit of a stage that has baselines (:mod:`ruwikibench.baselines`), each baseline builds an
output from the unit's gold input (and, for ranking, the run's own candidate pool), the stage's ``score()``
scores it and its permutation floor is measured as the run's is. One row per (baseline, item): a score record
with ``baseline`` and, for embedding metrics, ``floor`` (the item's floor metrics).

A unit's baselines are scored when the unit is (:func:`unit_baselines`, by the runner as each unit finishes,
by ``score`` for every unit) and kept per unit in ``baseline_scores.jsonl``; the finish of a run, ``score``,
``score-outputs`` and ``merge`` gather them, scoring those of units that have none (a run from before that
file), add the floors and write baselines.jsonl (:mod:`ruwikibench.aggregation.derived`), so old runs get them
by ``score``. CPU-bound (embedding): call it from a worker thread, never on the event loop.
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
from collections import defaultdict
from dataclasses import replace
from typing import Any

from ruwikibench.baselines import BaselineSkipped
from ruwikibench.models.cache import stable_hash
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Baseline, Stage, Unit
from ruwikibench.stage.metric import RESCALED_SUFFIX, baseline_keys, by_key, floor_keys
from ruwikibench.stage.registry import get_stage
from ruwikibench.storage.results import versioned
from ruwikibench.storage.rundir import FLOORS_FILE, RunDir
from ruwikibench.storage.stamps import INPUT_FILES, STAMP_FILE, inputs_digest  # noqa: F401 - named here by the runner

log = logging.getLogger(__name__)

BASELINES_FILE = "baselines.jsonl"
UNIT_BASELINES_FILE = (
    "baseline_scores.jsonl"  # per unit, written when it is scored: see aggregation/derived.py
)


def _excluded(baseline: str, unit: Unit, reason: str) -> dict[str, Any]:
    return versioned(
        {
            "baseline": baseline,
            "stage": unit.stage,
            "article": unit.article,
            "item": unit.unit_id,
            "unit": unit.unit_id,
            "metrics": {},
            "excluded": reason,
        }
    )


def baseline_names(stage: Stage[Any]) -> list[str]:
    return [baseline.name for baseline in stage.baselines]


def output_digest(output: dict[str, Any]) -> str:
    """sha256 of a unit's output (canonical JSON): what its baseline record was built from."""
    return stable_hash(output)


TRANSIENT: tuple[type[BaseException], ...] = (OSError, sqlite3.OperationalError, MemoryError)
"""Faults of the machine, not of the baseline (a full disk, an I/O error, a locked or vanished cache): never
kept as a baseline's result; they propagate, nothing is recorded, and the baseline is scored again on
resume."""

BaselineScored = tuple[list[dict[str, Any]], dict[str, Any] | None]
"""One baseline of one unit: its rows, and the output it built (None when it could not build one)."""


def score_baseline(
    stage: Stage[Any], baseline: Baseline, unit: Unit, output: dict[str, Any], context: StageContext
) -> BaselineScored:
    """The baseline built for the unit and scored by the stage's ``score()``; a baseline that cannot be built
    or scored is one row with ``excluded`` set to the reason; a :data:`TRANSIENT` fault is raised, never
    recorded."""
    try:
        made = baseline.build(unit, output, context)
        records = stage.checked_score(unit, made, context).records
    except BaselineSkipped as exc:
        return [_excluded(baseline.name, unit, f"baseline: {exc}")], None
    except TRANSIENT:
        raise
    except Exception as exc:  # noqa: BLE001 - one item's baseline must not stop the others
        return [_excluded(baseline.name, unit, f"baseline failed: {type(exc).__name__}: {exc}")], None
    return [
        versioned(
            {"baseline": baseline.name, "unit": unit.unit_id, **r.model_dump(mode="json", exclude={"info"})}
        )
        for r in records
    ], made


def baselines_ahead(stage: Stage[Any], unit: Unit, context: StageContext) -> dict[str, BaselineScored]:
    """The unit's baselines that never read the run's output (``reads_output=False``), scored before the unit
    has one: :func:`unit_baselines` takes them as they are."""
    return {
        baseline.name: score_baseline(stage, baseline, unit, {}, context)
        for baseline in stage.baselines
        if not baseline.reads_output
    }


def unit_baselines(
    stage: Stage[Any],
    unit: Unit,
    output: dict[str, Any],
    context: StageContext,
    ahead: dict[str, BaselineScored] | None = None,
) -> dict[str, Any]:
    """The unit's record of ``baseline_scores.jsonl``: every baseline of ``stage`` built from the unit (and,
    for ranking, its output's pool) and scored by the stage's ``score()`` — its rows ({baseline, unit, stage,
    article, item, metrics, …}; an item a baseline cannot be built for is a row with ``excluded`` set to the
    reason) — and, when the stage has a floor, the baseline outputs the floor reads. ``ahead``: baselines
    already scored by :func:`baselines_ahead` for this unit. CPU-bound (scoring embeds): a worker thread."""
    rows: list[dict[str, Any]] = []
    outputs: dict[str, Any] = {}
    for baseline in stage.baselines:
        found = (ahead or {}).get(baseline.name) if not baseline.reads_output else None
        baseline_rows, made = (
            found if found is not None else score_baseline(stage, baseline, unit, output, context)
        )
        rows += baseline_rows
        if floor_keys(stage.metrics) and made is not None:
            outputs[baseline.name] = made
    return {
        "stage": unit.stage,
        "article": unit.article,
        "unit": unit.unit_id,
        "output_sha256": output_digest(output),
        "baselines": baseline_names(stage),
        "rows": rows,
        "outputs": outputs,
    }


def current_record(
    record: dict[str, Any] | None, stage: Stage[Any], output: dict[str, Any]
) -> dict[str, Any] | None:
    """``record`` when it was built from ``output`` by the stage's baselines of now; else None (score them
    again)."""
    if record is None or record.get("baselines") != baseline_names(stage):
        return None
    return record if record.get("output_sha256") == output_digest(output) else None


def derived_current(rundir: RunDir) -> bool:
    """True when floors.jsonl and baselines.jsonl exist and were computed from exactly the outputs and results
    now on disk (their stamp matches); else they must be computed again."""
    stamp = rundir.file(STAMP_FILE)
    if not (stamp.exists() and rundir.file(FLOORS_FILE).exists() and rundir.file(BASELINES_FILE).exists()):
        return False
    try:
        recorded = json.loads(stamp.read_text(encoding="utf-8")).get("inputs_sha256")
    except (OSError, ValueError, AttributeError):
        return False
    return bool(recorded == inputs_digest(rundir))


# --------------------------------------------------------------------------- beside the run in metrics.json


def headline_keys(stage: str, metrics: dict[str, Any]) -> list[str]:
    """The metrics compared with the baselines: those the stage declares ``vs_baselines`` (else its paired
    ones), each embedding metric followed by its rescaled key; only those the run has."""
    from ruwikibench.reporting.tables import stage_headlines
    from ruwikibench.stage.metric import RESCALED_SUFFIX, is_twin
    from ruwikibench.storage.results import StageMetrics

    try:
        declared = baseline_keys(get_stage(stage).metrics)
    except KeyError:  # a stage not registered here: every metric of the run
        declared = [
            key
            for h in stage_headlines(stage, StageMetrics.model_validate(metrics))
            for key in (h.key, *([h.key + RESCALED_SUFFIX] if h.floor else []))
        ]
    run = metrics.get("metrics", {})
    return [
        key for key in declared if key in run or (is_twin(key) and key.removesuffix(RESCALED_SUFFIX) in run)
    ]


def _floor_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Baseline rows with their item floor as ``metrics`` (and the references left out as copies of the
    baseline's output as ``copied``): the shape of floors.jsonl rows."""
    return [
        {**r, "metrics": r.get("floor") or {}, "copied": r.get("floor_copied") or []}
        for r in rows
        if r.get("floor") or r.get("floor_copied")
    ]


def no_floor_reason(who: str, floors: list[dict[str, Any]], items: list[tuple[str, str]], key: str) -> str:
    """Why ``who`` has no usable floor of ``key`` on ``items`` ('' when it has one): its items were floored
    only against references their outputs copy, or it has no floor row, or its floor is 100."""
    rows = {(str(r["article"]), str(r["item"])): r for r in floors}
    values = [rows[i]["metrics"][key] for i in items if key in rows.get(i, {}).get("metrics", {})]
    if values and sum(values) / len(values) < 1.0:
        return ""
    if values:
        return f"{who}'s floor is 100: every reference it was floored against scores as a perfect match"
    copying = [i for i in items if rows.get(i, {}).get("copied")]
    if copying:
        article, item = copying[0]
        first = rows[copying[0]]["copied"][0]
        return (
            f"{who} has no floor: the outputs of {len(copying)} of {len(items)} items copy every reference "
            f"of another article they could be floored against (first: {article}/{item} copies {first})"
        )
    if not rows:
        return f"{who} has no floor (none was computed for this stage)"
    return (
        f"{who} has no floor on its {len(items)} items (outputs empty once the scorer filters them, or no "
        "reference of another article to draw)"
    )


def _no_floor(best: str, alignment: Any, reasons: list[str]) -> dict[str, Any]:
    """A compared rescaled metric that has no floor on one side: no difference, the reason instead."""
    nan = float("nan")
    return {
        "baseline": best,
        "difference": {"mean": nan, "low": nan, "high": nan, "n": 0},
        "p_value": None,
        "items": len(alignment.keys),
        "left_out": alignment.left_out(),
        "verdict": "no floor",
        "reason": "; ".join(r for r in reasons if r) or "no floor",
    }


def _verdict(row: Any, baseline: str) -> str:
    if row.shared == 0:
        return "no shared item"
    if row.too_few:
        return "cannot be significant"
    return {"run": "better", baseline: "worse"}.get(row.winner, "no significant difference")


def versus_baselines(
    stage: str,
    data: dict[str, Any],
    records: list[dict[str, Any]],
    floors: list[dict[str, Any]],
    baselines: dict[str, list[dict[str, Any]]],
) -> dict[str, Any]:
    """Per compared metric: the best baseline (the highest mean; the lowest where lower is better) and the
    paired difference run − that baseline over the items both scored
    (:mod:`ruwikibench.reporting.paired`: bootstrap CI, randomization p (exact up to 16 items), for a rescaled
    metric each item's score and floor kept together), with a verdict that follows the metric's direction."""
    from ruwikibench.reporting.paired import align, compare_metric, compare_rescaled, stage_items

    run = stage_items(records, floors, stage)
    out: dict[str, Any] = {}
    for key in headline_keys(stage, data):
        raw = key.removesuffix(RESCALED_SUFFIX)
        direction = metric_direction(stage, raw)
        best = _best_baseline(data, key, direction) or (
            _best_baseline(data, raw, direction) if key != raw else None
        )
        if best is None:
            continue
        base = stage_items(baselines[best], _floor_rows(baselines[best]), stage)
        alignment = align(base, run, raw)
        names = (best, "run")
        row = (
            compare_rescaled(stage, key, raw, names, alignment, base, run)
            if key != raw
            else compare_metric(stage, key, raw, names, alignment)
        )
        if key != raw and (row is None or not math.isfinite(row.difference.mean)):
            reasons = [
                no_floor_reason("the run", floors, alignment.keys, raw),
                no_floor_reason(f"baseline {best}", _floor_rows(baselines[best]), alignment.keys, raw),
            ]
            out[key] = _no_floor(best, alignment, reasons)
            continue
        if row is None:
            continue
        row = replace(row, direction=direction)
        out[key] = {
            "baseline": best,
            "difference": row.difference.model_dump(),
            "p_value": row.p,
            "items": row.shared,
            "left_out": row.alignment.left_out(),
            "verdict": _verdict(row, best),
        }
    return out


def metric_direction(stage: str, key: str) -> str:
    """The direction the stage declares for ``key`` ('higher', 'lower' or 'neither'); 'higher' for a metric
    or stage it does not declare."""
    try:
        declared = by_key(get_stage(stage).metrics)
    except KeyError:
        return "higher"
    metric = declared.get(key)
    return metric.direction if metric is not None else "higher"


def _best_baseline(data: dict[str, Any], key: str, direction: str = "higher") -> str | None:
    """The best baseline on ``key`` (failures excluded): the highest mean, the lowest where lower is better;
    None when none has one."""
    means = {
        name: summary["metrics"].get(key, {}).get("failures_excluded", {}).get("mean")
        for name, summary in data.get("baselines", {}).items()
    }
    means = {name: m for name, m in means.items() if m is not None and not math.isnan(m)}
    if not means:
        return None
    pick = min if direction == "lower" else max
    return pick(sorted(means), key=lambda name: means[name])


def add_baselines(
    metrics: dict[str, Any],
    results: list[dict[str, Any]],
    floors: list[dict[str, Any]],
    rows: list[dict[str, Any]],
) -> dict[str, Any]:
    """``metrics[stage]['baselines'][name]`` (the baseline's metrics and counts, as a run's) and
    ``metrics[stage]['vs_baseline'][key]`` for every stage of the run that has baseline rows."""
    from ruwikibench.aggregation.metrics import aggregate
    from ruwikibench.storage.results import BaselineRow, result_rows

    result_rows(rows, BASELINES_FILE, BaselineRow)  # any version; a row that does not fit names its item
    by_stage: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        by_stage[row["stage"]][row["baseline"]].append(row)
    for stage, named in by_stage.items():
        if stage not in metrics:
            continue
        summaries = {}
        for name, base in sorted(named.items()):
            summary = aggregate(base, [], _floor_rows(base)).get(stage, {})
            summaries[name] = {
                k: summary[k] for k in ("metrics", "counts", "excluded_reasons") if k in summary
            }
        metrics[stage]["baselines"] = summaries
        stage_records = [r for r in results if r["stage"] == stage]
        stage_floors_ = [r for r in floors if r["stage"] == stage]
        try:
            metrics[stage]["vs_baseline"] = versus_baselines(
                stage, metrics[stage], stage_records, stage_floors_, named
            )
        except Exception as exc:  # noqa: BLE001 - the run's own metrics stand; the report says why none
            log.warning("baseline comparison of stage %s failed: %s: %s", stage, type(exc).__name__, exc)
            metrics[stage]["vs_baseline_error"] = f"{type(exc).__name__}: {exc}"
    return metrics
