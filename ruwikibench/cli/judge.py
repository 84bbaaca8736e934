"""`ruwikibench judge …`: criteria judge, pairwise judge, judge meta-evaluation."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ruwikibench.cli import EXIT_CODES
from ruwikibench.cli.console import make_console, print_error

if TYPE_CHECKING:
    from ruwikibench.conf.config import RunConfig
    from ruwikibench.evaluators.judges.rundir import Run

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


@judge_app.command("criteria", epilog=EXIT_CODES)
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
    from ruwikibench.evaluators.judges.criteria import CriteriaOptions, judge_run
    from ruwikibench.evaluators.judges.criteria_set import load_criteria
    from ruwikibench.evaluators.judges.criteria_summary import summarize_judgements
    from ruwikibench.evaluators.judges.rundir import RunError, load_run
    from ruwikibench.prompts import PromptLibrary

    _check_mode(mode)
    try:
        run = load_run(run_dir, stage)
        if limit is not None:
            run.texts = run.texts[:limit]
        config = pick_config(run, judge_config)
        chosen = load_criteria(criteria or config.judges.criteria).select(only)
        llm, judge = judge_llm(config)
    except (RunError, ValueError, FileNotFoundError, KeyError) as exc:
        _fail(str(exc))
        return
    options = CriteriaOptions(
        mode=mode,  # type: ignore[arg-type]
        max_tokens=max_tokens,
        retry_unparseable=retry_unparseable,
        limits=Limits(text_chars=text_chars, reference_chars=reference_chars, sources_chars=sources_chars),
        prompt=prompt or config.judges.criteria_prompt,
        reference_block=config.judges.reference_block,
        sources_block=config.judges.sources_block,
    )
    console.print(f"judging {len(run.texts)} texts × {len(chosen.criteria)} criteria with {judge} ({mode})")
    prompts = PromptLibrary(config.prompts_dir)  # the judge config's prompt folder, then the package's
    summary = asyncio.run(judge_run(run, llm, chosen, judge=judge, options=options, prompts=prompts))
    console.print(f"new verdicts: {summary['judged_now']}; usage: {summary['usage']}")
    _table(summarize_judgements(run.path), f"criteria judge — {run.run_id}")
    _exit_with(_criteria_statuses(run, judge, mode), run.path / "judge_criteria.jsonl")


def _criteria_statuses(run, judge: str, mode: str) -> dict[str, int]:
    """Status counts of the latest verdicts of this judge and mode on the run's texts."""
    from collections import Counter

    from ruwikibench.evaluators.judges.criteria import RESULTS_JSONL, latest_verdicts, read_records

    texts = {(t.stage, t.article, t.item) for t in run.texts}
    records = latest_verdicts(read_records(run.path / RESULTS_JSONL))
    return dict(
        Counter(
            r.status
            for r in records
            if r.judge == judge and r.mode == mode and (r.stage, r.article, r.item) in texts
        )
    )


def _exit_with(statuses: dict[str, int], path: Path) -> None:
    """Exit status of a judge command from its verdicts' statuses: 0 none failed, 1 every asked one failed, 3
    some failed (the same command asks them again); one line on stderr when any failed."""
    from ruwikibench.runner.status import exit_status

    failed = statuses.get("error", 0)
    succeeded = sum(n for status, n in statuses.items() if status not in ("error", "not_applicable"))
    status = exit_status(failed, succeeded)
    if status:
        print_error(
            f"{failed} of {failed + succeeded} verdicts failed (endpoint errors; the same command asks "
            f"them again); all in {path}"
        )
        raise typer.Exit(status)


@judge_app.command("pairwise", epilog=EXIT_CODES)
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
    from ruwikibench.evaluators.judges.pairwise import PairwiseOptions, judge_runs
    from ruwikibench.evaluators.judges.pairwise_summary import summarize_pairwise
    from ruwikibench.evaluators.judges.rundir import RunError, load_run
    from ruwikibench.prompts import PromptLibrary

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
        config = pick_config(ref, judge_config)
        llm, judge = judge_llm(config)
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
        prompt=(prompt if mode == "free" else None) or config.judges.pairwise_prompt,
        prompt_guided=(prompt if mode == "guided" else None) or config.judges.pairwise_prompt_guided,
    )
    target = out or cand.path
    target.mkdir(parents=True, exist_ok=True)
    try:
        summary = asyncio.run(
            judge_runs(
                ref,
                cand,
                llm,
                judge=judge,
                out_dir=target,
                options=options,
                prompts=PromptLibrary(config.prompts_dir),
            )
        )
    except RunError as exc:
        _fail(str(exc))
        return
    console.print(
        f"reference A = {summary.reference_run}, candidate B = {summary.candidate_run}, judge {judge}"
    )
    _table(summarize_pairwise(target), f"pairwise judge — results in {target}")
    _exit_with(summary.statuses, target)


def _roles(first, second, reference: str | None):
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


