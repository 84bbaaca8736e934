"""Aggregate per-item scores into run metrics: means with bootstrap 95% CIs, two views of failures.

View ``failures_excluded``: failed items are left out. View ``failures_as_zero``: every failed unit counts as
one item scoring 0 on each metric that its failure took away — every metric of its stage, unless the stage's
``failure_keys(reason, keys)`` narrows it (a failed rerank leaves the BM25 baseline and the pool recall
standing: only the rerank metrics are zeroed). Paper exclusions (e.g. a section with no source snippet) are
excluded in both views and counted by reason. Nothing is dropped silently: counts say what happened to every
item (``evaluated``: items scored; ``zeroed``: per metric, the failures counted as 0 in ``failures_as_zero``).

Records are taken in a stable order (stage, article, item) before averaging and resampling, so the same
per-item values give the same means and intervals whatever order the units finished in.

Embedding metrics with a permutation floor (rows of floors.jsonl, see :mod:`ruwikibench.aggregation.floors`)
get two more keys: ``<key>_floor`` (mean of the item floors, bootstrap CI) and ``<key>_rescaled``
((mean − floor) / (1 − floor), bootstrap CI resampling items with their (score, floor) pairs; failures count
as raw 0 with no floor).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from ruwikibench.evaluators.floor import rescaled_estimate
from ruwikibench.evaluators.stats import bootstrap_ci
from ruwikibench.stage.metric import FLOOR_SUFFIX, RESCALED_SUFFIX
from ruwikibench.storage.jsonl import item_key, unit_key

VIEWS = ("failures_excluded", "failures_as_zero")


def aggregate(
    results: list[dict[str, Any]], errors: list[dict[str, Any]], floors: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """``results``: ScoreRecord dicts; ``errors``: unit failures ({stage, article, unit, reason}); ``floors``:
    rows of floors.jsonl ({stage, article, item, metrics, against}) -> metrics dict."""
    by_stage: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in sorted(
        results, key=item_key
    ):  # a stable order: the intervals never depend on finishing order
        by_stage[record["stage"]].append(record)
    failed: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for error in sorted(errors, key=unit_key):
        failed[error["stage"]].append(error)
    floor_rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in sorted(floors or [], key=item_key):
        floor_rows[row["stage"]].append(row)
    return {
        stage: _stage_metrics(stage, by_stage[stage], failed[stage], floor_rows[stage])
        for stage in sorted(set(by_stage) | set(failed))
    }


def floor_metrics(
    key: str, scored: list[dict[str, Any]], zeros: int, floors: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """``<key>_floor`` (mean of the item floors) and ``<key>_rescaled`` in both views, the rescaled CI
    resampling items with their (score, floor) pairs: a scored item without a floor row (an empty output) and
    a failure counted as 0 have a score and no floor. Nothing when no item has a floor for ``key``."""
    by_item = {item_key(row): row["metrics"][key] for row in floors if key in row["metrics"]}
    if not by_item:
        return {}
    pairs = [
        (r["metrics"][key], by_item.get(item_key(r), float("nan")))
        for r in scored
        if r["metrics"].get(key) is not None
    ]
    values, aligned = [v for v, _ in pairs], [f for _, f in pairs]
    estimate = bootstrap_ci(list(by_item.values())).model_dump()
    return {
        key + FLOOR_SUFFIX: {"failures_excluded": estimate, "failures_as_zero": estimate},
        key + RESCALED_SUFFIX: {
            "failures_excluded": rescaled_estimate(values, aligned).model_dump(),
            "failures_as_zero": rescaled_estimate(
                values + [0.0] * zeros, aligned + [float("nan")] * zeros
            ).model_dump(),
        },
    }


def zeroed_keys(stage: str, reason: str, keys: list[str]) -> list[str]:
    """The metric keys a failure takes away: the stage's ``failure_keys(reason, keys)``, else all of them."""
    from ruwikibench.stage.registry import get_stage

    try:
        found = get_stage(stage)
    except Exception:  # noqa: BLE001 - a stage module that is not importable here: zero everything
        return list(keys)
    return list(found.failure_keys(reason, keys))


