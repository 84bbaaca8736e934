"""`ruwikibench check-metrics`: the floor and separation of every embedding metric for the configured embedder."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from ruwikibench.cli import app
from ruwikibench.cli.console import print_error
from ruwikibench.cli.run import ConfigOpt, DatasetOpt, _load, console, print_table


@app.command("check-metrics")
def check_metrics(
    dataset: DatasetOpt,
    config: ConfigOpt,
    articles: Annotated[int, typer.Option("--articles", "-n", help="articles to plant outputs on")] = 4,
    sections: Annotated[int, typer.Option(help="sections per article (stage 3)")] = 2,
    sentences: Annotated[int, typer.Option(help="sentences kept per section text")] = 6,
    stage: Annotated[list[str] | None, typer.Option("--stage", help="outline | sections (repeatable)")] = None,
) -> None:
    """Planted checks: the reference itself vs a wrong article's reference vs shuffled words, scored with the
    config's embedder; prints each embedding metric's floor, the rescaled scores and their separation."""
    from ruwikibench.runner.check import check_rows, check_stage, outline_items, section_items
    from ruwikibench.runner.setup import build_context

    stages = stage or ["outline", "sections"]
    unknown = [s for s in stages if s not in ("outline", "sections")]
    if unknown:
        raise typer.BadParameter(f"--stage must be outline or sections, got {', '.join(unknown)}")
    cfg, data, path = _load(config, dataset)
    context = build_context(cfg, data, path, with_llm=False)
    try:
        planted = {
            "outline": lambda: outline_items(data, articles),
            "sections": lambda: section_items(data, articles, sections, sentences),
        }
        items = {s: planted[s]() for s in stages}
    except ValueError as exc:
        print_error(exc)
        raise typer.Exit(2) from exc
    checks = []
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as progress:
        for name in stages:
            task = progress.add_task(f"{name}: embedding and scoring", total=1)

            def advance(done: int, total: int, task: TaskID = task) -> None:
                progress.update(task, completed=done, total=total)

            checks += check_stage(name, items[name], context, progress=advance)
    print_table(f"embedder {cfg.embedder.id}: floor and rescaled scores (×100, mean [95% CI])", check_rows(checks))
    weak = [f"{c.stage}/{c.metric}" for c in checks if not (c.separated and c.separation >= 0.5)]
    console.print(
        "separation = rescaled(reference) − best rescaled worse output; 'separates' needs ≥ 50 and CIs apart. "
        + (f"Weak: {', '.join(weak)}" if weak else "Every metric separates.")
    )

