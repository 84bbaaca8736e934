"""What ``report.html`` shows: the runs, the settings they differ in, one paper-layout table (and chart) per
stage, the judge tables, failures and exclusions, the article index and, for several runs, per-article deltas.
The tables' numbers come from :mod:`ruwikibench.reporting.tables`; this module arranges them for the
template."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruwikibench.reporting.data import Run, RunData
from ruwikibench.reporting.deltas import delta_block, headline, shown
from ruwikibench.reporting.failures import stage_failures
from ruwikibench.reporting.paired import PairedRow, no_winner_line
from ruwikibench.reporting.paper import PaperBlock, paper_notes, with_paper_rows
from ruwikibench.reporting.plots import chart_description
from ruwikibench.reporting.settings import SHORT_VALUE, SettingsTable, settings_table, shorten
from ruwikibench.reporting.tables import (
    GLOSSARY_NOTE,
    PAIRED_NOTE,
    baseline_lines,
    column_marks,
    column_meanings,
    floor_note,
    glossary_rows,
    marked,
    marked_paired_table,
    not_run_note,
    paper_table,
    run_stages,
    stage_columns,
    stage_label,
    stage_table,
)
from ruwikibench.stage.metric import FLOOR_SUFFIX, RESCALED_SUFFIX, is_twin
from ruwikibench.storage.results import StageMetrics

__all__ = ["delta_block", "headline", "report_context"]


def data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()


def report_context(
    data: list[RunData],
    stages: list[str],
    view: str,
    charts: dict[str, Path],
    articles: list[str],
    pages: dict[str, str],
    paired: dict[str, list[PairedRow]] | None = None,
    paper: dict[str, PaperBlock] | None = None,
) -> dict[str, Any]:
    paired, paper = paired or {}, paper or {}
    runs: list[Run] = [(r.name, r.metrics, r.rundir) for r in data]
    stage_blocks = []
    for stage in stages:
        present = [(r.name, r.metrics[stage]) for r in data if stage in r.metrics]
        skipped = [(r.name, run_stages(r.spec, r.metrics)) for r in data if stage not in r.metrics]
        absent = not_run_note(stage, skipped)
        floors = [m.floor for _, m in present if m.floor]
        rows = stage_table(stage, present, view)
        with_paper = with_paper_rows(stage, rows, paper.get(stage), present[0][1])
        failures = stage_failures(
            stage, [(r.name, r.metrics[stage], r.errors) for r in data if stage in r.metrics]
        )
        stage_blocks.append(
            {
                "name": stage,
                "paper": paper_table(stage),
                "label": stage_label(stage),
                "rows": with_paper,
                "row_classes": [""] * (len(rows) - 1) + ["paper"] * (len(with_paper) - len(rows)),
                "paper_notes": [
                    note.replace("**", "") for note in paper_notes(stage, paper.get(stage), present[0][1])
                ],
                "groups": column_groups(stage, present[0][1] if present else None, view),
                "header": grouped_header(stage, present[0][1] if present else None, view),
                "failures": failures,
                "chart": data_uri(charts[stage]) if stage in charts and charts[stage].exists() else None,
                "alt": chart_description(
                    stage, [name for name, _ in present], failures, present[0][1] if present else None
                )
                + (f" {absent}" if absent else ""),
                "not_run": absent,
                "floor_note": floor_note(floors[0]) if floors else "",
                "glossary": glossary_rows(stage)[1:],
                "glossary_note": GLOSSARY_NOTE,
                "baselines": [
                    line.removeprefix("- ").replace("**", "")
                    for name, m in present
                    for line in baseline_lines(stage, m, name)
                ],
                "paired": paired_block(paired.get(stage, [])),
                "items_csv": None,  # set by html.write_html_report once the file is written
            }
        )
    return {
        "title": "RuWikiBench report" if len(data) == 1 else "RuWikiBench comparison",
        "created": time.strftime("%Y-%m-%d %H:%M"),
        "view": view.replace("_", " "),
        "runs": [run_summary(r) for r in data],
        "settings": settings_block(settings_table(runs)),
        "stages": stage_blocks,
        "judges": judge_blocks(data),
        "problems": (problems := problem_rows(data, pages)),
        "problem_count": sum(p["count"] for p in problems),
        "index": index_table(data, stages, articles, pages),
        "deltas": [d for stage in stages if (d := delta_block(data, stage, articles, pages))],
    }


def settings_block(table: SettingsTable) -> dict[str, Any]:
    """The settings for the template: per group, each row's cells shortened with the whole value for hover."""

    def groups(rows: list[Any], columns: int | None = None) -> list[dict[str, Any]]:
        return [
            {
                "name": group,
                "rows": [
                    {
                        "key": row.key,
                        "cells": [{"text": shorten(v, SHORT_VALUE), "full": v} for v in row.values[:columns]],
                    }
                    for row in members
                ],
            }
            for group, members in table.by_group(rows)
        ]

    return {
        "runs": table.runs,
        "differing": groups(table.differing),
        "same": groups(table.same, 1),
        "same_count": len(table.same),
    }


