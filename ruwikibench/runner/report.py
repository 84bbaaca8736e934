"""Reports: one run's report.md, and comparisons of several runs in the paper's table layouts
(Markdown + CSV with CIs, PNG bar charts with CI whiskers, one self-contained HTML page per comparison)."""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path
from typing import Any

from ruwikibench.runner.rundir import RunDir
from ruwikibench.runner.stage import STAGE_MODULES, get_stage

SCALE = 100.0
PAPER_TABLE = {"ranking": "Tables 3/4", "outline": "Table 5", "sections": "Table 7"}


def stage_columns(stage: str, metrics: dict[str, Any]) -> list[tuple[str, str]]:
    """The stage's declared layout, or every metric key if the stage module is unavailable."""
    try:
        return list(get_stage(stage).columns)
    except Exception:  # noqa: BLE001
        return [(key, key) for key in sorted(metrics.get("metrics", {}))]


def count_keys(stage: str) -> frozenset[str]:
    """Metrics the stage declares as counts (headings, depth): shown as they are, never ×100."""
    try:
        return frozenset(getattr(get_stage(stage), "count_keys", ()))
    except Exception:  # noqa: BLE001
        return frozenset()


def _cell(metrics: dict[str, Any], key: str, view: str, scale: float = SCALE) -> str:
    est = metrics.get("metrics", {}).get(key, {}).get(view)
    if not est or not est.get("n"):
        return "—"
    return f"{est['mean'] * scale:.2f} [{est['low'] * scale:.2f}, {est['high'] * scale:.2f}]"


def stage_table(stage: str, runs: list[tuple[str, dict[str, Any]]], view: str = "failures_excluded") -> list[list[str]]:
    """Rows (header first): one row per run, the stage's columns, then n / excluded / failed."""
    columns = stage_columns(stage, runs[0][1] if runs else {})
    counts_only = count_keys(stage)
    header = ["run", *[title for title, _ in columns], "n", "excluded", "failed"]
    rows = [header]
    for name, metrics in runs:
        counts = metrics.get("counts", {})
        rows.append(
            [name, *[_cell(metrics, key, view, 1.0 if key in counts_only else SCALE) for _, key in columns],
             str(counts.get("evaluated", 0)), str(counts.get("excluded", 0)), str(counts.get("failed_units", 0))]
        )
    return rows


def markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return "\n".join(lines)


def write_run_report(rundir: RunDir, metrics: dict[str, Any]) -> None:
    spec = rundir.read_json("spec.json") if rundir.file("spec.json").exists() else {}
    parts = [f"# Run {rundir.path.name}", "", _spec_summary(spec), ""]
    for stage in [s for s in STAGE_MODULES if s in metrics]:
        data = metrics[stage]
        parts += [f"## {stage} ({PAPER_TABLE.get(stage, '')}; ×100, mean [95% CI])", ""]
        for view in ("failures_excluded", "failures_as_zero"):
            parts += [f"*{view.replace('_', ' ')}*", "", markdown_table(stage_table(stage, [(rundir.path.name, data)], view)), ""]
        if data.get("excluded_reasons"):
            parts += ["Excluded: " + ", ".join(f"{k} × {v}" for k, v in data["excluded_reasons"].items()), ""]
        if data.get("failure_reasons"):
            parts += ["Failed units: " + ", ".join(f"{k} × {v}" for k, v in data["failure_reasons"].items()), ""]
    errors = list(rundir.read("errors.jsonl"))
    if errors:
        parts += ["## Errors", ""] + [f"- {e['stage']} / {e['article']} / {e['unit']}: {e['reason']}" for e in errors[-50:]]
    rundir.file("report.md").write_text("\n".join(parts) + "\n", encoding="utf-8")


def _spec_summary(spec: dict[str, Any]) -> str:
    if not spec:
        return ""
    models = ", ".join(f"{role}: {m.get('name')}" for role, m in spec.get("models", {}).items())
    session = spec.get("last_session", {})
    llm = session.get("llm", {})
    calls = sum(u.get("calls", 0) for u in llm.values())
    tokens = sum(u.get("prompt_tokens", 0) + u.get("completion_tokens", 0) for u in llm.values())
    return (
        f"dataset `{spec.get('dataset', {}).get('id')}` · models {models} · embedder {spec.get('embedder')} · "
        f"commit `{(spec.get('git_commit') or '?')[:10]}` · last session {session.get('wall_time_s', '?')} s, "
        f"{calls} LLM calls, {tokens} tokens"
    )


def load_run(path: str | Path) -> tuple[str, dict[str, Any], RunDir]:
    rundir = RunDir(path)
    metrics = rundir.read_json("metrics.json")
    return rundir.path.name, metrics, rundir


