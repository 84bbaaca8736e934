"""Per-item scores as CSV files beside report.html (``<stage>_items.csv``), linked from each stage's section:
one row per run and scored or excluded item, the metric values as results.jsonl keeps them."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ruwikibench.reporting.data import RunData
from ruwikibench.reporting.tables import stage_columns
from ruwikibench.storage.durable import write_atomic
from ruwikibench.storage.results import ResultRow

FIXED = ["run", "article", "item", "excluded"]


def item_csv_name(stage: str) -> str:
    return f"{stage}_items.csv"


def _latest(records: list[ResultRow]) -> list[ResultRow]:
    """The last record of each item (a rescored item counts once, as its latest score)."""
    return list({record.item: record for record in records}.values())


def item_rows(data: list[RunData], stage: str) -> list[list[str]]:
    """Header first: run, article, item, the exclusion reason ('' when scored), then each metric key of the
    stage (its declared columns first, in table order, then any other key the records carry). Values are
    the records' own (fractions, not ×100); '' where an item has no value."""
    records = [
        (run.name, article, record)
        for run in data
        for (name, article), found in sorted(run.results.items())
        if name == stage
        for record in _latest(found)
    ]
    declared = [key for _, key in stage_columns(stage) if any(key in r.metrics for _, _, r in records)]
    others = sorted({key for _, _, r in records for key in r.metrics} - set(declared))
    keys = declared + others
    rows = [FIXED + keys]
    for run, article, record in records:
        values = ["" if (v := record.metrics.get(key)) is None else repr(float(v)) for key in keys]
        rows.append([run, article, record.item, record.excluded or "", *values])
    return rows


def write_item_csvs(data: list[RunData], stages: list[str], out: Path) -> dict[str, str]:
    """Write ``out/<stage>_items.csv`` for every stage with a scored or excluded item; stage -> file name."""
    written = {}
    for stage in stages:
        rows = item_rows(data, stage)
        if len(rows) < 2:
            (out / item_csv_name(stage)).unlink(missing_ok=True)  # no stale file from an earlier report
            continue
        text = io.StringIO(newline="")
        csv.writer(text).writerows(rows)
        write_atomic(out / item_csv_name(stage), text.getvalue())  # secrets redacted
        written[stage] = item_csv_name(stage)
    return written
