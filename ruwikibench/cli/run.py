"""`ruwikibench run …`, `ruwikibench score`, `ruwikibench report`: the benchmark runner's commands."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Annotated, Any, cast

import typer

from ruwikibench.cli import EXIT_CODES, app, run_app
from ruwikibench.cli.console import print_error
from ruwikibench.cli.run_summary import (
    _failures,
    _show,
    console,
    print_baseline_lines,
    print_glossary,
    print_table,
)

DatasetOpt = Annotated[
    str, typer.Option("--dataset", "-d", help="processed dir, RuWikiBench .json, or hf://OWNER/NAME\\[/FILE]")
]
ConfigOpt = Annotated[Path, typer.Option("--config", "-c", help="run config YAML (configs/local.yaml …)")]
ArticlesOpt = Annotated[int | None, typer.Option("--articles", "-n", help="only the first N articles")]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="parent directory of run directories")]
RunIdOpt = Annotated[
    str | None, typer.Option("--run-id", help="run directory name (default: derived from config+data)")
]
ArticleOpt = Annotated[list[str] | None, typer.Option("--article", "-a", help="an article name (repeatable)")]
ShardOpt = Annotated[
    str | None,
    typer.Option(
        "--shard",
        help="I/N: run share I of N of the articles (by a stable hash of the name), one machine each; "
        "`ruwikibench merge` joins the N shard directories",
    ),
]
ScoreInOpt = Annotated[
    str,
    typer.Option(
        "--score-in",
        help="where units are scored: process (a process of its own, on another core), thread (this "
        "process), auto (a process when the run has 200 units or more and the machine two cores)",
    ),
]


SCORE_IN = ("auto", "thread", "process")


def _load(config_path: Path, dataset_spec: str) -> tuple[Any, Any, Path]:
    """Config and dataset (:func:`ruwikibench.api.load_inputs`); bad input is one line on stderr and exit
    status 2. Articles of a RuWikiBench JSON that failed to import are reported one line each, as `corpus
    import` reports them."""
    from ruwikibench.api import load_inputs
    from ruwikibench.conf.config import RunInputError

    try:
        return load_inputs(config_path, dataset_spec, lambda line: typer.echo(f"error: {line}", err=True))
    except RunInputError as exc:
        print_error(exc)
        raise typer.Exit(2) from None


def with_overrides(config: Any, overrides: dict[str, dict[str, Any]], origin: str) -> Any:
    """The config with CLI options applied to its stages' options (``stage_options.<stage>``), validated
    exactly like the YAML (ConfigError)."""
    from pydantic import ValidationError

    from ruwikibench.conf.config import ConfigError, RunConfig
    from ruwikibench.conf.loader import error_fields

    data = config.model_dump()
    for stage, values in overrides.items():
        data["stage_options"][stage] = {**data["stage_options"].get(stage, {}), **values}
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{origin}: {error_fields(exc)}") from None


def _execute(config: Any, dataset: Any, path: Path, options: Any) -> Any:
    from ruwikibench.api import execute_run

    return execute_run(config, dataset, path, options)


def _run(
    stages: list[str] | None,
    config_path: Path,
    dataset: str,
    articles: int | None,
    article: list[str] | None,
    out: Path,
    run_id: str | None,
    overrides: dict[str, dict[str, Any]] | None = None,
    exit_on_failure: bool = True,
    shard: str | None = None,
    score_in: str = "auto",
) -> Any:
    """Run (or resume) stages; with ``exit_on_failure`` the command ends with the run's exit status (see
    :mod:`ruwikibench.runner.status`) when units failed. The garbage collector rests until the run's first
    request is out (:func:`ruwikibench.runtime.executors.pause_gc`)."""
    from ruwikibench.conf.config import RunInputError
    from ruwikibench.runner.shard import Shard
    from ruwikibench.runtime.executors import gc_paused_for_startup

    try:
        share = Shard.parse(shard) if shard is not None else None
        if score_in not in SCORE_IN:
            raise RunInputError(f"--score-in {score_in}: one of {', '.join(SCORE_IN)}")
    except RunInputError as exc:
        print_error(exc)
        raise typer.Exit(2) from None
    with gc_paused_for_startup():
        from ruwikibench.runner.execute import RunOptions

        config, data, path = _load(config_path, dataset)
        stages = stages or list(config.stages)
        config = with_overrides(config, overrides or {}, "command-line options")
        options = RunOptions(
            stages=stages,
            articles=articles,
            article_names=article,
            out=out,
            run_id=run_id,
            shard=share,
            score_in=cast(Any, score_in),
        )  # checked above
        rundir = _execute(config, data, path, options)
    _show(rundir, stages)
    status = _failures(rundir)
    if status and exit_on_failure:
        raise typer.Exit(status)
    return rundir


@run_app.command("all", epilog=EXIT_CODES)
def run_all(
    dataset: DatasetOpt,
    config: ConfigOpt,
    articles: ArticlesOpt = None,
    article: ArticleOpt = None,
    out: OutOpt = Path("runs"),
    run_id: RunIdOpt = None,
    shard: ShardOpt = None,
    score_in: ScoreInOpt = "auto",
) -> None:
    """The config's stages (default all three), each on gold inputs, articles concurrently; resumes a run."""
    _run(None, config, dataset, articles, article, out, run_id, shard=shard, score_in=score_in)


