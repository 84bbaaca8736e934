"""One run's report.md: the spec in a line, each stage's table in both views, its baselines, floor, judgement
and failure notes, and the failures still open."""

from __future__ import annotations

from typing import Any

from ruwikibench.reporting.tables import (
    baseline_note,
    floor_note,
    glossary_section,
    judgements_line,
    markdown_table,
    marked_rows,
    report_stages,
    stage_table,
    table_title,
)
from ruwikibench.storage.durable import write_atomic
from ruwikibench.storage.results import StageMetrics
from ruwikibench.storage.rundir import RunDir
from ruwikibench.storage.runspec import spec_record


def write_run_report(
    rundir: RunDir, metrics: dict[str, StageMetrics], errors: list[dict[str, Any]] | None = None
) -> None:
    """report.md of one run (``metrics``: the stages of its metrics.json,
    :func:`ruwikibench.storage.results.read_metrics`); ``errors``: the failures still open (default:
    :meth:`RunDir.open_errors`)."""
    spec = spec_record(rundir)
    parts = [f"# Run {rundir.path.name}", "", _spec_summary(spec), ""]
    for stage in report_stages([metrics]):
        data = metrics[stage]
        parts += [f"## {table_title(stage, '×100, mean [95% CI]')}", ""]
        for view in ("failures_excluded", "failures_as_zero"):
            parts += [
                f"*{view.replace('_', ' ')}*",
                "",
                markdown_table(marked_rows(stage, stage_table(stage, [(rundir.path.name, data)], view))),
                "",
            ]
        parts += baseline_note(stage, data)
        if data.floor:
            parts += [floor_note(data.floor), ""]
        parts += glossary_section(stage)
        if judgements_line(data):
            parts += [judgements_line(data), ""]
        if data.excluded_reasons:
            parts += ["Excluded: " + ", ".join(f"{k} × {v}" for k, v in data.excluded_reasons.items()), ""]
        if data.failure_reasons:
            parts += [
                "Failed units: " + ", ".join(f"{k} × {v}" for k, v in data.failure_reasons.items()),
                "",
            ]
    errors = rundir.open_errors() if errors is None else errors
    if errors:
        parts += ["## Errors", ""] + [
            f"- {e['stage']} / {e['article']} / {e['unit']}: {e['reason']}" for e in errors[-50:]
        ]
    write_atomic(rundir.file("report.md"), "\n".join(parts) + "\n")


def _spec_summary(spec: dict[str, Any]) -> str:
    if not spec:
        return ""
    models = ", ".join(f"{role}: {m.get('name')}" for role, m in spec.get("models", {}).items())
    session = spec.get("last_session", {})
    llm = session.get("llm", {})
    calls = sum(u.get("calls", 0) for u in llm.values())
    tokens = sum(u.get("prompt_tokens", 0) + u.get("completion_tokens", 0) for u in llm.values())
    return (
        f"dataset `{spec.get('dataset', {}).get('id')}` · models {models} · embedder {spec.get('embedder')} "
        f"· commit `{(spec.get('git_commit') or '?')[:10]}` · last session {session.get('wall_time_s', '?')} "
        f"s, {calls} LLM calls, {tokens} tokens"
    )
