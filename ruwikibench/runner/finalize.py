"""A run's metrics (metrics.json, metrics.csv) and report (report.md), recomputed from its score records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruwikibench.aggregation.baselines import BASELINES_FILE, add_baselines
from ruwikibench.aggregation.metrics import aggregate, metrics_rows
from ruwikibench.runtime.faults import fault_point
from ruwikibench.storage.durable import write_atomic
from ruwikibench.storage.rundir import FLOORS_FILE, RunDir


def finalize(rundir: RunDir) -> dict[str, Any]:
    """Recompute metrics.json/.csv and report.md from the latest score records and the errors still open."""
    from ruwikibench.reporting.run_report import write_run_report
    from ruwikibench.storage.results import METRICS_FILE, metrics_json, parse_metrics
    from ruwikibench.storage.stamps import stamp_metrics

    errors = rundir.open_errors()
    results, floors = rundir.results(), list(rundir.read(FLOORS_FILE))
    metrics = aggregate(results, errors, floors)
    add_baselines(metrics, results, floors, list(rundir.read(BASELINES_FILE)))
    fault_point("before_metrics")
    rundir.write_json(METRICS_FILE, metrics_json(metrics))
    stamp_metrics(
        rundir
    )  # report tells a stale metrics.json from a current one (ruwikibench/storage/stamps.py)
    fault_point("before_csv")
    _write_csv(rundir.file("metrics.csv"), metrics_rows(rundir.path.name, metrics))
    fault_point("before_report")
    write_run_report(rundir, parse_metrics(metrics).stages, errors)
    return metrics


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    import csv
    import io

    fields = ["run", "stage", "metric", "view", "mean", "low", "high", "n"]
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=fields)
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(path, buffer.getvalue())