def _stage_metrics(
    stage: str, records: list[dict[str, Any]], failures: list[dict[str, Any]], floors: list[dict[str, Any]]
) -> dict[str, Any]:
    scored = [r for r in records if not r.get("excluded")]
    keys = sorted({key for r in scored for key in r["metrics"]})
    zeros = Counter(key for f in failures for key in zeroed_keys(stage, str(f.get("reason", "")), keys))
    metrics: dict[str, Any] = {}
    for key in keys:
        values = [r["metrics"][key] for r in scored if key in r["metrics"] and r["metrics"][key] is not None]
        with_zeros = values + [0.0] * zeros[key]
        metrics[key] = {
            "failures_excluded": bootstrap_ci(values).model_dump(),
            "failures_as_zero": bootstrap_ci(with_zeros).model_dump(),
        }
        metrics.update(floor_metrics(key, scored, zeros[key], floors))
    judged = judgement_counts(records)
    reasons = Counter(str(r["excluded"]) for r in records if r.get("excluded"))
    failure_reasons = Counter(str(f.get("reason", "error")).split(":")[0] for f in failures)
    data: dict[str, Any] = {
        "counts": {
            "evaluated": len(scored),
            "excluded": sum(reasons.values()),
            "failed_units": len(failures),
            "articles": len({r["article"] for r in records} | {f["article"] for f in failures}),
            "zeroed": {key: zeros[key] for key in keys if zeros[key]},
            **judged,
        },
        "excluded_reasons": dict(reasons),
        "failure_reasons": dict(failure_reasons),
        "metrics": metrics,
    }
    if floors:
        data["floor"] = floor_info(floors)
    return data


def floor_info(floors: list[dict[str, Any]]) -> dict[str, Any]:
    """metrics.json's ``floor`` block: how the floors were measured; ``copied`` (pairs left out because the
    output copies the reference) and ``unfloored`` (items left with no reference at all) only when not 0."""
    floored = [row for row in floors if row.get("metrics")]
    info: dict[str, Any] = {
        "method": "permutation: each output against the references of other articles (other items of the "
        "same article when the pool has no other article)",
        "items": len(floored),
        "pairs": sum(len(row.get("against", [])) for row in floors),
        "per_item_max": max(len(row.get("against", [])) for row in floors),
        "seed": floors[0].get("seed"),
    }
    copied = sum(len(row.get("copied") or []) for row in floors)
    if copied:
        info["copied"] = copied
        info["unfloored"] = len(floors) - len(floored)
    return info


FAILED_JUDGEMENTS = ("error", "unparseable")


def judgement_counts(records: list[dict[str, Any]]) -> dict[str, Any]:
    """LLM judgements made inside the stage's units (e.g. ranking's relevance calls,
    ``info['judged_<source>']``): ``judgements`` (all), ``failed_judgements`` (request error or unparseable
    answer), ``judgement_sources``; empty for stages that make none."""
    by_source: Counter[str] = Counter()
    for record in records:
        for key, value in (record.get("info") or {}).items():
            if key.startswith("judged_") and isinstance(value, int):
                by_source[key.removeprefix("judged_")] += value
    if not by_source:
        return {}
    return {
        "judgements": sum(by_source.values()),
        "failed_judgements": sum(by_source[s] for s in FAILED_JUDGEMENTS),
        "judgement_sources": dict(by_source),
    }


def metrics_rows(run_id: str, metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """Flat rows for metrics.csv."""
    rows = []
    for stage, data in metrics.items():
        for key, views in data["metrics"].items():
            for view in VIEWS:
                est = views[view]
                rows.append({"run": run_id, "stage": stage, "metric": key, "view": view, **est})
    return rows
