"""What an article page (``articles/aNNNN.html``) shows per stage and run: the reference beside the
generated text (:mod:`ruwikibench.reporting.article_views`), each item's scores, its failures, and the node
trace and timeline of every unit."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from ruwikibench.reporting.article_views import ArticleRecords, article_view
from ruwikibench.reporting.call_views import trace_with_calls
from ruwikibench.reporting.data import RunData
from ruwikibench.reporting.failures import short_reason
from ruwikibench.reporting.tables import (
    column_marks,
    column_meanings,
    count_keys,
    metric_scale,
    paper_table,
    stage_columns,
)
from ruwikibench.stage.metric import is_twin
from ruwikibench.storage.jsonl import latest, unit_key
from ruwikibench.storage.results import ResultRow, StageMetrics

OUTPUT_CHARS = 6000  # a node's output shown on its page; the rest stays in nodes.jsonl
MIN_BAR = 0.4  # % of the timeline: the narrowest bar drawn (kept inside the track)


class PageErrors:
    """The errors an article page shows: each text once in full (shortened, whole on hover) under an id, then
    referred to by it. A node's error that is part of a failure shown above (or the other way round) is the
    same."""

    def __init__(self) -> None:
        self.shown: dict[str, str] = {}  # error text -> its id on the page
        self.seen: set[str] = set()

    def note(self, text: str) -> dict[str, Any]:
        """{id, short, full, first}: ``first`` is True the first time the page meets this error."""
        known = next((ident for shown, ident in self.shown.items() if text in shown or shown in text), None)
        if known is None:
            known = self.shown[text] = f"error-{len(self.shown) + 1}"
        first = known not in self.seen
        self.seen.add(known)
        return {"id": known, "short": short_reason(text), "full": text, "first": first}


def article_context(
    data: list[RunData],
    stages: list[str],
    article: str,
    articles: list[str],
    index: int,
    pages: dict[str, str],
) -> dict[str, Any]:
    def link(i: int) -> str | None:
        return Path(pages[articles[i]]).name if 0 <= i < len(articles) else None

    title = article
    blocks = []
    errors = PageErrors()
    node_records = {run.name: _by_stage(run.nodes.records(article) if run.nodes else []) for run in data}
    output_records = {
        run.name: _by_stage(latest(run.outputs.records(article), unit_key) if run.outputs else [])
        for run in data
    }
    for stage in stages:
        runs = []
        for run in data:
            if stage not in run.metrics:
                continue
            outputs = output_records[run.name].get(stage, [])
            records = ArticleRecords(
                stage,
                article,
                outputs,
                run.results.get((stage, article), []),
                run.texts.get((stage, article), []),
                run.dataset,
            )
            title = next(
                (str(o["input"]["title"]) for o in outputs if "title" in (o.get("input") or {})), title
            )
            failures = [
                {"unit": f["unit"], **errors.note(str(f["reason"]))} for f in run.failed(stage, article)
            ]
            runs.append(
                {
                    "name": run.name,
                    "view": article_view(records),
                    "scores": item_scores(stage, run.metrics[stage], records.results),
                    "failures": failures,
                    "units": trace_with_calls(
                        trace_units(node_records[run.name].get(stage, []), errors),
                        run.rundir,
                        stage,
                        article,
                        errors.note,
                    ),
                }
            )
        if runs:
            blocks.append({"stage": stage, "paper": paper_table(stage), "runs": runs})
    return {
        "article": article,
        "title": title,
        "stages": blocks,
        "prev": link(index - 1),
        "next": link(index + 1),
        "position": index + 1,
        "count": len(articles),
    }


def _by_stage(records: Any) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        grouped[record["stage"]].append(record)
    return grouped


def item_scores(stage: str, metrics: StageMetrics, results: list[ResultRow]) -> dict[str, Any]:
    """Each scored item of the article with the stage's columns (×100 but counts), exclusions with reasons."""
    columns = [c for c in stage_columns(stage, metrics) if not is_twin(c[1])]
    counts = count_keys(stage)
    rows = []
    for record in results:
        values = record.metrics
        rows.append(
            {
                "item": record.item,
                "excluded": record.excluded,
                "reason": record.info.get("reason"),
                "cells": [
                    None if (value := values.get(key)) is None else value * metric_scale(key, counts)
                    for _, key in columns
                ],
            }
        )
    marks, meanings = column_marks(stage), column_meanings(stage)
    return {
        "header": [marks.get(title, title) for title, _ in columns],
        "meanings": [meanings.get(title, "") for title, _ in columns],
        "rows": rows,
    }


