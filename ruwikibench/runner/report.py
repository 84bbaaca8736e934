"""Reports: one run's report.md, and comparisons of several runs in the paper's table layouts
(Markdown + CSV with CIs, PNG bar charts with CI whiskers); the HTML pages are laid out by
:mod:`ruwikibench.runner.html_report` from the tables computed here."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from ruwikibench.durable import write_atomic
from ruwikibench.evaluators.floor import FLOOR_SUFFIX, RESCALED_SUFFIX
from ruwikibench.evaluators.stats import Estimate
from ruwikibench.registry import get_stage, stage_names
from ruwikibench.rundir import RunDir
from ruwikibench.runner.paired import Headline, PairedRow, compare_runs_paired, load_items, paired_table

SCALE = 100.0
PAPER_TABLE = {"ranking": "Tables 3/4", "outline": "Table 5", "sections": "Table 7"}
TABLE_LABEL = {**PAPER_TABLE, "writer": "whole article, not in the paper"}


def table_title(stage: str, note: str = "") -> str:
    """'writer (whole article, not in the paper; ×100 …)': the stage, its table label and ``note``."""
    inside = "; ".join(part for part in (TABLE_LABEL.get(stage, ""), note) if part)
    return f"{stage} ({inside})" if inside else stage


def report_stages(metrics: list[dict[str, Any]]) -> list[str]:
    """The stages present in any of the runs' metrics, in the registry's order, then any other stage by name."""
    present = set().union(*(m.keys() for m in metrics)) if metrics else set()
    known = [s for s in stage_names() if s in present]
    return known + sorted(present - set(known))


def stage_columns(stage: str, metrics: dict[str, Any]) -> list[tuple[str, str]]:
    """The stage's declared layout, each embedding metric followed by its floor and rescaled columns
    (or every metric key if the stage module is unavailable)."""
    try:
        declared = get_stage(stage)
    except Exception:  # noqa: BLE001
        return [(key, key) for key in sorted(metrics.get("metrics", {}))]
    return with_floor_columns(list(declared.columns), tuple(declared.floor_keys))


def with_floor_columns(columns: list[tuple[str, str]], floor_keys: tuple[str, ...]) -> list[tuple[str, str]]:
    """After each column whose key has a permutation floor: '<title> floor' and '<title> rescaled'."""
    out: list[tuple[str, str]] = []
    for title, key in columns:
        out.append((title, key))
        if key in floor_keys:
            out += [(f"{title} floor", key + FLOOR_SUFFIX), (f"{title} rescaled", key + RESCALED_SUFFIX)]
    return out


def count_keys(stage: str) -> frozenset[str]:
    """Metrics the stage declares as counts (headings, depth): shown as they are, never ×100."""
    try:
        return frozenset(get_stage(stage).count_keys)
    except Exception:  # noqa: BLE001
        return frozenset()


def metric_scale(key: str, counts: frozenset[str]) -> float:
    """×100 for fractions, 1 for the stage's count metrics."""
    return 1.0 if key in counts else SCALE


def _cell(metrics: dict[str, Any], key: str, view: str, scale: float = SCALE) -> str:
    est = metrics.get("metrics", {}).get(key, {}).get(view)
    if not est or not est.get("n"):
        return "—"
    return Estimate.model_validate(est).fmt(scale)


BASELINE_PREFIX = "↳ baseline: "