def column_groups(stage: str, metrics: StageMetrics | None, view: str) -> list[dict[str, Any]]:
    """The stage table's header groups, left to right (label, columns spanned, class of the ``<colgroup>``):
    the run, each embedding metric with its floor and rescaled columns, runs of other metrics, the item
    counts. Their spans add up to the table's columns (:func:`~ruwikibench.reporting.tables.stage_table`)."""
    columns = stage_columns(stage, metrics)
    keys = {key for _, key in columns}
    groups: list[dict[str, Any]] = [{"label": "", "span": 1, "cls": "col-run"}]
    for title, key in columns:
        if is_twin(key):
            groups[-1]["span"] += 1
        elif key + FLOOR_SUFFIX in keys:
            groups.append({"label": f"{title}: raw, floor, rescaled", "span": 1, "cls": "col-floor"})
        elif groups[-1]["cls"] == "col-metrics":
            groups[-1]["span"] += 1
        else:
            groups.append({"label": "metrics", "span": 1, "cls": "col-metrics"})
    groups.append({"label": "items", "span": 4 if view == "failures_as_zero" else 3, "cls": "col-counts"})
    return groups


def grouped_header(stage: str, metrics: StageMetrics | None, view: str) -> list[dict[str, str]]:
    """The stage table's column headers under :func:`column_groups`: a floor or rescaled column is called just
    'floor' / 'rescaled' (its group names the metric; ``full`` keeps the whole title for the hover text)."""
    header = stage_table(stage, [("", metrics or StageMetrics())], view, baselines=False)[0]
    titles = {key: title for title, key in stage_columns(stage, metrics)}
    short = {titles[k]: "floor" for k in titles if k.endswith(FLOOR_SUFFIX)}
    short |= {titles[k]: "rescaled" for k in titles if k.endswith(RESCALED_SUFFIX)}
    meanings, marks = column_meanings(stage), column_marks(stage)

    def label(title: str) -> str:
        mark = marks.get(title, title).removeprefix(title)
        return short[title] + mark if title in short else title + mark

    return [{"label": label(title), "full": meanings.get(title, title)} for title in header]


def paired_block(rows: list[PairedRow]) -> dict[str, Any] | None:
    """The stage's paired differences against the first run (the table report.md prints), None for one run."""
    if not rows:
        return None
    return {
        "note": PAIRED_NOTE.replace("*", ""),
        "rows": marked_paired_table(rows),
        "verdicts": [row.sentence() for row in rows if row.winner is not None],
        "none": no_winner_line(rows),
    }


def run_summary(run: RunData) -> dict[str, Any]:
    spec = run.spec
    session = spec.get("last_session", {})
    llm = session.get("llm", {})
    return {
        "name": run.name,
        "path": str(run.rundir.path),
        "models": ", ".join(f"{role}: {m.get('name')}" for role, m in spec.get("models", {}).items()),
        "embedder": spec.get("embedder", ""),
        "dataset": dataset_name(spec.get("dataset") or {}),
        "dataset_id": (spec.get("dataset") or {}).get("id", ""),
        "dataset_path": (spec.get("dataset") or {}).get("path") or "",
        "commit": (spec.get("git_commit") or "")[:10],
        "wall_time_s": session.get("wall_time_s"),
        "calls": sum(u.get("calls", 0) for u in llm.values()),
        "tokens": sum(u.get("prompt_tokens", 0) + u.get("completion_tokens", 0) for u in llm.values()),
        "dataset_note": run.dataset_note,
    }