@judge_app.command("citations", epilog=EXIT_CODES)
def citations_command(
    run_dir: Annotated[
        Path, typer.Argument(help="run directory (write --batch, write --out, or an external article run)")
    ],
    judge_config: Annotated[
        Path | None,
        typer.Option(
            "--judge-config",
            help="run config YAML naming the support model (role 'support', else "
            "'judge'); default: the run's own config",
        ),
    ] = None,
    dataset: Annotated[
        str | None, typer.Option("--dataset", help="dataset with the texts of an external article's sources")
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option("--threshold", help="P(supported) needed (default: config citations.threshold)"),
    ] = None,
) -> None:
    """Citation faithfulness: is each cited sentence supported by the snippets it cites (ALCE-style)?"""
    from ruwikibench.cli.judge_citations import citations_config, dataset_of, judge_citations
    from ruwikibench.corpus_builder.dataset_files import DatasetError
    from ruwikibench.evaluators.judges.citations import summarize_citations
    from ruwikibench.evaluators.judges.rundir import RunError

    try:
        config = citations_config(run_dir, judge_config)
        loaded = dataset_of(dataset)
    except (RunError, DatasetError, ValueError) as exc:
        _fail(str(exc))
        return
    if threshold is not None:
        config.citations.threshold = threshold
    try:
        summary = asyncio.run(judge_citations(run_dir, config, loaded))
    except RunError as exc:
        _fail(str(exc))
        return
    console.print(f"support checks asked now: {summary['checks_now']}; usage: {summary['usage']}")
    _table(summarize_citations(run_dir), f"citation faithfulness — {run_dir} (×100, mean [95% CI])")
    console.print(f"written: {run_dir / 'citations.json'}")
    _exit_with(summary["statuses"], run_dir / "citations.jsonl")


@judge_app.command("citations-meta")
def citations_meta_command(
    config: Annotated[
        list[Path] | None,
        typer.Option(
            "--config", help="run config whose 'support' model (else 'judge') is measured; repeatable"
        ),
    ] = None,
    pairs: Annotated[
        Path | None, typer.Option("--pairs", help="labelled pairs JSONL (default: bundled)")
    ] = None,
    sample: Annotated[
        Path | None,
        typer.Option("--sample", help="the shared Ruwiki sample (folder or JSON) the pairs point into"),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", help="only N pairs, taken round-robin over the labels")
    ] = None,
    baseline: Annotated[bool, typer.Option(help="also score the embedding-cosine baseline (no LLM)")] = True,
    cosine_threshold: Annotated[
        float, typer.Option("--cosine-threshold", help="baseline: 'supported' when cosine >= this")
    ] = 0.85,
    out: Annotated[
        Path | None, typer.Option("--out", help="write the figures and probabilities as JSON")
    ] = None,
) -> None:
    """Agreement of the citation support judge with hand-labelled pairs: accuracy, precision, recall, F1,
    AUC."""
    from collections import Counter

    from ruwikibench.cli.judge_citations import measure_cosine
    from ruwikibench.conf.config import ConfigError, EmbedderConfig
    from ruwikibench.conf.loader import load_config
    from ruwikibench.evaluators.judges.citations_meta import (
        FixtureError,
        agreement_row,
        balanced,
        calibrated,
        load_pairs,
    )

    try:
        labelled = load_pairs(pairs, sample)
        configs = [load_config(path) for path in config or []]
    except (FixtureError, ConfigError) as exc:
        _fail(str(exc))
        return
    labelled = balanced(labelled, limit)
    console.print(f"{len(labelled)} labelled pairs " + str(dict(Counter(p.label for p in labelled))))
    results = [_measure_llm(labelled, cfg) for cfg in configs]
    if baseline:
        embedder = configs[0].embedder if configs else EmbedderConfig()
        cache = configs[0].cache_path if configs else None
        results.append(measure_cosine(labelled, embedder, cache, cosine_threshold))
    results = [calibrated(r, labelled) for r in results]
    _table(
        [agreement_row(r) for r in results], "citation support judge vs hand labels (positive = supported)"
    )
    console.print(
        "best threshold: the most accurate one on these pairs (optimistic); LOO acc: each pair judged "
        "at the threshold chosen on the others (set citations.threshold from it)"
    )
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            __import__("json").dumps([r.model_dump() for r in results], ensure_ascii=False, indent=1) + "\n",
            encoding="utf-8",
        )
        console.print(f"written: {out}")


def _measure_llm(labelled, config):
    from ruwikibench.evaluators.judges.citations import support_llm
    from ruwikibench.evaluators.judges.citations_meta import agreement, llm_probabilities
    from ruwikibench.prompts import PromptLibrary

    llm, name = support_llm(config)
    try:
        options = config.citations
        probabilities = asyncio.run(
            llm_probabilities(labelled, llm, options, PromptLibrary(config.prompts_dir))
        )
    finally:
        llm.close()
    console.print(f"{name}: usage {llm.usage.as_dict()}")
    return agreement(f"LLM {name}", labelled, probabilities, options.threshold)


def pick_config(run: Run, config_path: str | Path | None) -> RunConfig:
    """The run config that names the judge: ``--judge-config`` if given, else the run's own config."""
    from ruwikibench.conf.loader import load_config
    from ruwikibench.evaluators.judges.rundir import RunError

    if config_path is not None:
        return load_config(config_path)
    if run.config is None:
        reason = run.config_error or f"{run.path / 'spec.json'}: no 'config' recorded"
        raise RunError(f"{reason}; pass --judge-config CONFIG")
    return run.config