@run_app.command("ranking", epilog=EXIT_CODES)
def run_ranking(
    dataset: DatasetOpt,
    config: ConfigOpt,
    articles: ArticlesOpt = None,
    article: ArticleOpt = None,
    out: OutOpt = Path("runs"),
    run_id: RunIdOpt = None,
    shard: ShardOpt = None,
    score_in: ScoreInOpt = "auto",
    max_candidates: Annotated[int | None, typer.Option(help="cap the reranked pool")] = None,
    query_mode: Annotated[str | None, typer.Option(help="reference | generated | title")] = None,
) -> None:
    """Stage 1: query expansion -> BM25 -> LLM rerank (paper Tables 3/4)."""
    update: dict[str, Any] = {}
    if max_candidates is not None:
        update["max_candidates"] = max_candidates
    if query_mode is not None:
        update["query_mode"] = query_mode
    _run(
        ["ranking"],
        config,
        dataset,
        articles,
        article,
        out,
        run_id,
        {"ranking": update},
        shard=shard,
        score_in=score_in,
    )


OUTLINE_MODES = {
    "direct": "Direct, no neighbors",
    "neighbors": "Direct, one neighbor",
    "description": "Description",
}


@run_app.command("outline", epilog=EXIT_CODES)
def run_outline(
    dataset: DatasetOpt,
    config: ConfigOpt,
    articles: ArticlesOpt = None,
    article: ArticleOpt = None,
    out: OutOpt = Path("runs"),
    run_id: RunIdOpt = None,
    shard: ShardOpt = None,
    score_in: ScoreInOpt = "auto",
    mode: Annotated[str, typer.Option(help="direct | neighbors | description | all")] = "all",
) -> None:
    """Stage 2: cluster -> describe -> mini-outline -> merge (paper Table 5); `--mode all` runs the three
    modes."""
    from ruwikibench.reporting.tables import cell, stage_columns
    from ruwikibench.storage.results import StageMetrics, read_metrics

    modes = list(OUTLINE_MODES) if mode == "all" else [mode]
    if any(m not in OUTLINE_MODES for m in modes):
        raise typer.BadParameter(f"mode must be one of {', '.join(OUTLINE_MODES)} or all")
    from ruwikibench.runner.status import combined

    cells, statuses = [], []
    for each in modes:  # every mode runs even when one fails entirely; the exit status says so at the end
        rid = f"{run_id}-{each}" if run_id else None
        rundir = _run(
            ["outline"],
            config,
            dataset,
            articles,
            article,
            out,
            rid,
            {"outline": {"mode": each}},
            exit_on_failure=False,
            shard=shard,
            score_in=score_in,
        )
        statuses.append(_status(rundir))
        metrics = read_metrics(rundir).stages.get("outline") or StageMetrics()
        key = stage_columns("outline", metrics)[0][1]
        cells.append(cell(metrics, key, "failures_excluded"))
    print_table("outline — paper Table 5 layout (Mean F1 ×100)", [[OUTLINE_MODES[m] for m in modes], cells])
    if combined(statuses):
        raise typer.Exit(combined(statuses))


def _status(rundir: Any) -> int:
    from ruwikibench.runner.status import run_status

    return run_status(rundir)


@run_app.command("sections", epilog=EXIT_CODES)
def run_sections(
    dataset: DatasetOpt,
    config: ConfigOpt,
    articles: ArticlesOpt = None,
    article: ArticleOpt = None,
    out: OutOpt = Path("runs"),
    run_id: RunIdOpt = None,
    shard: ShardOpt = None,
    score_in: ScoreInOpt = "auto",
    max_snippets: Annotated[int | None, typer.Option(help="cap snippets per section")] = None,
) -> None:
    """Stage 3: group -> iterative summarization -> section text (paper Table 7)."""
    update = {"max_snippets": max_snippets} if max_snippets is not None else {}
    _run(
        ["sections"],
        config,
        dataset,
        articles,
        article,
        out,
        run_id,
        {"sections": update},
        shard=shard,
        score_in=score_in,
    )


@run_app.command("stage", epilog=EXIT_CODES)
def run_stage(
    name: Annotated[str, typer.Argument(help="a registered stage (`ruwikibench stages` lists them)")],
    dataset: DatasetOpt,
    config: ConfigOpt,
    articles: ArticlesOpt = None,
    article: ArticleOpt = None,
    out: OutOpt = Path("runs"),
    run_id: RunIdOpt = None,
    shard: ShardOpt = None,
    score_in: ScoreInOpt = "auto",
) -> None:
    """One stage by its registered name: a built-in one or a stage from an installed plug-in package."""
    from ruwikibench.stage.registry import StageRegistryError, get_stage

    try:
        name = get_stage(name).name  # "article", the writer's earlier name, runs the writer stage
    except StageRegistryError as exc:
        print_error(exc)
        raise typer.Exit(2) from exc
    _run([name], config, dataset, articles, article, out, run_id, shard=shard, score_in=score_in)