def trace_units(nodes: list[dict[str, Any]], errors: PageErrors | None = None) -> list[dict[str, Any]]:
    """The unit's node records in start order, with the timeline's bars (lane, offset and width in %)."""
    by_unit: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in nodes:
        by_unit[record["unit"]].append(record)
    errors = errors or PageErrors()
    return [{"unit": unit, **_trace(records, errors)} for unit, records in by_unit.items()]


def _trace(records: list[dict[str, Any]], errors: PageErrors | None = None) -> dict[str, Any]:
    errors = errors or PageErrors()
    timed = all("started_at" in r and "ended_at" in r for r in records)
    ordered = sorted(records, key=lambda r: (r["started_at"], r["ended_at"])) if timed else records
    rows = [_node_row(r, errors) for r in ordered]
    timeline = _timeline(ordered) if timed and ordered else None
    # every LLM call is counted on the innermost node that made it, once: the unit's totals sum all records
    totals = {
        key: sum(r.get(key, 0) for r in records)
        for key in ("llm_calls", "prompt_tokens", "completion_tokens", "cache_hits")
    }
    totals["queued_s"] = _timing_sum(records, "queued_s")
    totals["service_s"] = _timing_sum(records, "service_s")
    return {"nodes": rows, "timeline": timeline, "totals": totals}


def _timing_sum(records: list[dict[str, Any]], key: str) -> float | None:
    """The records' summed ``queued_s``/``service_s``; None when they were captured before these were
    recorded."""
    found = [r[key] for r in records if key in r]
    return sum(found) if found else None


def _node_row(record: dict[str, Any], errors: PageErrors) -> dict[str, Any]:
    output = json.dumps(record.get("output"), ensure_ascii=False, indent=1, default=str)
    cut = len(output) - OUTPUT_CHARS
    return {
        "node": record["node"],
        "task_id": record.get("task_id"),
        "depth": len([p for p in (record.get("namespace") or "").split("|") if p]),
        "duration_s": record.get("duration_s"),
        "queued_s": record.get("queued_s"),
        "service_s": record.get("service_s"),
        "calls": record.get("llm_calls", 0),
        "tokens": record.get("prompt_tokens", 0) + record.get("completion_tokens", 0),
        "cache_hits": record.get("cache_hits", 0),
        "prompts": record.get("prompts") or [],
        "answers": record.get("answers") or [],
        "error": errors.note(str(record["error"])) if record.get("error") else None,
        "output": output[:OUTPUT_CHARS] + (f"\n… {cut} more characters in nodes.jsonl" if cut > 0 else ""),
    }


def _children_calls(records: list[dict[str, Any]]) -> dict[str, int]:
    """Task id -> LLM calls of the nodes run inside it (a subgraph's nodes name their parent task in the
    namespace)."""
    calls: dict[str, int] = defaultdict(int)
    for record in records:
        for part in (record.get("namespace") or "").split("|"):
            if ":" in part:
                calls[part.split(":", 1)[1]] += record.get("llm_calls", 0)
    return calls


def _bar_span(start: float, end: float, origin: float, span: float) -> tuple[float, float]:
    """(left, width) in % of the track: at least :data:`MIN_BAR` wide, never past its right edge."""
    width = min(max(100 * (end - start) / span, MIN_BAR), 100.0)
    return min(100 * (start - origin) / span, 100.0 - width), width