def compare_runs(paths: list[Path], out: Path, view: str = "failures_excluded") -> Path:
    """Write report.md, one CSV and one PNG per stage, and report.html comparing the runs; returns report.md."""
    out.mkdir(parents=True, exist_ok=True)
    runs = [load_run(p) for p in paths]
    parts = ["# RuWikiBench comparison", "", f"Runs: {', '.join(name for name, _, _ in runs)}. ×100, mean [95% CI].", ""]
    for stage in list(STAGE_MODULES):
        present = [(name, m[stage]) for name, m, _ in runs if stage in m]
        if not present:
            continue
        rows = stage_table(stage, present, view)
        parts += [f"## {stage} ({PAPER_TABLE.get(stage, '')})", "", markdown_table(rows), "", f"![{stage}]({stage}.png)", ""]
        with open(out / f"{stage}.csv", "w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows(rows)
        plot_stage(stage, present, out / f"{stage}.png", view)
    parts += _judge_sections(runs)
    (out / "report.md").write_text("\n".join(parts) + "\n", encoding="utf-8")
    (out / "report.html").write_text(html_page(runs, "\n".join(parts)), encoding="utf-8")
    return out / "report.md"


def _judge_sections(runs: list[tuple[str, dict[str, Any], RunDir]]) -> list[str]:
    parts: list[str] = []
    for name, _, rundir in runs:
        path = rundir.file("judge_criteria.json")
        if path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))
            parts += [f"## Criteria judge: {name}", "", "```json", json.dumps(data, ensure_ascii=False, indent=1)[:4000],
                      "```", ""]
    return parts


def plot_stage(stage: str, runs: list[tuple[str, dict[str, Any]]], path: Path, view: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    columns = stage_columns(stage, runs[0][1])
    counts_only = count_keys(stage)
    width = 0.8 / max(1, len(runs))
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(columns)), 4))
    for index, (name, metrics) in enumerate(runs):
        means, lows, highs = [], [], []
        for _, key in columns:
            est = metrics.get("metrics", {}).get(key, {}).get(view) or {"mean": np.nan, "low": np.nan, "high": np.nan}
            scale = 1.0 if key in counts_only else SCALE
            means.append(est["mean"] * scale)
            lows.append((est["mean"] - est["low"]) * scale)
            highs.append((est["high"] - est["mean"]) * scale)
        x = np.arange(len(columns)) + index * width
        ax.bar(x, means, width, yerr=[lows, highs], capsize=3, label=name)
    ax.set_xticks(np.arange(len(columns)) + width * (len(runs) - 1) / 2)
    ax.set_xticklabels([title for title, _ in columns], rotation=20, ha="right")
    ax.set_title(f"{stage} ({PAPER_TABLE.get(stage, '')}), mean with 95% CI")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def html_page(runs: list[tuple[str, dict[str, Any], RunDir]], markdown: str) -> str:
    """Self-contained page: the tables, then per article the reference and generated texts side by side."""
    body = [f"<pre class='md'>{html.escape(markdown)}</pre>"]
    for name, _, rundir in runs:
        body.append(f"<h2>{html.escape(name)}</h2>")
        body.append(_run_articles_html(rundir))
    style = (
        "body{font-family:sans-serif;max-width:1400px;margin:auto}"
        ".pair{display:grid;grid-template-columns:1fr 1fr;gap:1em}"
        ".pair div{background:#f6f6f6;padding:.5em;white-space:pre-wrap}.md{white-space:pre-wrap}"
    )
    return f"<!doctype html><html><head><meta charset='utf-8'><style>{style}</style></head><body>{''.join(body)}</body></html>"


def _run_articles_html(rundir: RunDir) -> str:
    scores: dict[tuple[str, str, str], dict[str, float]] = {}
    for record in rundir.read("results.jsonl"):
        scores[(record["stage"], record["article"], record["item"])] = record.get("metrics", {})
    parts = []
    for text in rundir.read("generated.jsonl"):
        metric = scores.get((text["stage"], text["article"], text["item"]), {})
        summary = ", ".join(f"{k}={v:.3f}" for k, v in list(metric.items())[:6] if isinstance(v, (int, float)))
        parts.append(
            f"<details><summary>{html.escape(text['stage'])} · {html.escape(text['article'])} · "
            f"{html.escape(text['title'])} <small>{html.escape(summary)}</small></summary>"
            f"<div class='pair'><div><b>reference</b>\n{html.escape(text.get('reference', ''))}</div>"
            f"<div><b>generated</b>\n{html.escape(text['text'])}</div></div></details>"
        )
    return "\n".join(parts) or "<p>no generated texts</p>"