@app.command("stages")
def stages() -> None:
    """The registered stages (built in, and from installed packages' `ruwikibench.stages` entry points)."""
    from ruwikibench.stage.contract import defining_stage
    from ruwikibench.stage.registry import known_stages, plugin_errors

    rows = [["stage", "description", "defined in", "columns"]]
    for name, stage in known_stages().items():
        rows.append(
            [
                name,
                stage.description,
                type(defining_stage(stage)).__module__,
                ", ".join(m.label for m in stage.metrics if m.column),
            ]
        )
    print_table("stages", rows)
    for name, error in plugin_errors().items():
        console.print(f"[red]not loaded:[/red] {name}: {error}")


@app.command("score", epilog=EXIT_CODES)
def score(run_dir: Annotated[Path, typer.Argument(help="a run directory")]) -> None:
    """Re-score a saved run from its captured outputs (no LLM call); spec.json records the code that scored
    (`scored_with`)."""
    from ruwikibench.api import rescore_run
    from ruwikibench.storage.runspec import read_spec

    rundir = rescore_run(run_dir)
    spec = read_spec(rundir.path)
    if spec.scored_with is not None and spec.scored_with.changed:
        console.print(
            f"note: scored with other code than made the outputs ({', '.join(spec.scored_with.changed)}); "
            "spec.json records it under scored_with"
        )
    _show(rundir, spec.stages)


@app.command("merge", epilog=EXIT_CODES)
def merge(
    run_dirs: Annotated[
        list[Path], typer.Argument(help="the shard directories of one run (`run … --shard I/N`)")
    ],
    into: Annotated[
        Path | None,
        typer.Option("--into", help="parent folder of the merged run directory (default: the first shard's)"),
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option(
            "--dataset", "-d", help="the dataset, when its path recorded by the shards is not valid here"
        ),
    ] = None,
) -> None:
    """Join the shard directories of one run into one run directory: floors, baselines, metrics and report
    recomputed for the whole (no LLM call)."""
    from ruwikibench.conf.config import RunInputError
    from ruwikibench.runner.merge import merge_shards

    try:
        rundir = merge_shards(run_dirs, into, dataset)
    except RunInputError as exc:
        print_error(exc)
        raise typer.Exit(2) from None
    _show(rundir, list(rundir.read_json("spec.json")["options"]["stages"]))
    status = _failures(rundir)
    if status:
        raise typer.Exit(status)


@app.command("report")
def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="run directories to compare")],
    out: Annotated[Path, typer.Option("--out", "-o")] = Path("runs/report"),
    view: Annotated[str, typer.Option(help="failures_excluded | failures_as_zero")] = "failures_excluded",
    screenshot: Annotated[
        Path | None, typer.Option(help="also save a PNG of report.html (headless Chromium)")
    ] = None,
    paper: Annotated[
        bool,
        typer.Option(
            "--paper",
            help="show the paper's published results (Tables 3-5, 7) "
            "as reference rows, each run marked comparable or not",
        ),
    ] = False,
) -> None:
    """Compare runs in the paper's table layouts: Markdown, CSV, PNG charts with CIs, report.html + article
    pages."""
    from ruwikibench.reporting.compare import compare_runs, load_run, paper_blocks
    from ruwikibench.reporting.tables import marked, marked_rows, report_stages, stage_table, table_title

    path = compare_runs(run_dirs, out, view, paper)
    runs = [load_run(p) for p in run_dirs]
    references = paper_blocks(runs) if paper else {}
    for stage in report_stages([m for _, m, _ in runs]):
        present = [(name, m[stage]) for name, m, _ in runs if stage in m]
        print_table(
            table_title(stage, f"×100, mean [95% CI], {view}"),
            marked_rows(stage, stage_table(stage, present, view)),
        )
        for name, data in present:
            print_baseline_lines(stage, data, name)
        print_glossary(stage)
        if stage in references:  # the paper rows are in report.md/html; here whether each run is comparable
            for comparison in references[stage].comparisons:
                console.print(
                    f"{stage}: {comparison.sentence().replace('**', '')}", markup=False, highlight=False
                )
        paired = out / f"{stage}_paired.csv"
        if paired.exists():
            with open(paired, newline="", encoding="utf-8") as handle:
                rows = list(csv.reader(handle))
            rows = rows[:1] + [[marked(stage, row[0]), *row[1:]] for row in rows[1:]]
            print_table(
                f"{stage}: paired differences vs {present[0][0]} (×100, shared items; p: randomization)", rows
            )
    console.print(f"written: {path}, {out / 'report.html'} (articles: {out / 'articles'})")
    if screenshot is not None:
        from ruwikibench.reporting.browser import BrowserError
        from ruwikibench.reporting.browser import screenshot as take

        try:
            console.print(f"screenshot: {take(out / 'report.html', screenshot)}")
        except BrowserError as exc:
            console.print(f"[red]error:[/red] screenshot: {exc}")
            raise typer.Exit(2) from exc
