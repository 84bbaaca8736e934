"""`ruwikibench check-metrics`: the validity ladder of every embedding metric for the configured embedder."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from ruwikibench.cli import app
from ruwikibench.cli.console import print_error
from ruwikibench.cli.run import ConfigOpt, DatasetOpt, _load, console, print_table

if TYPE_CHECKING:
    from ruwikibench.stage.context import StageContext
    from ruwikibench.validity.ladder import PlantedItem


@app.command("check-metrics")
def check_metrics(
    dataset: DatasetOpt,
    config: ConfigOpt,
    articles: Annotated[
        int,
        typer.Option(
            "--articles", "-n", help="articles to plant outputs on (a ladder needs 6+ items to decide)"
        ),
    ] = 8,
    sections: Annotated[int, typer.Option(help="sections per article (stage 3)")] = 3,
    sentences: Annotated[
        int, typer.Option(help="sentences per section (at least 4: one per 25-point rung)")
    ] = 4,
    stage: Annotated[
        list[str] | None, typer.Option("--stage", help="outline | sections (repeatable)")
    ] = None,
) -> None:
    """The validity ladder: planted outputs of known order (restated reference; 25/50/75 % replaced by other
    articles; wrong article; plus the reference itself, a title template and word salad, reported) scored with
    the config's embedder; for the outline also the structure rung (restated headings in order > shuffled >
    shuffled and flattened). Exit status: 0 every headline metric (outline f1, sections f1) passes and every
    structure metric (outline structure_f1) passes its rung; 1 one fails; 2 unusable options or data; 4 none
    fails but one cannot be decided: its ladder has fewer items than the 6 a paired test needs to reach
    p < 0.05 (plant on more articles)."""
    from ruwikibench.runner.setup import build_context
    from ruwikibench.validity.check import (
        EXIT_UNDECIDED,
        MIN_ITEMS,
        check_rows,
        check_stage,
        failed_headlines,
        ladder_items,
        step_rows,
        undecided_headlines,
    )
    from ruwikibench.validity.structure import stage_structure_items

    stages = stage or ["outline", "sections"]
    unknown = [s for s in stages if s not in ("outline", "sections")]
    if unknown:
        raise typer.BadParameter(f"--stage must be outline or sections, got {', '.join(unknown)}")
    cfg, data, path = _load(config, dataset)
    context = build_context(cfg, data, path, with_llm=False)
    try:
        items = {s: ladder_items(s, data, articles, sections, sentences) for s in stages}
    except ValueError as exc:
        print_error(exc)
        raise typer.Exit(2) from exc
    structure: dict[str, list[PlantedItem]] = {}
    skipped: list[str] = []
    for name in stages:
        try:
            structure[name] = stage_structure_items(name, data, articles, context)
        except ValueError as exc:
            skipped.append(str(exc))
    checks = []
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        for name in stages:
            task = progress.add_task(f"{name}: embedding and scoring", total=1)

            def advance(done: int, total: int, task: TaskID = task) -> None:
                progress.update(task, completed=done, total=total)

            checks += check_stage(name, items[name], context, progress=advance)
    title = f"embedder {cfg.embedder.id}"
    print_table(
        f"{title}: the ladder's rungs, rescaled by the floor (×100, mean [95% CI])", check_rows(checks)
    )
    print_table(
        f"{title}: paired differences of adjacent rungs (×100, mean [95% CI]) and verdicts", step_rows(checks)
    )
    failed, undecided = failed_headlines(checks), undecided_headlines(checks)
    console.print(
        "PASS = the decisive rungs' means go down (restated > 25% > 50% > 75% > wrong article) and every "
        f"paired difference has its CI above 0; a ladder of fewer than {MIN_ITEMS} items cannot decide (no "
        "paired test of fewer reaches p < 0.05); * = headline metric. "
        + _summary("Headline", failed, undecided)
    )
    for reason in skipped:
        console.print(f"The structure rung is skipped: {reason}")
    rungs = [_structure_rung(name, found, context, title) for name, found in structure.items()]
    if failed or any(rung_failed for rung_failed, _ in rungs):
        raise typer.Exit(1)
    if undecided or any(rung_undecided for _, rung_undecided in rungs):
        raise typer.Exit(EXIT_UNDECIDED)


def _summary(kind: str, failed: list[str], undecided: list[str]) -> str:
    """'<kind> metrics failing: …. <kind> metrics that cannot be decided: ….', or 'Every <kind> metric
    passes.'"""
    parts = [f"{kind} metrics failing: {', '.join(failed)}."] if failed else []
    if undecided:
        parts.append(f"{kind} metrics that cannot be decided: {', '.join(undecided)}.")
    return " ".join(parts) or f"Every {kind.lower()} metric passes."


def _structure_rung(
    name: str, items: list[PlantedItem], context: StageContext, title: str
) -> tuple[list[str], list[str]]:
    """Print a stage's structure rung (none without items); the structure metrics that fail it and those it
    cannot decide (too few articles)."""
    from ruwikibench.validity.structure import (
        failed_structure,
        structure_checks,
        structure_rows,
        undecided_structure,
    )

    if not items:
        return [], []
    with console.status(f"{name}: the structure rung"):
        checks = structure_checks(name, items, context)
    print_table(
        f"{title}: {name} structure rung, {len(items)} articles: restated headings in order, shuffled, "
        "shuffled and flattened (rescaled ×100, mean [95% CI])",
        structure_rows(checks),
    )
    failed, undecided = failed_structure(checks), undecided_structure(checks)
    console.print(
        "Structure rung: PASS = in order > shuffled > shuffled and flattened, each paired difference with "
        "its CI above 0 (set-based metrics shown for contrast, not required). "
        + _summary("Structure", failed, undecided)
    )
    return failed, undecided
