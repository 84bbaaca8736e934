"""`ruwikibench score-outputs`, `ruwikibench import-storm`: score outputs produced by other systems."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from ruwikibench.cli import EXIT_CODES, app
from ruwikibench.cli.console import make_console, print_error

console = make_console()


def _current_stage(name: str) -> str:
    """--stage article (the writer's earlier name) still works."""
    from ruwikibench.stage.contract import current_stage_name

    return current_stage_name(name)


StageOpt = Annotated[
    str, typer.Option("--stage", "-s", help="ranking | outline | sections | writer", callback=_current_stage)
]
DatasetOpt = Annotated[
    str, typer.Option("--dataset", "-d", help="processed dir, RuWikiBench .json, or hf://OWNER/NAME\\[/FILE]")
]


def _fail(exc: Exception) -> typer.Exit:
    print_error(exc)
    return typer.Exit(2)


def _load(dataset_spec: str, config_path: Path | None) -> tuple[Any, Any, Path]:
    from ruwikibench.conf.config import ConfigError, RunConfig
    from ruwikibench.conf.loader import load_config
    from ruwikibench.corpus_builder.dataset_files import DatasetError, resolve_dataset

    try:
        config = load_config(config_path) if config_path else RunConfig(name="external", models={})
        dataset, path = resolve_dataset(dataset_spec)
    except (ConfigError, DatasetError, FileNotFoundError, ValueError) as exc:
        raise _fail(exc) from exc
    return config, dataset, path


@app.command("score-outputs", epilog=EXIT_CODES)
def score_outputs(
    stage: StageOpt,
    dataset: DatasetOpt,
    outputs: Annotated[
        Path | None, typer.Option("--outputs", help="JSONL of the stage's format (docs/external.md)")
    ] = None,
    storm: Annotated[
        Path | None, typer.Option("--storm", help="STORM output dir of topic folders (--stage writer)")
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="parent directory of run directories")] = Path(
        "runs"
    ),
    name: Annotated[
        str | None, typer.Option("--name", help="run directory name (default: derived from the inputs)")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="evaluator settings and embedder (use the native runs' config)"),
    ] = None,
    article: Annotated[
        list[str] | None, typer.Option("--article", "-a", help="only this article (repeatable)")
    ] = None,
    articles: Annotated[
        int | None, typer.Option("--articles", "-n", help="only the first N articles")
    ] = None,
    system: Annotated[
        str | None, typer.Option("--system", help="what produced the outputs (recorded in spec.json)")
    ] = None,
) -> None:
    """Score outputs of another system (or STORM folders) into a run directory beside native runs; no LLM
    call."""
    from ruwikibench.cli.run import _show
    from ruwikibench.external.formats import STAGES, ExternalFormatError
    from ruwikibench.external.score import ExternalOptions
    from ruwikibench.external.score import score_outputs as score
    from ruwikibench.external.storm import storm_rows, write_rows
    from ruwikibench.runner.setup import build_context

    if stage not in STAGES:
        raise _fail(ValueError(f"--stage must be one of {', '.join(STAGES)}, got {stage!r}"))
    if (outputs is None) == (storm is None):
        raise _fail(ValueError("give exactly one of --outputs FILE.jsonl and --storm DIR"))
    if storm is not None and stage != "writer":
        raise _fail(ValueError("--storm gives whole articles: use it with --stage writer"))
    cfg, data, path = _load(dataset, config)
    with tempfile.TemporaryDirectory() as tmp:
        origin: dict[str, Any] = {}
        label = None
        try:
            if storm is not None:
                outputs = write_rows(storm_rows(storm, data), Path(tmp) / "storm.jsonl")
                origin = {"file": None, "storm_dir": str(storm.resolve())}
                system = system or "STORM"
                label = f"the STORM directory {storm}"
            assert outputs is not None
            options = ExternalOptions(
                stage=stage,
                outputs=outputs,
                out=out,
                name=name,
                articles=articles,
                article_names=article,
                system=system,
                origin=origin,
                label=label,
            )
            rundir = score(build_context(cfg, data, path, with_llm=False), str(path), options)
        except ExternalFormatError as exc:
            raise _fail(exc) from exc
    _show(rundir, ["outline", "sections"] if stage == "writer" else [stage])
    if stage == "writer":
        from ruwikibench.cli.run import print_table
        from ruwikibench.cli.run_summary import print_baseline_lines
        from ruwikibench.storage.results import read_metrics
        from ruwikibench.writer.batch import article_table

        stages = read_metrics(rundir).stages
        print_table(
            "writer — whole article (×100, mean [95% CI], failures excluded)",
            article_table(rundir.path.name, stages),
        )
        if "writer" in stages:
            print_baseline_lines("writer", stages["writer"], "the run")
    _score_exit(rundir)


def _score_exit(rundir: Any) -> None:
    """Exit 0 when every unit was scored, 1 when none was, 3 when some were; one line naming the first
    failure."""
    from ruwikibench.runner.status import exit_status
    from ruwikibench.storage.rundir import scored_units

    errors = rundir.open_errors()
    status = exit_status(len(errors), len(scored_units(rundir.results())))
    if status:
        first = errors[0]
        reason = " ".join(str(first["reason"]).split())
        print_error(
            f"{len(errors)} units failed to score (first: {first['stage']} / {first['article']}: {reason}); "
            f"all in {rundir.file('errors.jsonl')}"
        )
        raise typer.Exit(status)


@app.command("import-storm")
def import_storm(
    storm: Annotated[Path, typer.Argument(help="STORM output dir of topic folders")],
    dataset: DatasetOpt,
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL to write (writer format)")] = Path(
        "storm.jsonl"
    ),
) -> None:
    """Convert STORM topic folders into the `writer` JSONL of `score-outputs` (to inspect or edit first)."""
    from ruwikibench.external.formats import ExternalFormatError
    from ruwikibench.external.storm import storm_rows, write_rows

    _, data, _ = _load(dataset, None)
    try:
        rows = storm_rows(storm, data)
    except ExternalFormatError as exc:
        raise _fail(exc) from exc
    write_rows(rows, out)
    console.print(f"{len(rows)} articles written to {out}")


@app.command("external-template")
def external_template(
    stage: StageOpt,
    dataset: DatasetOpt,
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL to write")] = Path("outputs.jsonl"),
    article: Annotated[
        list[str] | None, typer.Option("--article", "-a", help="only this article (repeatable)")
    ] = None,
    articles: Annotated[
        int | None, typer.Option("--articles", "-n", help="only the first N articles")
    ] = None,
) -> None:
    """Write empty rows of a stage's external format (one per expected unit) for another system to fill."""
    from ruwikibench.external.formats import STAGES
    from ruwikibench.external.storm import write_rows
    from ruwikibench.external.template import template_rows
    from ruwikibench.runner.execute import RunOptions, select_articles

    if stage not in STAGES:
        raise _fail(ValueError(f"--stage must be one of {', '.join(STAGES)}, got {stage!r}"))
    _, data, _ = _load(dataset, None)
    try:
        selected = select_articles(data, RunOptions(articles=articles, article_names=article))
    except KeyError as exc:
        raise _fail(ValueError(f"--article: {exc.args[0]}")) from exc
    rows = template_rows(data, selected, stage)
    write_rows(rows, out)
    console.print(f"{len(rows)} {stage} rows written to {out}")
