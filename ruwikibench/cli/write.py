"""`ruwikibench write`: the STORM-like writer — one article from a title, or a scored batch over a dataset."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from ruwikibench.cli import EXIT_CODES, app
from ruwikibench.cli.console import make_console, print_error

console = make_console()


def _context(config_path: Path, dataset_spec: str, overrides: dict[str, Any]) -> tuple[Any, Path]:
    from ruwikibench.cli.run import _load, with_overrides
    from ruwikibench.runner.setup import build_context

    config, dataset, path = _load(config_path, dataset_spec)
    if overrides:  # validated again, so a writer profile takes the new writer settings into account
        config = with_overrides(config, {"writer": overrides}, "command-line options")
    context = build_context(config, dataset, path)
    return context, path


async def _close(context: Any) -> None:
    close = getattr(context.llm, "aclose", None)
    if close is not None:
        await close()


def _single(
    context: Any, title: str | None, out: Path, outline: Path | None, stop: bool, resume: bool
) -> None:
    from ruwikibench.writer.outline_file import OutlineFileError, read_outline_file
    from ruwikibench.writer.run import WriteError, write_article

    try:
        user_outline = read_outline_file(outline, title) if outline and not resume else None
        edited = read_outline_file(outline) if outline and resume else None
    except UnicodeDecodeError as exc:
        print_error(
            f"{outline}: not UTF-8 text ({exc.reason} at byte {exc.start}); --outline takes a Markdown file"
        )
        raise typer.Exit(2) from None
    except OutlineFileError as exc:
        print_error(exc)
        raise typer.Exit(2) from exc

    async def go() -> Any:
        try:
            return await write_article(
                context,
                title,
                out,
                user_outline=user_outline,
                review=stop,
                resume=resume,
                edited_outline=edited,
            )
        finally:
            await _close(context)

    try:
        result = asyncio.run(go())
    except (WriteError, OutlineFileError) as exc:
        print_error(exc)
        raise typer.Exit(2) from exc
    session = result.session
    usage = (
        f"{session.wall_time_s} s · {session.llm_calls} LLM calls ({session.cache_hits} from the cache) · "
        f"{session.prompt_tokens + session.completion_tokens} tokens"
    )
    if result.status == "awaiting_outline":
        console.print(f"outline written to {out / 'outline.md'} ({len(result.outline)} headings; {usage}).")
        console.print(f"Edit it, then: ruwikibench write --resume --out {out} --dataset … --config …")
        return
    assert result.article is not None
    stats = result.article.stats
    console.print(
        f"[bold]{result.article.title}[/bold]: {int(stats['sections_with_text'])} sections with text, "
        f"{int(stats['references'])} references, {int(stats['markers_removed'])} markers removed; {usage}"
    )
    for kind, path in result.paths.items():
        console.print(f"  {kind}: {path}")


def _batch(
    context: Any,
    dataset_path: Path,
    out: Path,
    articles: int | None,
    article: list[str] | None,
    run_id: str | None,
    citations: bool = True,
) -> None:
    from ruwikibench.cli.run import print_table
    from ruwikibench.cli.run_summary import print_baseline_lines
    from ruwikibench.evaluators.judges.citations import summarize_citations
    from ruwikibench.reporting.tables import stage_table
    from ruwikibench.storage.results import read_metrics
    from ruwikibench.writer.batch import BatchOptions, article_table, write_batch

    options = BatchOptions(
        articles=articles, article_names=article, out=out, run_id=run_id, citations=citations
    )

    async def go() -> Any:
        try:
            return await write_batch(context, str(dataset_path), options)
        finally:
            await _close(context)

    rundir = asyncio.run(go())
    metrics = read_metrics(rundir).stages
    for stage in ("outline", "sections"):
        if stage in metrics:
            print_table(
                f"{stage} — writer mode (×100, mean [95% CI])",
                stage_table(stage, [(rundir.path.name, metrics[stage])]),
            )
            print_baseline_lines(stage, metrics[stage], "the run")
    if "writer" in metrics:
        print_table("writer — whole article (×100, mean [95% CI])", article_table(rundir.path.name, metrics))
        print_baseline_lines("writer", metrics["writer"], "the run")
    rows = summarize_citations(rundir.path)
    if rows:
        print_table(
            "citation faithfulness — support judge (×100, mean [95% CI])",
            [list(rows[0]), *[list(r.values()) for r in rows]],
        )
    console.print(f"run directory: {rundir.path}  (report: {rundir.path / 'report.md'})")
    _batch_exit(rundir)


def _batch_exit(rundir: Any) -> None:
    """Exit 0 when every article was written and scored, 1 when none was (the endpoint down), 3 when some
    were; one line on stderr naming the first failure."""
    from ruwikibench.runner.status import exit_status

    failed = sorted({e["article"] for e in rundir.open_errors()})
    written = {article for stage, article, _ in rundir.output_keys() if stage == "writer"}
    status = exit_status(len(failed), len(written))
    if status:
        first = next(e for e in rundir.open_errors() if e["article"] == failed[0])
        reason = " ".join(str(first["reason"]).split())
        print_error(
            f"{len(failed)} of {len(failed) + len(written)} articles failed (first: {first['article']}: "
            f"{reason}); all in {rundir.file('errors.jsonl')}"
        )
        raise typer.Exit(status)


@app.command("write", epilog=EXIT_CODES)
def write(
    title: Annotated[str | None, typer.Argument(help="article title (not with --batch)")] = None,
    dataset: Annotated[
        str,
        typer.Option(
            "--dataset",
            "-d",
            help="processed dataset dir or RuWikiBench .json: the corpus (every article's sources)",
        ),
    ] = "",
    config: Annotated[Path, typer.Option("--config", "-c", help="run config YAML")] = Path(
        "configs/local.yaml"
    ),
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="output dir (batch: parent of run dirs)")
    ] = None,
    outline: Annotated[
        Path | None,
        typer.Option(
            help="Markdown outline file: the outline to write to (skips "
            "outline generation), or with --resume the edited outline"
        ),
    ] = None,
    stop_after_outline: Annotated[
        bool, typer.Option("--stop-after-outline", help="stop after the outline so it can be edited")
    ] = False,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="continue the session in --out (after the outline "
            "review: with --outline FILE or the edited outline.md)",
        ),
    ] = False,
    batch: Annotated[
        bool,
        typer.Option(
            "--batch",
            help="write every selected dataset article from its title and score it against the reference",
        ),
    ] = False,
    articles: Annotated[
        int | None, typer.Option("--articles", "-n", help="batch: the first N articles")
    ] = None,
    article: Annotated[
        list[str] | None, typer.Option("--article", "-a", help="batch: an article name")
    ] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="batch: run directory name")] = None,
    citations: Annotated[
        bool,
        typer.Option(
            help="batch: judge whether each cited sentence is supported by "
            "its sources (role 'support', else 'judge')"
        ),
    ] = True,
    candidates: Annotated[int | None, typer.Option(help="BM25 pool reranked (writer.candidates)")] = None,
    max_sources: Annotated[int | None, typer.Option(help="snippets kept (writer.max_sources)")] = None,
    per_section: Annotated[int | None, typer.Option(help="snippets per section (writer.per_section)")] = None,
) -> None:
    """Write a cited article from a title and a corpus (STORM-like), or (--batch) write and score many."""
    if not dataset:
        raise typer.BadParameter("--dataset is required", param_hint="--dataset")
    overrides = {
        k: v
        for k, v in {"candidates": candidates, "max_sources": max_sources, "per_section": per_section}.items()
        if v is not None
    }
    if batch:
        if title or outline or stop_after_outline or resume:
            raise typer.BadParameter("--batch takes no TITLE, --outline, --stop-after-outline or --resume")
        context, path = _context(config, dataset, overrides)
        _batch(context, path, out or Path("runs"), articles, article, run_id, citations)
        return
    if not title and not resume:
        raise typer.BadParameter("give a TITLE (or --resume, or --batch)")
    if stop_after_outline and resume:
        raise typer.BadParameter("--stop-after-outline starts a session; --resume continues one")
    if out is None:
        if not title:
            raise typer.BadParameter("--resume needs --out (the session directory) or the TITLE")
        from ruwikibench.dataset import safe_name

        out = Path("articles") / safe_name(title or "article")
    context, _ = _context(config, dataset, overrides)
    _single(context, title, out, outline, stop_after_outline, resume)
