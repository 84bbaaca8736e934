"""The HTML report: ``report.html`` (the paper-layout tables with CIs, charts, settings, failures and exclusions,
the article index and, for several runs, per-article deltas) and one page per article under ``articles/``
(reference beside generated, each item's scores, the node trace and timeline of every unit).

Everything a page needs is inside it (CSS, the sorting script, charts as data URIs): no request at view time.
The tables' numbers come from :mod:`ruwikibench.runner.report`; this module only lays them out.
"""

from __future__ import annotations

import base64
import json
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from ruwikibench.dataset import Dataset
from ruwikibench.evaluators.floor import FLOOR_SUFFIX, RESCALED_SUFFIX
from ruwikibench.jsonl import latest, unit_key
from ruwikibench.rundir import RunDir
from ruwikibench.runner.article_views import ArticleRecords, article_view
from ruwikibench.runner.jsonl_index import JsonlIndex
from ruwikibench.runner.report import (
    PAPER_TABLE,
    count_keys,
    floor_note,
    metric_scale,
    report_stages,
    settings_table,
    stage_columns,
    stage_table,
)

TEMPLATES = Path(__file__).parent / "templates"
ARTICLES_DIR = "articles"
OUTPUT_CHARS = 6000  # a node's output shown on its page; the rest stays in nodes.jsonl
TOP_DELTAS = 10

Run = tuple[str, dict[str, Any], RunDir]


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = _num
    env.filters["signed"] = _signed
    return env


def _num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}"


def data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()


def headline(stage: str, metrics: dict[str, Any]) -> tuple[str, str]:
    """The (title, key) the article index and the deltas rank by: the stage's ``headline_key`` when it declares
    one, else its first column."""
    columns = [c for c in stage_columns(stage, metrics) if not c[1].endswith((FLOOR_SUFFIX, RESCALED_SUFFIX))]
    try:
        from ruwikibench.registry import get_stage

        key = getattr(get_stage(stage), "headline_key", None)
    except Exception:  # noqa: BLE001 - a stage module that cannot be imported: first column
        key = None
    return next((c for c in columns if c[1] == key), columns[0]) if columns else ("", "")


@dataclass
class RunData:
    """One run as the report reads it: per-article indexes of the big files, the small files in memory."""

    name: str
    metrics: dict[str, Any]
    rundir: RunDir
    spec: dict[str, Any]
    results: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    texts: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)
    outputs: JsonlIndex | None = None
    nodes: JsonlIndex | None = None
    dataset: Dataset | None = None
    dataset_note: str = ""

    @classmethod
    def load(cls, run: Run, datasets: dict[str, tuple[Dataset | None, str]]) -> RunData:
        from ruwikibench.rundir import open_errors

        name, metrics, rundir = run
        spec = rundir.read_json("spec.json") if rundir.file("spec.json").exists() else {}
        data = cls(name, metrics, rundir, spec)
        results = rundir.results()
        for record in results:
            data.results.setdefault((record["stage"], record["article"]), []).append(record)
        for text in rundir.generated():
            data.texts.setdefault((text["stage"], text["article"]), []).append(text)
        data.outputs = JsonlIndex(rundir.file("outputs.jsonl"))
        data.nodes = JsonlIndex(rundir.file("nodes.jsonl"))
        data.errors = open_errors(list(rundir.read("errors.jsonl")), data.outputs.units(), results)
        data.dataset, data.dataset_note = _dataset_of(spec, datasets)
        return data

    def articles(self) -> set[str]:
        names = {article for _, article in self.results} | {e["article"] for e in self.errors}
        return names | set(self.outputs.articles() if self.outputs else [])

    def article_value(self, stage: str, article: str, key: str) -> float | None:
        """Mean of ``key`` over the article's scored items of the stage (sections: its sections)."""
        values = [r["metrics"][key] for r in self.results.get((stage, article), [])
                  if not r.get("excluded") and key in r.get("metrics", {})]
        return sum(values) / len(values) if values else None

    def failed(self, stage: str, article: str) -> list[dict[str, Any]]:
        return [e for e in self.errors if e["stage"] == stage and e["article"] == article]