def _bar_label(record: dict[str, Any], inside: int) -> str:
    total = record["ended_at"] - record["started_at"]
    label = f"{record['node']}: {total:.2f} s"
    calls = record.get("llm_calls") or 0
    if "queued_s" in record and calls:
        timing = (
            f"{record['queued_s']:.2f} s waiting for a concurrency slot, {record['service_s']:.2f} s served"
        )
        if calls == 1:
            label += f" (1 LLM call: {timing})"
        else:
            label += f" ({calls} LLM calls, summed over the calls: {timing}"
            over = record["queued_s"] + record["service_s"] > total
            label += "; the calls overlapped, so the sums exceed the node's duration)" if over else ")"
    if inside:
        label += f"; {inside} LLM call{'s' if inside > 1 else ''} by the nodes inside it"
    return label


def _mean_wait(record: dict[str, Any]) -> float:
    """A node's wait for a concurrency slot per LLM call: ``queued_s`` sums the waits of all its calls, which
    may overlap (the hatched share of its bar would otherwise pass 100% for a node of concurrent calls)."""
    return float(record.get("queued_s", 0.0)) / max(int(record.get("llm_calls") or 1), 1)


NICE_STEPS = (1.0, 2.0, 5.0)
MAX_TICKS = 8


def time_axis(span: float) -> list[dict[str, Any]]:
    """The timeline's time axis: ticks at a round step (1, 2 or 5 × 10^k seconds) from 0 to ``span``, at most
    :data:`MAX_TICKS` + 1 of them, each with its offset in % of the track and its label."""
    magnitude = 10.0 ** math.floor(math.log10(max(span, 1e-6) / MAX_TICKS))
    step = next(m * magnitude for m in (*NICE_STEPS, 10.0) if span / (m * magnitude) <= MAX_TICKS)
    digits = max(0, -math.floor(math.log10(step)))
    count = int(span / step + 1e-9)
    return [{"x": 100 * i * step / span, "label": f"{i * step:.{digits}f} s"} for i in range(count + 1)]


def _timeline(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Bars on lanes: a node goes on the first lane free at its start, so nodes that ran at once stack up. A
    bar's hatched start is the time its LLM calls waited for a concurrency slot, per call (``queued_s`` over
    ``llm_calls``, when recorded); a subgraph's parent is coloured by its children's LLM calls. ``axis``:
    the time axis under the bars."""
    start = min(r["started_at"] for r in records)
    span = max(max(r["ended_at"] for r in records) - start, 1e-6)
    inside = _children_calls(records)
    lane_ends: list[float] = []
    bars = []
    for record in records:
        lane = next((i for i, end in enumerate(lane_ends) if end <= record["started_at"]), len(lane_ends))
        if lane == len(lane_ends):
            lane_ends.append(record["ended_at"])
        else:
            lane_ends[lane] = record["ended_at"]
        x, width = _bar_span(record["started_at"], record["ended_at"], start, span)
        duration = max(record["ended_at"] - record["started_at"], 1e-9)
        children = inside.get(record.get("task_id", ""), 0)
        bars.append(
            {
                "node": record["node"],
                "lane": lane,
                "llm": bool(record.get("llm_calls")),
                "llm_inside": not record.get("llm_calls") and children > 0,
                "x": x,
                "width": width,
                "queued": min(100.0, 100 * _mean_wait(record) / duration),
                "label": _bar_label(record, children),
            }
        )
    queued = [r["queued_s"] for r in records if "queued_s" in r]
    return {
        "bars": bars,
        "lanes": len(lane_ends),
        "span_s": span,
        "parallel": len(lane_ends) > 1,
        "queued_s": sum(queued) if queued else None,
        "axis": time_axis(span),
    }
