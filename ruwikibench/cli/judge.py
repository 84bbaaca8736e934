"""`ruwikibench judge …`: criteria judge, pairwise judge, judge meta-evaluation."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ruwikibench.cli.console import make_console, print_error

judge_app = typer.Typer(
    help="LLM judges: criteria (POLLUX), pairwise (rulm-sbs2), agreement with humans.", no_args_is_help=True
)
console = make_console()

ModeOpt = Annotated[
    str, typer.Option("--mode", help="free: reference-free; guided: the judge also sees the reference")
]
JudgeConfigOpt = Annotated[
    Path | None, typer.Option("--judge-config", help="run config YAML naming the judge model (role 'judge')")
]
StageOpt = Annotated[list[str] | None, typer.Option("--stage", help="judge only texts of these stages")]
LimitOpt = Annotated[int | None, typer.Option("--limit", help="judge only the first N texts / items")]
MaxTokensOpt = Annotated[int | None, typer.Option("--max-tokens", help="judge answer cap (default: model's)")]
TextCharsOpt = Annotated[int, typer.Option("--text-chars", help="cut each text to this many characters")]
RefCharsOpt = Annotated[int, typer.Option("--reference-chars", help="cut the reference text (guided mode)")]
PromptOpt = Annotated[
    str | None,
    typer.Option("--prompt", help="judge prompt file (under prompts/ or a path) instead of the default"),
]


def _table(rows: list[dict[str, str]], title: str) -> None:
    if not rows:
        return
    table = Table(title=escape(title))
    for column in rows[0]:
        table.add_column(escape(column))
    for row in rows:
        table.add_row(*(escape(value) for value in row.values()))
    console.print(table)


def _fail(message: str) -> None:
    print_error(message)
    raise typer.Exit(2)


def _check_mode(mode: str) -> None:
    if mode not in ("free", "guided"):
        _fail(f"--mode must be 'free' or 'guided', not {mode!r}")


@judge_app.command("criteria")
def criteria_command(
    run_dir: Annotated[Path, typer.Argument(help="run directory (spec.json + generated.jsonl)")],
    criteria: Annotated[Path | None, typer.Option("--criteria", help="criteria YAML file or folder")] = None,
    judge_config: JudgeConfigOpt = None,
    mode: ModeOpt = "free",
    only: Annotated[list[str] | None, typer.Option("--only", help="judge only these criteria")] = None,
    stage: StageOpt = None,
    limit: LimitOpt = None,
    max_tokens: MaxTokensOpt = None,
    text_chars: TextCharsOpt = 6000,
    reference_chars: RefCharsOpt = 4000,
    sources_chars: Annotated[int, typer.Option("--sources-chars", help="cut all sources together")] = 6000,
    retry_unparseable: Annotated[bool, typer.Option(help="judge unparseable verdicts again")] = False,
    prompt: PromptOpt = None,
) -> None:
    """Judge each generated text on each criterion; results in RUN_DIR/judge_criteria.jsonl and .json."""
    from ruwikibench.evaluators.judges.common import Limits, judge_llm
    from ruwikibench.evaluators.judges.common import judge_config as pick_config
    from ruwikibench.evaluators.judges.criteria import (
        CriteriaOptions,
        judge_run,
        load_criteria,
        summarize_judgements,
    )
    from ruwikibench.evaluators.judges.rundir import RunError, load_run

    _check_mode(mode)
    try:
        run = load_run(run_dir, stage)
        if limit is not None:
            run.texts = run.texts[:limit]
        chosen = load_criteria(criteria).select(only)
        llm, judge = judge_llm(pick_config(run, judge_config))
    except (RunError, ValueError, FileNotFoundError, KeyError) as exc:
        _fail(str(exc))
        return
    options = CriteriaOptions(
        mode=mode,  # type: ignore[arg-type]
        max_tokens=max_tokens,
        retry_unparseable=retry_unparseable,
        limits=Limits(text_chars=text_chars, reference_chars=reference_chars, sources_chars=sources_chars),
    )
    if prompt:
        options.prompt = prompt
    console.print(f"judging {len(run.texts)} texts × {len(chosen.criteria)} criteria with {judge} ({mode})")
    summary = asyncio.run(judge_run(run, llm, chosen, judge=judge, options=options))
    console.print(f"new verdicts: {summary['judged_now']}; usage: {summary['usage']}")
    _table(summarize_judgements(run.path), f"criteria judge — {run.run_id}")


@judge_app.command("pairwise")
def pairwise_command(
    run_a: Annotated[Path, typer.Argument(help="run A (the reference by default)")],
    run_b: Annotated[Path, typer.Argument(help="run B")],
    reference: Annotated[
        str | None,
        typer.Option("--reference", help="the reference run (sits at 0): RUN_A or RUN_B, path or id"),
    ] = None,
    judge_config: JudgeConfigOpt = None,
    mode: ModeOpt = "free",
    order: Annotated[str, typer.Option("--order", help="random (seeded, per item) or both")] = "random",
    seed: Annotated[int, typer.Option("--seed")] = 0,
    out: Annotated[
        Path | None, typer.Option("--out", help="output folder (default: the candidate run)")
    ] = None,
    stage: StageOpt = None,
    limit: LimitOpt = None,
    max_tokens: MaxTokensOpt = None,
    text_chars: TextCharsOpt = 6000,
    reference_chars: RefCharsOpt = 4000,
    retry_unparseable: Annotated[bool, typer.Option(help="judge unparseable verdicts again")] = False,
    prompt: PromptOpt = None,
) -> None:
    """Side-by-side judge of the same items of two runs; delta B − A against the reference run."""
    from ruwikibench.evaluators.judges.common import Limits, judge_llm
    from ruwikibench.evaluators.judges.common import judge_config as pick_config
    from ruwikibench.evaluators.judges.pairwise import PairwiseOptions, judge_runs, summarize_pairwise
    from ruwikibench.evaluators.judges.rundir import RunError, load_run

    _check_mode(mode)
    if order not in ("random", "both"):
        _fail(f"--order must be 'random' or 'both', not {order!r}")
    try:
        first, second = load_run(run_a, stage), load_run(run_b, stage)
        ref, cand = _roles(first, second, reference)
        if limit is not None:
            ref.texts = ref.texts[:limit]
            keep = {(t.stage, t.article, t.item) for t in ref.texts}
            cand.texts = [t for t in cand.texts if (t.stage, t.article, t.item) in keep]
        llm, judge = judge_llm(pick_config(ref, judge_config))
    except (RunError, ValueError, KeyError) as exc:
        _fail(str(exc))
        return
    options = PairwiseOptions(
        mode=mode,  # type: ignore[arg-type]
        order=order,  # type: ignore[arg-type]
        seed=seed,
        max_tokens=max_tokens,
        retry_unparseable=retry_unparseable,
        limits=Limits(text_chars=text_chars, reference_chars=reference_chars),
    )
    if prompt:
        options.prompt_guided = prompt if mode == "guided" else options.prompt_guided
        options.prompt = prompt if mode == "free" else options.prompt
    target = out or cand.path
    target.mkdir(parents=True, exist_ok=True)
    try:
        summary = asyncio.run(judge_runs(ref, cand, llm, judge=judge, out_dir=target, options=options))
    except RunError as exc:
        _fail(str(exc))
        return
    console.print(
        f"reference A = {summary.reference_run}, candidate B = {summary.candidate_run}, judge {judge}"
    )
    _table(summarize_pairwise(target), f"pairwise judge — results in {target}")


def _roles(first, second, reference: str | None):  # type: ignore[no-untyped-def]
    """(reference run, candidate run): RUN_A is the reference unless --reference names RUN_B."""
    from ruwikibench.evaluators.judges.rundir import RunError

    if reference is None:
        return first, second
    for run, other in ((first, second), (second, first)):
        if reference == run.run_id or Path(reference).resolve() == run.path.resolve():
            return run, other
    raise RunError(f"--reference {reference!r} is neither RUN_A ({first.run_id}) nor RUN_B ({second.run_id})")


@judge_app.command("meta")
def meta_command(
    judged: Annotated[
        Path, typer.Argument(help="judge verdicts: a run directory, judge_criteria.jsonl, or CSV")
    ],
    human: Annotated[Path, typer.Argument(help="human scores JSONL/CSV: item, criterion, annotator, score")],
    out: Annotated[
        Path | None, typer.Option("--out", help="output JSON (default: judge_meta.json beside)")
    ] = None,
) -> None:
    """Agreement of a judge with human scores: MAE, Spearman, verdict confidence, confusion matrix."""
    from ruwikibench.evaluators.judges.meta import meta_row, run_meta
    from ruwikibench.evaluators.judges.rundir import RunError

    try:
        results, path = run_meta(judged, human, out)
    except RunError as exc:
        _fail(str(exc))
        return
    for result in results:
        rows = [meta_row(result, "all", result.overall)]
        rows += [meta_row(result, c.criterion, c) for c in result.per_criterion]
        _table(rows, f"{result.judge} ({result.mode}) vs humans")
        console.print(
            f"human instances {result.human_instances}, without a unique mode {result.no_mode}, "
            f"not judged {result.not_judged}, unparsed verdicts {result.judge_unparsed}"
        )
        _confusion(result.overall.confusion.labels, result.overall.confusion.matrix)
    console.print(f"written: {path}")


def _confusion(labels: list[int], matrix: list[list[int]]) -> None:
    table = Table(title="confusion (rows: human mode, columns: judge)")
    table.add_column("human \\ judge")
    for label in labels:
        table.add_column(str(label))
    for label, row in zip(labels, matrix):
        table.add_row(str(label), *map(str, row))
    console.print(table)