def _dataset_of(spec: dict[str, Any], cache: dict[str, tuple[Dataset | None, str]]) -> tuple[Dataset | None, str]:
    """The run's dataset (reference outlines, snippet relevance), loaded once per path; a note when unavailable."""
    path = str(spec.get("dataset", {}).get("path") or "")
    if path not in cache:
        from ruwikibench.runner.datasets import resolve_dataset

        try:
            cache[path] = (resolve_dataset(path)[0], "") if path else (None, "the run names no dataset")
        except Exception as exc:  # noqa: BLE001 - the report still shows what the run captured
            note = (f"dataset {path} not available ({type(exc).__name__}): reference outlines show the unit's H2 "
                    "headings, candidates are not marked relevant")
            cache[path] = (None, note)
    return cache[path]


def write_html_report(runs: list[Run], out: Path, view: str, charts: dict[str, Path]) -> Path:
    """Write ``out/report.html`` and ``out/articles/aNNNN.html``; returns report.html."""
    datasets: dict[str, tuple[Dataset | None, str]] = {}
    data = [RunData.load(run, datasets) for run in runs]
    stages = report_stages([r.metrics for r in data])
    articles = sorted(set().union(*(r.articles() for r in data)))
    pages = {article: f"{ARTICLES_DIR}/a{index:04d}.html" for index, article in enumerate(articles, 1)}
    env = environment()
    (out / ARTICLES_DIR).mkdir(parents=True, exist_ok=True)
    for index, article in enumerate(articles):
        context = article_context(data, stages, article, articles, index, pages)
        (out / pages[article]).write_text(env.get_template("article.html.j2").render(**context), encoding="utf-8")
    context = report_context(data, stages, view, charts, articles, pages)
    (out / "report.html").write_text(env.get_template("report.html.j2").render(**context), encoding="utf-8")
    return out / "report.html"


def report_context(data: list[RunData], stages: list[str], view: str, charts: dict[str, Path],
                   articles: list[str], pages: dict[str, str]) -> dict[str, Any]:
    runs: list[Run] = [(r.name, r.metrics, r.rundir) for r in data]
    stage_blocks = []
    for stage in stages:
        present = [(r.name, r.metrics[stage]) for r in data if stage in r.metrics]
        floors = [m["floor"] for _, m in present if m.get("floor")]
        stage_blocks.append({
            "name": stage, "paper": PAPER_TABLE.get(stage, ""), "rows": stage_table(stage, present, view),
            "chart": data_uri(charts[stage]) if stage in charts and charts[stage].exists() else None,
            "floor_note": floor_note(floors[0]) if floors else "",
        })
    return {
        "title": "RuWikiBench report" if len(data) == 1 else "RuWikiBench comparison",
        "created": time.strftime("%Y-%m-%d %H:%M"),
        "view": view.replace("_", " "),
        "runs": [run_summary(r) for r in data],
        "settings": settings_table(runs),
        "stages": stage_blocks,
        "judges": judge_blocks(data),
        "problems": problem_rows(data, pages),
        "index": index_table(data, stages, articles, pages),
        "deltas": [d for stage in stages if (d := delta_block(data, stage, articles, pages))],
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
        "dataset": spec.get("dataset", {}).get("id", ""),
        "commit": (spec.get("git_commit") or "")[:10],
        "wall_time_s": session.get("wall_time_s"),
        "calls": sum(u.get("calls", 0) for u in llm.values()),
        "tokens": sum(u.get("prompt_tokens", 0) + u.get("completion_tokens", 0) for u in llm.values()),
        "dataset_note": run.dataset_note,
    }


def citation_block(data: list[RunData]) -> list[dict[str, Any]]:
    """One table of the runs judged by ``judge citations`` (recall, precision, unsupported share with CIs)."""
    from ruwikibench.evaluators.judges.citations import summarize_citations

    rows = [{"run": run.name, **row} for run in data for row in summarize_citations(run.rundir.path)]
    if not rows:
        return []
    header = list(rows[0])
    return [{"title": "Citation faithfulness (×100, mean [95% CI] over sentences / citations)",
             "rows": [header, *[[r[h] for h in header] for r in rows]], "charts": []}]


def judge_blocks(data: list[RunData]) -> list[dict[str, Any]]:
    from ruwikibench.evaluators.judges import judge_tables

    blocks = citation_block(data)
    for run in data:
        for title, rows in judge_tables(run.rundir.path).items():
            header = list(rows[0])
            blocks.append({"title": f"{title} — {run.name}", "rows": [header, *[[str(r[h]) for h in header]
                                                                                 for r in rows]],
                           "charts": []})
        charts = [data_uri(p) for p in sorted(run.rundir.path.glob("judge_pairwise_*.png"))]
        if charts and blocks:
            blocks[-1]["charts"] = charts
    return blocks


