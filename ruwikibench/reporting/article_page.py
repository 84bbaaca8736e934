"""What an article page (``articles/aNNNN.html``) shows per stage and run: the reference beside the
generated text (:mod:`ruwikibench.reporting.article_views`), each item's scores, its failures, and the node trace
and timeline of every unit."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from ruwikibench.evaluators.floor import FLOOR_SUFFIX, RESCALED_SUFFIX
from ruwikibench.jsonl import latest, unit_key
from ruwikibench.reporting.article_views import ArticleRecords, article_view
from ruwikibench.reporting.data import RunData
from ruwikibench.reporting.tables import PAPER_TABLE, count_keys, metric_scale, stage_columns

OUTPUT_CHARS = 6000  # a node's output shown on its page; the rest stays in nodes.jsonl


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
            runs.append(
                {
                    "name": run.name,
                    "view": article_view(records),
                    "scores": item_scores(stage, run.metrics[stage], records.results),
                    "failures": run.failed(stage, article),
                    "units": trace_units(node_records[run.name].get(stage, [])),
                }
            )
        if runs:
            blocks.append({"stage": stage, "paper": PAPER_TABLE.get(stage, ""), "runs": runs})
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


def item_scores(stage: str, metrics: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    """Each scored item of the article with the stage's columns (×100 but counts), exclusions with reasons."""
    columns = [c for c in stage_columns(stage, metrics) if not c[1].endswith((FLOOR_SUFFIX, RESCALED_SUFFIX))]
    counts = count_keys(stage)
    rows = []
    for record in results:
        values = record.get("metrics", {})
        rows.append(
            {
                "item": record["item"],
                "excluded": record.get("excluded"),
                "reason": record.get("info", {}).get("reason"),
                "cells": [
                    None if key not in values else values[key] * metric_scale(key, counts)
                    for _, key in columns
                ],
            }
        )
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
    totals = {
        key: sum(r.get(key, 0) for r in records)
        for key in ("llm_calls", "prompt_tokens", "completion_tokens", "cache_hits")
    }
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
        bars.append(
            {
                "node": record["node"],
                "lane": lane,
                "llm": bool(record.get("llm_calls")),
                "x": 100 * (record["started_at"] - start) / span,
                "width": max(100 * (record["ended_at"] - record["started_at"]) / span, 0.3),
                "label": f"{record['node']}: {record['ended_at'] - record['started_at']:.2f} s",
            }
        )
    return {"bars": bars, "lanes": len(lane_ends), "span_s": span, "parallel": len(lane_ends) > 1}
