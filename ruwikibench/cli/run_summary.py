"""What the run commands print: tables, a run against its no-LLM baselines, the columns' glossary, a run's
summary (:func:`_show`) and the one line on failed units (:func:`_failures`). :mod:`ruwikibench.cli.run`
imports them from here; the other commands print through them too.
"""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from ruwikibench.cli.console import make_console

console = make_console()


def print_table(title: str, rows: list[list[str]]) -> None:
    table = Table(title=title)
    for header in rows[0]:
        table.add_column(header)
    for row in rows[1:]:
        table.add_row(*row)
    console.print(table)


def print_baseline_lines(stage: str, data: Any, run: str) -> None:
    """The run against its best no-LLM baseline, one line per compared metric."""
    from ruwikibench.reporting.tables import baseline_lines

    for line in baseline_lines(stage, data, run):
        console.print(f"{stage}: {line.removeprefix('- ').replace('**', '')}", markup=False, highlight=False)


def print_glossary(stage: str) -> None:
    """The stage's columns with their direction marks and one-line meanings (nothing without declarations)."""
    from ruwikibench.reporting.tables import GLOSSARY_NOTE, glossary_rows

    rows = glossary_rows(stage)
    if len(rows) > 1:
        print_table(f"{stage}: what the columns mean ({GLOSSARY_NOTE})", rows)


def _show(rundir: Any, stages: list[str]) -> None:
    from ruwikibench.reporting.tables import judgements_line, marked_rows, stage_table, table_title
    from ruwikibench.storage.results import read_metrics

    metrics = read_metrics(rundir).stages
    for stage in stages:
        if stage in metrics:
            rows = marked_rows(stage, stage_table(stage, [(rundir.path.name, metrics[stage])]))
            print_table(table_title(stage, "×100, mean [95% CI]"), rows)
            print_baseline_lines(stage, metrics[stage], "the run")
            print_glossary(stage)
            if judgements_line(metrics[stage]):
                console.print(f"{stage}: {judgements_line(metrics[stage])}", markup=False, highlight=False)
    console.print(f"run directory: {rundir.path}  (report: {rundir.path / 'report.md'})")


def _failures(rundir: Any) -> int:
    """One line on stderr when units failed; the run's exit status (0, 1: nothing that needed the endpoint
    succeeded, 3: a partial run)."""
    from ruwikibench.runner.status import NONE_SUCCEEDED, run_status
    from ruwikibench.storage.runspec import read_spec

    errors = rundir.open_errors()
    if not errors:
        return 0
    status = run_status(rundir)
    units = read_spec(rundir.path).units
    total = units.total if units is not None else 0
    first = errors[0]
    reason = " ".join(str(first["reason"]).split())  # an exception text with newlines stays one line
    none = "; no unit that needed the endpoint succeeded" if status == NONE_SUCCEEDED else ""
    typer.echo(
        f"error: {len(errors)} of {total} units failed{none} (first: {first['stage']} / {first['article']}: "
        f"{reason}); all in {rundir.file('errors.jsonl')}",
        err=True,
    )
    return status