def problem_rows(data: list[RunData], pages: dict[str, str]) -> list[dict[str, Any]]:
    """Failed units (their last error) and excluded items (the paper's exclusion reason), per run."""
    rows = []
    for run in data:
        for error in run.errors:
            rows.append({"run": run.name, "stage": error["stage"], "article": error["article"],
                         "page": pages.get(error["article"]), "item": error["unit"], "kind": "failed",
                         "reason": error["reason"]})
        for (stage, article), records in sorted(run.results.items()):
            for record in records:
                if record.get("excluded"):
                    rows.append({"run": run.name, "stage": stage, "article": article, "page": pages.get(article),
                                 "item": record["item"], "kind": "excluded", "reason": record["excluded"]})
    return rows


def _shown(stage: str, key: str, value: float | None) -> float | None:
    return None if value is None else value * metric_scale(key, count_keys(stage))


@dataclass
class IndexColumn:
    stage: str
    title: str
    key: str
    run: RunData


def index_table(data: list[RunData], stages: list[str], articles: list[str],
                pages: dict[str, str]) -> dict[str, Any]:
    """One row per article: each run's headline score per stage (×100), failures marked."""
    columns: list[IndexColumn] = []
    for stage in stages:
        metrics: dict[str, Any] = next((r.metrics[stage] for r in data if stage in r.metrics), {})
        title, key = headline(stage, metrics)
        columns += [IndexColumn(stage, title, key, r) for r in data]
    rows = []
    for article in articles:
        cells = [
            {"value": _shown(c.stage, c.key, c.run.article_value(c.stage, article, c.key)),
             "failed": bool(c.run.failed(c.stage, article))}
            for c in columns
        ]
        rows.append({"article": article, "page": pages[article], "cells": cells})
    header = [f"{c.stage} {c.title}" + (f" · {c.run.name}" if len(data) > 1 else "") for c in columns]
    return {"header": header, "rows": rows}


@dataclass
class DeltaRow:
    """An article's headline score in the first run, in each other run, and the differences (None: unscored)."""

    article: str
    page: str
    before: float | None
    afters: list[float | None]
    deltas: list[float | None]

    @property
    def first(self) -> float | None:
        return self.deltas[0]


def delta_block(data: list[RunData], stage: str, articles: list[str], pages: dict[str, str]) -> dict[str, Any] | None:
    """Per-article deltas of the stage's headline metric, each run against the first; None for one run."""
    present = [r for r in data if stage in r.metrics]
    if len(present) < 2:
        return None
    base, others = present[0], present[1:]
    title, key = headline(stage, base.metrics[stage])
    rows = []
    for article in articles:
        before = _shown(stage, key, base.article_value(stage, article, key))
        afters = [_shown(stage, key, r.article_value(stage, article, key)) for r in others]
        if before is None and all(a is None for a in afters):
            continue
        deltas = [None if before is None or after is None else after - before for after in afters]
        rows.append(DeltaRow(article, pages[article], before, afters, deltas))
    scored = [(row, row.first) for row in rows if row.first is not None]
    return {
        "stage": stage, "title": title, "base": base.name, "others": [r.name for r in others],
        "wins": [row for row, d in sorted(scored, key=lambda x: -x[1]) if d > 0][:TOP_DELTAS],
        "losses": [row for row, d in sorted(scored, key=lambda x: x[1]) if d < 0][:TOP_DELTAS],
        "ties": sum(1 for _, d in scored if d == 0),
        "rows": sorted(rows, key=lambda r: -abs(r.first) if r.first is not None else math.inf),
    }


