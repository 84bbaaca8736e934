"""`ruwikibench …` — the command line. Each command group lives in its own module of this package."""

from __future__ import annotations

from typing import Any

import typer

EXIT_CODES = (  # ruwikibench.runner.status computes them
    "Exit status: 0 no unit failed; 1 units failed and none that needed the endpoint succeeded (endpoint "
    "down, every request failing); 2 bad input (one 'error:' line naming the file, field or option; nothing "
    "run); 3 some units failed, others succeeded (a partial run: the same command resumes it); "
    "70 an internal error (a bug: its traceback is written to a file named on stderr; "
    "--debug or RUWIKIBENCH_DEBUG=1 prints it)."
)

app = typer.Typer(
    name="ruwikibench",
    help="RuWikiBench on LangGraph: build corpora, run and score the benchmark stages, write articles.",
    epilog=EXIT_CODES,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
run_app = typer.Typer(help="Run benchmark stages over a dataset.", epilog=EXIT_CODES, no_args_is_help=True)


@app.command()
def version() -> None:
    """Print the package version."""
    from ruwikibench.version import __version__

    typer.echo(__version__)


@app.command()
def graph(
    stage: str = typer.Argument(
        None, help="a registered stage: ranking, outline, sections, writer, plug-ins"
    ),
    xray: int = typer.Option(1, help="how many levels of subgraphs to draw inside their nodes"),
    update_docs: bool = typer.Option(
        False, "--update-docs", help="rewrite the graph blocks of the stage pages"
    ),
    docs: str = typer.Option("docs", help="the docs folder (with --update-docs)"),
    config: str = typer.Option(
        None, "--config", "-c", help="a run config: draw the graph with its overrides"
    ),
) -> None:
    """Print a stage graph as a Mermaid flowchart, drawn from the compiled graph (with a config's
    overrides)."""
    from pathlib import Path

    from ruwikibench.cli.pictures import mermaid
    from ruwikibench.cli.pictures import update_docs as rewrite

    if update_docs:
        changed = rewrite(Path(docs))
        typer.echo("\n".join(f"updated {path}" for path in changed) or "the graph pictures are current")
        return
    if stage is None:
        raise typer.BadParameter("name a stage (ruwikibench stages lists them), or pass --update-docs")
    from ruwikibench.stage.registry import StageRegistryError

    try:
        typer.echo(mermaid(stage, xray, _config_overrides(config)))
    except StageRegistryError as exc:
        typer.echo(f"error: {exc.args[0]}", err=True)
        raise typer.Exit(2) from None


def _config_overrides(path: str | None) -> dict[str, Any]:
    """The checked overrides of a run config (none without one); a bad config is one line, exit status 2."""
    if path is None:
        return {}
    from ruwikibench.conf.config import RunInputError
    from ruwikibench.conf.loader import load_config
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


DEBUG_ENV = "RUWIKIBENCH_DEBUG"


def main() -> None:
    """The `ruwikibench` entry point. Bad input (a file, field, option or article), a run directory in use, an
    unreadable JSONL line, a usage error, a machine fault (``OSError``) end the command with one ``error:``
    line on stderr and exit status 2, never a traceback. Any other exception is a bug
    (:mod:`ruwikibench.cli.errors`): one ``error: internal error …`` line naming the file its traceback was
    written to, exit status 70; ``--debug`` (anywhere on the command line) or ``RUWIKIBENCH_DEBUG=1`` prints
    the traceback instead. A command's own status (0, 1, 3: :mod:`ruwikibench.runner.status`) is the
    process's."""
    import os
    import sys

    from ruwikibench.conf.secrets import install_log_redaction

    install_log_redaction()
    debug = "--debug" in sys.argv[1:] or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    args = [a for a in sys.argv[1:] if a != "--debug"]
    try:
        status = app(args=args, standalone_mode=False)
    except BaseException as exc:  # noqa: BLE001 - the one place that turns every error into one line
        status = _error_status(exc, debug)
    sys.stdout.flush()
    sys.exit(status if isinstance(status, int) else 0)


def _error_status(exc: BaseException, debug: bool) -> int:
    """Print ``exc`` as one ``error:`` line (an internal error's traceback written to a file, or printed under
    ``debug``); the exit status: 2 for bad input, 70 for an internal error."""
    import sys

    from typer._click import exceptions as click  # typer's own click (typer >= 0.25 vendors it)

    from ruwikibench.cli.errors import INTERNAL_ERROR, input_error_line, internal_error_line, is_input_error

    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    if isinstance(exc, KeyboardInterrupt):
        print("error: interrupted", file=sys.stderr, flush=True)
        return 130
    if isinstance(exc, click.NoArgsIsHelpError):  # a bare command group: its help, as before
        exc.show()
        return exc.exit_code
    status = 2
    if isinstance(exc, click.ClickException):
        message = exc.format_message()
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            message += f" (see: {exc.ctx.command_path} --help)"
    elif is_input_error(exc):
        message = input_error_line(exc)
    else:
        message, status = internal_error_line(exc, debug), INTERNAL_ERROR
    from ruwikibench.conf.secrets import redact

    print(redact("error: " + " ".join(message.split())), file=sys.stderr, flush=True)
    return status
