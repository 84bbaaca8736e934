"""Comparisons of several runs in the paper's table layouts: report.md (settings, each stage's table with its
baselines and paired differences, citation and judge tables), one CSV and one PNG per stage, and report.html
(laid out by :mod:`ruwikibench.reporting.html`)."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path
from typing import Any

from ruwikibench.reporting.failures import stage_failures
from ruwikibench.reporting.html import write_html_report
from ruwikibench.reporting.paired import PairedRow, compare_runs_paired, load_items, paired_table
from ruwikibench.reporting.paper import PaperBlock, paper_block, paper_notes, with_paper_rows
from ruwikibench.reporting.plots import plot_stage
from ruwikibench.reporting.settings import settings_table
from ruwikibench.reporting.tables import (
    baseline_note,
    glossary_section,
    markdown_table,
    paired_section,
    report_stages,
    stage_headlines,
    stage_table,
    table_title,
)
from ruwikibench.storage.durable import write_atomic
from ruwikibench.storage.results import StageMetrics, read_metrics
from ruwikibench.storage.rundir import RunDir


def load_run(path: str | Path) -> tuple[str, dict[str, StageMetrics], RunDir]:
    """(name, the stages of its metrics.json validated and upgraded, the run directory)."""
    rundir = RunDir(path)
    return rundir.path.name, read_metrics(rundir).stages, rundir


def compare_runs(paths: list[Path], out: Path, view: str = "failures_excluded", paper: bool = False) -> Path:
    """Write report.md, one CSV and one PNG per stage, and report.html comparing the runs; returns report.md.
    ``paper``: the paper's published results as reference rows of each stage table it has a table of
    (:mod:`ruwikibench.reporting.paper`)."""
    check_report_args(paths, out, view)
    runs = [load_run(p) for p in paths]  # a directory that is not a run stops here, before `out` exists
    stale = stale_notes(runs)
    for note in stale:
        print(f"warning: {note}", file=sys.stderr, flush=True)
    out.mkdir(parents=True, exist_ok=True)
    settings = settings_table(runs)
    _write_csv(out / "settings.csv", settings.csv_rows())
    parts = [
        "# RuWikiBench comparison",
        "",
        *[line for note in stale for line in (f"> **Stale metrics.** {note}", "")],
        *settings.markdown(),
        (
            "×100, mean [95% CI]. *floor*: the embedding metric of each output against the references of "
            "other articles (chance level for this embedder); *rescaled* = (score − floor) / (1 − floor)."
        ),
        "",
    ]
    charts: dict[str, Path] = {}
    paired = paired_comparison(runs)
    references = paper_blocks(runs) if paper else {}
    for stage in report_stages([m for _, m, _ in runs]):
        present = [(name, m[stage]) for name, m, _ in runs if stage in m]
        block = references.get(stage)
        rows = with_paper_rows(stage, stage_table(stage, present, view), block, present[0][1])
        notes = paper_notes(stage, block, present[0][1])
        parts += [
            f"## {table_title(stage)}",
            "",
            markdown_table(rows),
            "",
            *[line for note in notes for line in (note, "")],
            *[line for name, data in present for line in baseline_note(stage, data, name)],
            *glossary_section(stage),
            *paired_section(paired.get(stage, [])),
            f"![{stage}]({stage}.png)",
            "",
        ]
        _write_csv(out / f"{stage}.csv", rows)
        if paired.get(stage):
            _write_csv(out / f"{stage}_paired.csv", paired_table(paired[stage]))
        else:  # one run, or an --out directory used before: no stale table
            (out / f"{stage}_paired.csv").unlink(missing_ok=True)
        plot_stage(
            stage, present, out / f"{stage}.png", view, stage_failures(stage, with_errors(runs, stage))
        )
        charts[stage] = out / f"{stage}.png"
    parts += citation_section(runs)
    parts += _judge_sections(runs, out)
    write_atomic(out / "report.md", "\n".join(parts) + "\n")  # secrets redacted
    write_html_report(runs, out, view, charts, paired, references)
    return out / "report.md"


def check_report_args(paths: list[Path], out: Path, view: str) -> None:
    """``view`` is one of the metrics' views; ``out`` is neither a run directory nor inside one of ``paths``
    (its report.md, metrics and files would be overwritten). One :class:`RunInputError` line each."""
    from ruwikibench.aggregation.metrics import VIEWS
    from ruwikibench.conf.config import RunInputError

    if view not in VIEWS:
        raise RunInputError(f"--view {view}: not a view; the views are {', '.join(VIEWS)}")
    target = out.resolve()
    for path in paths:
        run = Path(path).resolve()
        if target == run or run in target.parents:
            raise RunInputError(f"--out {out}: inside the run directory {path}; write the report elsewhere")
    if (out / "spec.json").exists():
        raise RunInputError(f"--out {out}: a run directory (it has spec.json); write the report elsewhere")


def stale_notes(runs: list[tuple[str, dict[str, Any], RunDir]]) -> list[str]:
    """One line per run whose metrics.json is not the one of its results
    (:mod:`ruwikibench.storage.stamps`)."""
    from ruwikibench.storage.stamps import stale_metrics

    notes = []
    for _, _, rundir in runs:
        why = stale_metrics(rundir)
        if why is not None:
            notes.append(
                f"{rundir.path}: metrics.json is not current ({why}); rerun the run's command to recompute it"
            )
    return notes


def paper_blocks(runs: list[tuple[str, dict[str, Any], RunDir]]) -> dict[str, PaperBlock]:
    """Per stage the paper has a table of: its reference rows and each run's comparability with them."""
    blocks = {}
    for stage in report_stages([m for _, m, _ in runs]):
        block = paper_block(stage, [(name, rundir) for name, m, rundir in runs if stage in m])
        if block is not None:
            blocks[stage] = block
    return blocks


def with_errors(
    runs: list[tuple[str, dict[str, StageMetrics], RunDir]], stage: str
) -> list[tuple[str, StageMetrics, list[dict[str, Any]]]]:
    """(name, the stage's metrics, the run's errors.jsonl records) of the runs that have the stage."""
    return [(name, m[stage], list(rundir.read("errors.jsonl"))) for name, m, rundir in runs if stage in m]


def _write_csv(path: Path, rows: list[list[str]]) -> None:
    text = io.StringIO(newline="")
    csv.writer(text).writerows(rows)
    write_atomic(path, text.getvalue())  # secrets redacted


def paired_comparison(runs: list[tuple[str, dict[str, Any], RunDir]]) -> dict[str, list[PairedRow]]:
    """Per stage, each run after the first against the first over the items both scored (see
    :mod:`ruwikibench.reporting.paired`); empty for one run."""
    if len(runs) < 2:
        return {}
    stages = report_stages([m for _, m, _ in runs])
    first = {stage: next(m[stage] for _, m, _ in runs if stage in m) for stage in stages}
    headlines = {stage: stage_headlines(stage, first[stage]) for stage in stages}
    items = [(name, *load_items(rundir)) for name, _, rundir in runs]
    return compare_runs_paired(items, stages, headlines)


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