def article_context(data: list[RunData], stages: list[str], article: str, articles: list[str], index: int,
                    pages: dict[str, str]) -> dict[str, Any]:
    def link(i: int) -> str | None:
        return Path(pages[articles[i]]).name if 0 <= i < len(articles) else None

    title = article
    blocks = []
    node_records = {run.name: _by_stage(run.nodes.records(article) if run.nodes else []) for run in data}
    output_records = {
        run.name: _by_stage(latest(run.outputs.records(article), unit_key) if run.outputs else []) for run in data
    }
    for stage in stages:
        runs = []
        for run in data:
            if stage not in run.metrics:
                continue
            outputs = output_records[run.name].get(stage, [])
            records = ArticleRecords(stage, article, outputs, run.results.get((stage, article), []),
                                     run.texts.get((stage, article), []), run.dataset)
            title = next((str(o["input"]["title"]) for o in outputs if "title" in (o.get("input") or {})), title)
            runs.append({
                "name": run.name,
                "view": article_view(records),
                "scores": item_scores(stage, run.metrics[stage], records.results),
                "failures": run.failed(stage, article),
                "units": trace_units(node_records[run.name].get(stage, [])),
            })
        if runs:
            blocks.append({"stage": stage, "paper": PAPER_TABLE.get(stage, ""), "runs": runs})
    return {"article": article, "title": title, "stages": blocks, "prev": link(index - 1),
            "next": link(index + 1), "position": index + 1, "count": len(articles)}


def _by_stage(records: Any) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        grouped[record["stage"]].append(record)
    return grouped


def item_scores(stage: str, metrics: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    """Each scored item of the article with the stage's columns (×100 but counts), exclusions with reasons."""
    columns = [c for c in stage_columns(stage, metrics) if not c[1].endswith((FLOOR_SUFFIX, RESCALED_SUFFIX))]
    counts = count_keys(stage)
    rows = []
    for record in results:
        values = record.get("metrics", {})
        rows.append({
            "item": record["item"], "excluded": record.get("excluded"),
            "reason": record.get("info", {}).get("reason"),
            "cells": [None if key not in values else values[key] * metric_scale(key, counts) for _, key in columns],
        })
    return {"header": [title for title, _ in columns], "rows": rows}


def trace_units(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The unit's node records in start order, with the timeline's bars (lane, offset and width in %)."""
    by_unit: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in nodes:
        by_unit[record["unit"]].append(record)
    return [{"unit": unit, **_trace(records)} for unit, records in by_unit.items()]


def _trace(records: list[dict[str, Any]]) -> dict[str, Any]:
    timed = all("started_at" in r and "ended_at" in r for r in records)
    ordered = sorted(records, key=lambda r: (r["started_at"], r["ended_at"])) if timed else records
    rows = [_node_row(r) for r in ordered]
    timeline = _timeline(ordered) if timed and ordered else None
    # every LLM call is counted on the innermost node that made it, once: the unit's totals sum all records
    totals = {key: sum(r.get(key, 0) for r in records)
              for key in ("llm_calls", "prompt_tokens", "completion_tokens", "cache_hits")}
    return {"nodes": rows, "timeline": timeline, "totals": totals}


def _node_row(record: dict[str, Any]) -> dict[str, Any]:
    output = json.dumps(record.get("output"), ensure_ascii=False, indent=1, default=str)
    cut = len(output) - OUTPUT_CHARS
    return {
        "node": record["node"],
        "depth": len([p for p in (record.get("namespace") or "").split("|") if p]),
        "duration_s": record.get("duration_s"),
        "calls": record.get("llm_calls", 0),
        "tokens": record.get("prompt_tokens", 0) + record.get("completion_tokens", 0),
        "cache_hits": record.get("cache_hits", 0),
        "prompts": record.get("prompts") or [],
        "answers": record.get("answers") or [],
        "error": record.get("error"),
        "output": output[:OUTPUT_CHARS] + (f"\n… {cut} more characters in nodes.jsonl" if cut > 0 else ""),
    }


def _timeline(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Bars on lanes: a node goes on the first lane free at its start, so nodes that ran at once stack up."""
    start = min(r["started_at"] for r in records)
    span = max(max(r["ended_at"] for r in records) - start, 1e-6)
    lane_ends: list[float] = []
    bars = []
    for record in records:
        lane = next((i for i, end in enumerate(lane_ends) if end <= record["started_at"]), len(lane_ends))
        if lane == len(lane_ends):
            lane_ends.append(record["ended_at"])
        else:
            lane_ends[lane] = record["ended_at"]
        bars.append({
            "node": record["node"], "lane": lane, "llm": bool(record.get("llm_calls")),
            "x": 100 * (record["started_at"] - start) / span,
            "width": max(100 * (record["ended_at"] - record["started_at"]) / span, 0.3),
            "label": f"{record['node']}: {record['ended_at'] - record['started_at']:.2f} s",
        })
    return {"bars": bars, "lanes": len(lane_ends), "span_s": span, "parallel": len(lane_ends) > 1}