def with_baseline_rows(runs: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """Each run followed by its no-LLM baselines (``metrics[stage]['baselines']``), labelled with
    :data:`BASELINE_PREFIX`: a baseline has no failures, so both views show the same figures."""
    out: list[tuple[str, dict[str, Any]]] = []
    for name, metrics in runs:
        out.append((name, metrics))
        for baseline, summary in (metrics.get("baselines") or {}).items():
            out.append((BASELINE_PREFIX + baseline, summary))
    return out


def stage_table(
    stage: str, runs: list[tuple[str, dict[str, Any]]], view: str = "failures_excluded", baselines: bool = True
) -> list[list[str]]:
    """Rows (header first): one row per run (each followed by its no-LLM baselines unless ``baselines`` is
    False), the stage's columns, then the counts: ``scored`` (items that were scored: the n of the
    failures-excluded means), ``excluded`` (paper exclusions), ``failed`` (failed units) and, in the
    failures-as-zero view, ``zeroed`` (failures averaged in as 0, and in which columns when not all)."""
    columns = stage_columns(stage, runs[0][1] if runs else {})
    counts_only = count_keys(stage)
    header = ["run", *[title for title, _ in columns], "scored", "excluded", "failed"]
    if view == "failures_as_zero":
        header.append("zeroed")
    rows = [header]
    for name, metrics in with_baseline_rows(runs) if baselines else runs:
        counts = metrics.get("counts", {})
        row = [
            name,
            *[_cell(metrics, key, view, metric_scale(key, counts_only)) for _, key in columns],
            str(counts.get("evaluated", 0)),
            str(counts.get("excluded", 0)),
            str(counts.get("failed_units", 0)),
        ]
        if view == "failures_as_zero":  # columns this run has no estimate for (no item had the key) say nothing
            row.append(_zeroed([c for c in columns if c[1] in metrics.get("metrics", {})], counts))
        rows.append(row)
    return rows


def _zeroed(columns: list[tuple[str, str]], counts: dict[str, Any]) -> str:
    """'1' when every failure was zeroed in every metric column, else which columns got how many zeros."""
    zeroed = counts.get("zeroed")
    if zeroed is None:  # metrics.json written before per-metric zeroing: every failure zeroed everywhere
        return str(counts.get("failed_units", 0))
    metric = [(title, key) for title, key in columns if not key.endswith(FLOOR_SUFFIX)]
    base = [(title, key.removesuffix(RESCALED_SUFFIX)) for title, key in metric]
    per_column = {title: int(zeroed.get(key, 0)) for title, key in base}
    values = set(per_column.values())
    if len(values) == 1:
        return str(values.pop())
    return ", ".join(f"{n} in {title}" for title, n in per_column.items() if n) or "0"


VERDICTS = {"better": "beats it", "worse": "is below it", "no significant difference": "does not differ from it "
            "significantly", "no shared item": "shares no item with it"}


def baseline_lines(stage: str, data: dict[str, Any], run: str = "the run") -> list[str]:
    """One sentence per compared metric: the run − its best no-LLM baseline, paired over shared items."""
    titles = {key: title for title, key in stage_columns(stage, data)}
    counts = count_keys(stage)
    lines = []
    for key, versus in (data.get("vs_baseline") or {}).items():
        diff = Estimate.model_validate(versus["difference"])
        p = versus.get("p_value")
        p_text = "—" if p is None or math.isnan(p) else f"{p:.3g}"
        lines.append(
            f"- {titles.get(key, key)}: {run} − best baseline ({versus['baseline']}) = "
            f"{diff.fmt(metric_scale(key, counts))}, p = {p_text}, {versus['items']} paired items: "
            f"{run} **{VERDICTS.get(versus['verdict'], versus['verdict'])}**"
        )
    return lines


def baseline_note(stage: str, data: dict[str, Any], run: str = "the run") -> list[str]:
    """The 'vs the best baseline' paragraph of a stage (empty when the run has no baselines)."""
    lines = baseline_lines(stage, data, run)
    if data.get("vs_baseline_error"):
        lines.append(f"- {run}: no comparison with the baselines ({data['vs_baseline_error']})")
    if not lines:
        return []
    head = ("Against the no-LLM baselines (rows '↳ baseline: …'; paired bootstrap 95% CI over the items both "
            "scored, approximate-randomization p):")
    return [head, "", *lines, ""]


def markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return "\n".join(lines)


def write_run_report(rundir: RunDir, metrics: dict[str, Any], errors: list[dict[str, Any]] | None = None) -> None:
    """report.md of one run; ``errors``: the failures still open (default: :meth:`RunDir.open_errors`)."""
    spec = rundir.read_json("spec.json") if rundir.file("spec.json").exists() else {}
    parts = [f"# Run {rundir.path.name}", "", _spec_summary(spec), ""]
    for stage in report_stages([metrics]):
        data = metrics[stage]
        parts += [f"## {table_title(stage, '×100, mean [95% CI]')}", ""]
        for view in ("failures_excluded", "failures_as_zero"):
            parts += [
                f"*{view.replace('_', ' ')}*",
                "",
                markdown_table(stage_table(stage, [(rundir.path.name, data)], view)),
                "",
            ]
        parts += baseline_note(stage, data)
        if data.get("floor"):
            parts += [floor_note(data["floor"]), ""]
        if judgements_line(data):
            parts += [judgements_line(data), ""]
        if data.get("excluded_reasons"):
            parts += ["Excluded: " + ", ".join(f"{k} × {v}" for k, v in data["excluded_reasons"].items()), ""]
        if data.get("failure_reasons"):
            parts += [
                "Failed units: " + ", ".join(f"{k} × {v}" for k, v in data["failure_reasons"].items()),
                "",
            ]
    errors = rundir.open_errors() if errors is None else errors
    if errors:
        parts += ["## Errors", ""] + [
            f"- {e['stage']} / {e['article']} / {e['unit']}: {e['reason']}" for e in errors[-50:]
        ]
    write_atomic(rundir.file("report.md"), "\n".join(parts) + "\n")


def judgements_line(data: dict[str, Any]) -> str:
    """'LLM judgements: N, failed M (…)' for a stage whose units make judgements (ranking), else ''."""
    counts = data.get("counts", {})
    if not counts.get("judgements"):
        return ""
    sources = counts.get("judgement_sources", {})
    failed = counts.get("failed_judgements", 0)
    detail = ", ".join(f"{s} {sources[s]}" for s in ("error", "unparseable") if sources.get(s))
    line = f"LLM judgements: {counts['judgements']}, failed {failed}"
    return line + (f" ({detail}; asked again when the run resumes)" if failed else "")


def floor_note(floor: dict[str, Any]) -> str:
    """One line saying how the floor columns were measured and what the rescaled columns are."""
    return (
        f"Floor: the metric of each output against the references of other articles ({floor.get('items')} items, "
        f"{floor.get('pairs')} pairs, up to {floor.get('per_item_max')} per item, seed {floor.get('seed')}); "
        "rescaled = (score − floor) / (1 − floor): 0 is chance level, 100 a perfect match."
    )


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
    runs = [load_run(p) for p in paths]  # a directory that is not a run stops here, before `out` exists
    out.mkdir(parents=True, exist_ok=True)
    parts = [
        "# RuWikiBench comparison",
        "",
        markdown_table(settings_table(runs)),
        "",
        (
            "×100, mean [95% CI]. *floor*: the embedding metric of each output against the references of other "
            "articles (chance level for this embedder); *rescaled* = (score − floor) / (1 − floor)."
        ),
        "",
    ]
    charts: dict[str, Path] = {}
    paired = paired_comparison(runs)
    for stage in report_stages([m for _, m, _ in runs]):
        present = [(name, m[stage]) for name, m, _ in runs if stage in m]
        rows = stage_table(stage, present, view)
        parts += [
            f"## {table_title(stage)}",
            "",
            markdown_table(rows),
            "",
            *[line for name, data in present for line in baseline_note(stage, data, name)],
            *paired_section(paired.get(stage, [])),
            f"![{stage}]({stage}.png)",
            "",
        ]
        _write_csv(out / f"{stage}.csv", rows)
        if paired.get(stage):
            _write_csv(out / f"{stage}_paired.csv", paired_table(paired[stage]))
        else:  # one run, or an --out directory used before: no stale table
            (out / f"{stage}_paired.csv").unlink(missing_ok=True)
        plot_stage(stage, present, out / f"{stage}.png", view)
        charts[stage] = out / f"{stage}.png"
    parts += citation_section(runs)
    parts += _judge_sections(runs, out)
    (out / "report.md").write_text("\n".join(parts) + "\n", encoding="utf-8")
    from ruwikibench.runner.html_report import write_html_report

    write_html_report(runs, out, view, charts, paired)
    return out / "report.md"


def _write_csv(path: Path, rows: list[list[str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)


def stage_headlines(stage: str, metrics: dict[str, Any]) -> list[Headline]:
    """The metrics a paired comparison covers: the stage's columns but its counts (headings, depth), each
    marked when it has a permutation floor (its rescaled difference follows it)."""
    columns = stage_columns(stage, metrics)
    keys = {key for _, key in columns}
    counts = count_keys(stage)
    return [
        Headline(title, key, SCALE, key + RESCALED_SUFFIX in keys)
        for title, key in columns
        if key not in counts and not key.endswith((FLOOR_SUFFIX, RESCALED_SUFFIX))
    ]


def paired_comparison(runs: list[tuple[str, dict[str, Any], RunDir]]) -> dict[str, list[PairedRow]]:
    """Per stage, each run after the first against the first over the items both scored (see
    :mod:`ruwikibench.runner.paired`); empty for one run."""
    if len(runs) < 2:
        return {}
    stages = report_stages([m for _, m, _ in runs])
    first = {stage: next(m[stage] for _, m, _ in runs if stage in m) for stage in stages}
    headlines = {stage: stage_headlines(stage, first[stage]) for stage in stages}
    items = [(name, *load_items(rundir)) for name, _, rundir in runs]
    return compare_runs_paired(items, stages, headlines)


PAIRED_NOTE = (
    "Each run minus the first run, over the items both scored (items scored by one run only, or excluded in "
    "either, are left out and counted); ×100, mean difference [95% paired bootstrap CI]; p: two-sided "
    "approximate randomization (the chance of a difference at least this large if the two runs were "
    "interchangeable item by item), one test per row, no correction for the number of rows. A run *beats* "
    "the other when p < 0.05 and the CI excludes 0."
)


def paired_section(rows: list[PairedRow]) -> list[str]:
    """The stage's 'Paired differences' block of report.md (nothing for one run), significant rows spelled out."""
    if not rows:
        return []
    found = [f"- {row.sentence()}" for row in rows if row.winner is not None]
    return [
        "### Paired differences",
        "",
        PAIRED_NOTE,
        "",
        markdown_table(paired_table(rows)),
        "",
        *(found or ["No significant difference in any metric."]),
        "",
    ]


IGNORED_SETTINGS = ("name", "cache_dir", "options.out", "options.run_id")


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        flat: dict[str, Any] = {}
        for key, value in data.items():
            flat.update(_flatten(value, f"{prefix}{key}."))
        return flat
    return {prefix.rstrip("."): data}


def settings_table(runs: list[tuple[str, dict[str, Any], RunDir]]) -> list[list[str]]:
    """Rows (header first): each run's config name and the settings in which the runs differ."""
    specs = [
        rundir.read_json("spec.json") if rundir.file("spec.json").exists() else {} for _, _, rundir in runs
    ]
    flat = [
        _flatten(spec.get("config", {})) | _flatten(spec.get("options", {}), "options.")
        | {f"override.{key}.sha256": (o.get("sha256") or "")[:12] for key, o in spec.get("overrides", {}).items()}
        for spec in specs
    ]
    keys = sorted({k for f in flat for k in f if not k.startswith(IGNORED_SETTINGS)})
    differing = [k for k in keys if len({json.dumps(f.get(k), sort_keys=True) for f in flat}) > 1]
    rows = [["run", "config", "dataset", "differs in"]]
    for (name, _, _), spec, settings in zip(runs, specs, flat, strict=True):
        diff = "; ".join(f"{k}={json.dumps(settings.get(k), ensure_ascii=False)}" for k in differing)
        rows.append(
            [name, str(settings.get("name", "")), str(spec.get("dataset", {}).get("id", "")), diff or "—"]
        )
    return rows


def citation_section(runs: list[tuple[str, dict[str, Any], RunDir]]) -> list[str]:
    """One table of the runs judged by ``judge citations``: recall, precision, unsupported share with CIs."""
    from ruwikibench.evaluators.judges.citations import summarize_citations

    rows = [{"run": name, **row} for name, _, rundir in runs for row in summarize_citations(rundir.path)]
    if not rows:
        return []
    header = list(rows[0])
    return [
        "## Citation faithfulness (judge citations; ×100, mean [95% CI] over sentences / citations)",
        "",
        markdown_table([header, *[[r[h] for h in header] for r in rows]]),
        "",
    ]


def _judge_sections(runs: list[tuple[str, dict[str, Any], RunDir]], out: Path) -> list[str]:
    from ruwikibench.evaluators.judges import judge_tables

    parts: list[str] = []
    for name, _, rundir in runs:
        for title, rows in judge_tables(rundir.path).items():
            header = list(rows[0])
            parts += [
                f"## {title} — {name}",
                "",
                markdown_table([header, *[[r[h] for h in header] for r in rows]]),
                "",
            ]
        for chart in sorted(rundir.path.glob("judge_pairwise_*.png")):
            target = out / f"{name}__{chart.name}"
            target.write_bytes(chart.read_bytes())
            parts += [f"![{chart.stem}]({target.name})", ""]
    return parts


def plot_stage(stage: str, runs: list[tuple[str, dict[str, Any]]], path: Path, view: str) -> None:
    """Grouped bars with CI whiskers: scores (×100) in one panel, counts (headings, depth) in a second one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = stage_columns(stage, runs[0][1])
    counts_only = count_keys(stage)
    panels = [[c for c in columns if c[1] not in counts_only], [c for c in columns if c[1] in counts_only]]
    panels = [p for p in panels if p]
    widths = [max(3.0, 1.6 * len(p)) for p in panels]
    fig, axes = plt.subplots(
        1, len(panels), figsize=(max(6.0, sum(widths)), 4), width_ratios=widths, squeeze=False
    )
    for ax, panel in zip(axes[0], panels, strict=True):
        scale = metric_scale(panel[0][1], counts_only)
        _bars(ax, panel, runs, view, scale)
        ax.set_ylabel("×100" if scale == SCALE else "count")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"{table_title(stage)}, mean with 95% CI")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _bars(
    ax: Any, columns: list[tuple[str, str]], runs: list[tuple[str, dict[str, Any]]], view: str, scale: float
) -> None:
    import numpy as np

    from ruwikibench.evaluators.charts import ci_bars

    width = 0.8 / max(1, len(runs))
    for index, (name, metrics) in enumerate(runs):
        found = [metrics.get("metrics", {}).get(key, {}).get(view) for _, key in columns]
        estimates = [Estimate.model_validate(est) if est else None for est in found]
        ci_bars(ax, np.arange(len(columns)) + index * width, estimates, scale=scale, width=width, capsize=3, label=name)
    ax.set_xticks(np.arange(len(columns)) + width * (len(runs) - 1) / 2)
    ax.set_xticklabels([title for title, _ in columns], rotation=20, ha="right")
