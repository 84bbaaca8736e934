"""Aggregate per-item scores into run metrics: means with bootstrap 95% CIs, two views of failures.

View ``failures_excluded``: failed items are left out. View ``failures_as_zero``: every failed unit counts as one
item scoring 0 on each metric of its stage. Paper exclusions (e.g. a section with no source snippet) are
excluded in both views and counted by reason. Nothing is dropped silently: counts say what happened to every item.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from ruwikibench.evaluators.stats import bootstrap_ci

VIEWS = ("failures_excluded", "failures_as_zero")


def aggregate(results: list[dict[str, Any]], errors: list[dict[str, Any]]) -> dict[str, Any]:
    """``results``: ScoreRecord dicts; ``errors``: unit failures ({stage, article, unit, reason}) -> metrics dict."""
    by_stage: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in results:
        by_stage[record["stage"]].append(record)
    failed: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for error in errors:
        failed[error["stage"]].append(error)
    return {stage: _stage_metrics(by_stage[stage], failed[stage]) for stage in sorted(set(by_stage) | set(failed))}


def _stage_metrics(records: list[dict[str, Any]], failures: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in records if not r.get("excluded")]
    keys = sorted({key for r in scored for key in r["metrics"]})
    metrics: dict[str, Any] = {}
    for key in keys:
        values = [r["metrics"][key] for r in scored if key in r["metrics"] and r["metrics"][key] is not None]
        metrics[key] = {
            "failures_excluded": bootstrap_ci(values).model_dump(),
            "failures_as_zero": bootstrap_ci(values + [0.0] * len(failures)).model_dump(),
        }
    reasons = Counter(str(r["excluded"]) for r in records if r.get("excluded"))
    failure_reasons = Counter(str(f.get("reason", "error")).split(":")[0] for f in failures)
    return {
        "counts": {
            "evaluated": len(scored),
            "excluded": sum(reasons.values()),
            "failed_units": len(failures),
            "articles": len({r["article"] for r in records} | {f["article"] for f in failures}),
        },
        "excluded_reasons": dict(reasons),
        "failure_reasons": dict(failure_reasons),
        "metrics": metrics,
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