def dataset_name(record: dict[str, Any]) -> str:
    """The dataset as a person names it: the last part of the path the run was given (a directory, a
    RuWikiBench .json file, ``hub:REPO/FILE``); '' when the run recorded no path."""
    path = str(record.get("path") or "").rstrip("/\\")
    return path.replace("\\", "/").rsplit("/", 1)[-1] if path else ""


def citation_block(data: list[RunData]) -> list[dict[str, Any]]:
    """One table of the runs judged by ``judge citations`` (recall, precision, unsupported share with CIs)."""
    from ruwikibench.evaluators.judges.citations import summarize_citations

    rows = [{"run": run.name, **row} for run in data for row in summarize_citations(run.rundir.path)]
    if not rows:
        return []
    header = list(rows[0])
    return [
        {
            "title": "Citation faithfulness (×100, mean [95% CI] over sentences / citations)",
            "rows": [header, *[[r[h] for h in header] for r in rows]],
            "charts": [],
        }
    ]


def judge_blocks(data: list[RunData]) -> list[dict[str, Any]]:
    from ruwikibench.evaluators.judges import judge_tables

    blocks = citation_block(data)
    for run in data:
        for title, rows in judge_tables(run.rundir.path).items():
            header = list(rows[0])
            blocks.append(
                {
                    "title": f"{title} — {run.name}",
                    "rows": [header, *[[str(r[h]) for h in header] for r in rows]],
                    "charts": [],
                }
            )
        charts = [data_uri(p) for p in sorted(run.rundir.path.glob("judge_pairwise_*.png"))]
        if charts and blocks:
            blocks[-1]["charts"] = charts
    return blocks


def problem_rows(data: list[RunData], pages: dict[str, str]) -> list[dict[str, Any]]:
    """Failed units (their last error) and excluded items (the paper's exclusion reason): one row per run,
    stage, kind and reason, with the articles and items it covers, so a reason shared by many units is shown
    once."""
    rows: dict[tuple[str, str, str, str], dict[str, Any]] = {}

    def add(run: str, stage: str, kind: str, reason: str, article: str, item: str) -> None:
        row = rows.setdefault(
            (run, stage, kind, reason),
            {
                "run": run,
                "stage": stage,
                "kind": kind,
                "reason": reason,
                "count": 0,
                "articles": {},
            },
        )
        row["count"] += 1
        row["articles"].setdefault(article, {"article": article, "page": pages.get(article), "items": []})
        row["articles"][article]["items"].append(item)

    for run in data:
        for error in run.errors:
            add(run.name, error["stage"], "failed", str(error["reason"]), error["article"], error["unit"])
        for (stage, article), records in sorted(run.results.items()):
            for record in records:
                if record.excluded:
                    add(run.name, stage, "excluded", str(record.excluded), article, record.item)
    return [row | {"articles": list(row["articles"].values())} for row in rows.values()]


@dataclass
class IndexColumn:
    stage: str
    title: str
    key: str
    run: RunData


def index_table(
    data: list[RunData], stages: list[str], articles: list[str], pages: dict[str, str]
) -> dict[str, Any]:
    """One row per article: each run's headline score per stage (×100), failures marked; a run that did not
    run a stage has no column of it."""
    columns: list[IndexColumn] = []
    for stage in stages:
        metrics = next((r.metrics[stage] for r in data if stage in r.metrics), None)
        title, key = headline(stage, metrics)
        columns += [IndexColumn(stage, title, key, r) for r in data if stage in r.metrics]
    rows = []
    for article in articles:
        cells = [
            {
                "value": shown(c.stage, c.key, c.run.article_value(c.stage, article, c.key)),
                "failed": bool(c.run.failed(c.stage, article)),
            }
            for c in columns
        ]
        rows.append({"article": article, "page": pages[article], "cells": cells})
    several = len(data) > 1  # the run in brackets: '·' is the mark of a column with no better direction
    header = [
        f"{c.stage} {marked(c.stage, c.title)}" + (f" ({c.run.name})" if several else "") for c in columns
    ]
    return {"header": header, "rows": rows}
