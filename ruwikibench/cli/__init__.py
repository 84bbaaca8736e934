"""`ruwikibench …` — the command line. Each command group lives in its own module of this package."""

from __future__ import annotations

from typing import Any

import typer

app = typer.Typer(
    name="ruwikibench",
    help="RuWikiBench on LangGraph: build corpora, run and score the benchmark stages, write articles.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
run_app = typer.Typer(help="Run benchmark stages over a dataset.", no_args_is_help=True)


@app.command()
def version() -> None:
    """Print the package version."""
    from ruwikibench import __version__

    typer.echo(__version__)


@app.command()
def graph(
    stage: str = typer.Argument(None, help="a registered stage: ranking, outline, sections, writer, plug-ins"),
    xray: int = typer.Option(1, help="how many levels of subgraphs to draw inside their nodes"),
    update_docs: bool = typer.Option(False, "--update-docs", help="rewrite the graph blocks of the stage pages"),
    docs: str = typer.Option("docs", help="the docs folder (with --update-docs)"),
    config: str = typer.Option(None, "--config", "-c", help="a run config: draw the graph with its overrides"),
) -> None:
    """Print a stage graph as a Mermaid flowchart, drawn from the compiled graph (with a config's overrides)."""
    from pathlib import Path

    from ruwikibench.runner.pictures import mermaid
    from ruwikibench.runner.pictures import update_docs as rewrite

    if update_docs:
        changed = rewrite(Path(docs))
        typer.echo("\n".join(f"updated {path}" for path in changed) or "the graph pictures are current")
        return
    if stage is None:
        raise typer.BadParameter("name a stage (ruwikibench stages lists them), or pass --update-docs")
    from ruwikibench.registry import StageRegistryError

    try:
        typer.echo(mermaid(stage, xray, _config_overrides(config)))
    except StageRegistryError as exc:
        typer.echo(f"error: {exc.args[0]}", err=True)
        raise typer.Exit(2) from None


def _config_overrides(path: str | None) -> dict[str, Any]:
    """The checked overrides of a run config (none without one); a bad config is one line, exit status 2."""
    if path is None:
        return {}
    from ruwikibench.config import RunInputError
    from ruwikibench.config_loader import load_config
    from ruwikibench.runner.overrides import check_overrides

    try:
        return check_overrides(load_config(path), path)
    except RunInputError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def _register() -> None:
    """Attach the command groups (one module each; imported lazily by their commands)."""
    from ruwikibench.cli import (  # noqa: F401  (each module registers its commands)
        check,
        corpus,
        corpus_build,
        external,
        run,
        write,
    )
    from ruwikibench.cli.models import models_app

    app.add_typer(run_app, name="run")
    app.add_typer(corpus.app, name="corpus")
    corpus.app.command("build")(corpus_build.build)
    app.add_typer(models_app, name="models")
    from ruwikibench.cli.judge import judge_app

    app.add_typer(judge_app, name="judge")
    from ruwikibench.cli.ranking import ranking_app

    app.add_typer(ranking_app, name="ranking")


_register()


def main() -> None:
    """The `ruwikibench` entry point: bad input (a file, field, option or article), a run directory in use, or an
    unreadable JSONL line ends the command with one plain line on stderr and exit status 2, never a traceback."""
    import sys

    from ruwikibench.config import RunInputError
    from ruwikibench.jsonl import JsonlError
    from ruwikibench.runlock import RunDirLocked

    try:
        app()
    except (RunInputError, RunDirLocked, JsonlError) as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)
