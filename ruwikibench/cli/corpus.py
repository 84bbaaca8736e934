"""`ruwikibench corpus …` — import the RuWikiBench JSON into a processed dataset directory and describe it."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    help="Build and inspect processed datasets (RuWikiBench JSON -> dataset directory).", no_args_is_help=True
)


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


@app.command("import")
def import_(
    path: Annotated[
        Path, typer.Argument(help="RuWikiBench JSON file (list of articles with html and sources)")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="processed dataset directory to write")],
    window: Annotated[int, typer.Option(help="snippet size in words")] = 600,
    overlap: Annotated[int, typer.Option(help="words shared by neighbouring snippets")] = 0,
    min_source_chars: Annotated[int, typer.Option(help="drop sources with fewer characters")] = 1500,
    lists: Annotated[
        str, typer.Option(help="'ignore' lists (as the authors) or 'keep' each list as a paragraph")
    ] = "ignore",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar or summary")] = False,
    rename_duplicates: Annotated[
        bool,
        typer.Option(
            "--rename-duplicates", help="import entries with the same title as 'Title', 'Title (2)', …"
        ),
    ] = False,
) -> None:
    """Parse every article once, apply the paper's filters, cut snippets and write DIR (JSONL +
    manifest.json).

    Articles that fail (no html, no article body, malformed sources) are reported one line each on stderr;
    the others are still written and the exit code is 1. Two entries with the same title stop the import
    (exit 2) unless --rename-duplicates.
    """
    from ruwikibench.corpus_builder.ruwikibench_json import (
        CorpusError,
        DuplicateTitle,
        ImportParams,
        import_ruwikibench_json,
    )
    from ruwikibench.corpus_builder.store import save_dataset

    if lists not in ("ignore", "keep"):
        raise _fail(f"--lists must be 'ignore' or 'keep', got {lists!r}", 2)
    if window < 1 or not 0 <= overlap < window:
        raise _fail(f"need window >= 1 and 0 <= overlap < window (got window={window}, overlap={overlap})", 2)
    params = ImportParams(min_source_chars=min_source_chars, window=window, overlap=overlap, lists=lists)  # type: ignore[arg-type]
    console = Console(stderr=True, quiet=quiet)
    try:
        result = import_ruwikibench_json(
            path, params, progress=None if quiet else _progress(console), rename_duplicates=rename_duplicates
        )
    except CorpusError as exc:
        raise _fail(str(exc), 2 if isinstance(exc, DuplicateTitle) else 1) from None
    save_dataset(
        result.dataset,
        out,
        errors=result.errors,
        extra={"source_file": str(path), "reports": [r.model_dump() for r in result.reports]},
    )
    if not quiet:
        _print_reports(console, result.reports)
        console.print(
            f"wrote {out} (dataset id {result.dataset.dataset_id}): {len(result.dataset.articles)} articles, "
            f"{len(result.dataset.sources)} sources, {len(result.dataset.snippets)} snippets"
        )
    for line in result.errors:
        typer.echo(f"error: {line}", err=True)
    if result.errors:
        raise typer.Exit(1)


def _progress(console: Console) -> Callable[[Iterable[Any]], Iterable[Any]]:
    from rich.progress import track

    def wrap(items: Iterable[Any]) -> Iterable[Any]:
        return track(list(items), description="articles", console=console, transient=True)

    return wrap


def _print_reports(console: Console, reports: list[Any]) -> None:
    table = Table(title="Import (kept / read)")
    for column in ("article", "sources", "uncited", "paragraphs", "headings", "snippets"):
        table.add_column(column, justify="left" if column == "article" else "right")
    for r in reports:
        table.add_row(
            r.article,
            f"{r.sources_kept}/{r.sources_in}",
            str(r.sources_uncited),
            f"{r.paragraphs_kept}/{r.paragraphs_in}",
            f"{r.headings_kept}/{r.headings_in}",
            str(r.snippets),
        )
    console.print(table)


@app.command()
def stats(
    directory: Annotated[Path, typer.Argument(help="processed dataset directory (from `corpus import`)")],
    per_article: Annotated[
        bool, typer.Option("--per-article", help="also print one row per article")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the statistics as JSON")] = False,
) -> None:
    """Print the paper's Table 1 rows for a processed dataset (articles, sources, snippets, outline and
    section size)."""
    from ruwikibench.corpus_builder.stats import dataset_stats
    from ruwikibench.corpus_builder.store import DatasetStoreError, load_dataset

    try:
        dataset = load_dataset(directory)
    except DatasetStoreError as exc:
        raise _fail(str(exc)) from None
    figures = dataset_stats(dataset)
    if as_json:
        typer.echo(
            json.dumps(
                {"dataset_id": dataset.dataset_id, **figures.model_dump()}, ensure_ascii=False, indent=2
            )
        )
        return
    console = Console(file=sys.stdout, width=max(100, Console().width))
    table = Table(title=f"Table 1 (dataset {dataset.dataset_id})")
    table.add_column("Metric")
    table.add_column("Value", justify="right")
    for metric, value in figures.table1_rows():
        table.add_row(metric, value)
    table.add_section()
    for metric, value in figures.detail_rows():
        table.add_row(metric, value, style="dim")
    console.print(table)
    if per_article:
        detail = Table(title="Per article")
        for column in ("article", "sources", "snippets", "headings", "h2", "depth", "paragraphs", "words"):
            detail.add_column(column, justify="left" if column == "article" else "right")
        for a in figures.per_article:
            detail.add_row(
                a.article,
                str(a.sources),
                str(a.snippets),
                str(a.headings),
                str(a.h2_headings),
                str(a.max_depth),
                str(a.paragraphs),
                str(a.words),
            )
        console.print(detail)


@app.command()
def export(
    directory: Annotated[Path, typer.Argument(help="processed dataset directory")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="JSON file to write in the published RuWikiBench layout")
    ],
) -> None:
    """Write a processed dataset back in the published RuWikiBench JSON layout (HTML rendered from the
    outline)."""
    from ruwikibench.corpus_builder.ruwikibench_json import export_ruwikibench_json
    from ruwikibench.corpus_builder.store import DatasetStoreError, load_dataset

    try:
        dataset = load_dataset(directory)
    except DatasetStoreError as exc:
        raise _fail(str(exc)) from None
    export_ruwikibench_json(dataset, out)
    typer.echo(f"wrote {out}: {len(dataset.articles)} articles, {len(dataset.sources)} sources")


@app.command()
def embed(
    dataset: Annotated[
        str, typer.Option("--dataset", "-d", help="processed dir, RuWikiBench .json, or hf://…")
    ],
    config: Annotated[Path, typer.Option("--config", "-c", help="run config: its embedder and cache_dir")],
    article: Annotated[
        list[str] | None, typer.Option("--article", help="only this article's snippets (repeatable)")
    ] = None,
    batch: Annotated[int, typer.Option(help="texts per embedding call")] = 32,
    bm25: Annotated[bool, typer.Option(help="also build the BM25 index")] = True,
) -> None:
    """Precompute what runs reuse: every snippet's embedding (as a passage, the mode the outline and sections
    stages share) into <cache_dir>/embeddings.sqlite, and the BM25 index into <cache_dir>/bm25/. Resumable:
    what is cached already is skipped."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from ruwikibench.conf.builtin_options import RankingConfig
    from ruwikibench.conf.config import ConfigError
    from ruwikibench.conf.loader import load_config
    from ruwikibench.corpus_builder.dataset_files import DatasetError, resolve_dataset
    from ruwikibench.models.embeddings import make_embedder
    from ruwikibench.runner.precompute import build_bm25, embed_snippets, snippets_to_embed

    try:
        cfg = load_config(config)
        data, _ = resolve_dataset(dataset)
        snippets = snippets_to_embed(data, article)
    except (ConfigError, DatasetError) as exc:
        raise _fail(str(exc)) from None
    except KeyError as exc:
        raise _fail(f"{dataset}: {exc.args[0]}") from None
    embedder = make_embedder(cfg.embedder, cfg.cache_path)
    console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    ) as progress:  # the model uses every core
        bar = progress.add_task(f"embed ({cfg.embedder.id})", total=len(snippets))
        fresh = embed_snippets(embedder, snippets, max(1, batch), lambda n: progress.advance(bar, n))
    console.print(
        f"{len(snippets)} snippets: {fresh} embedded now, {len(snippets) - fresh} from the cache "
        f"({cfg.cache_path / 'embeddings.sqlite'})"
    )
    if bm25:
        documents = build_bm25(data, cfg)
        console.print(
            f"BM25 index ({cfg.options(RankingConfig).normalizer}): "
            f"{documents} snippets, in {cfg.cache_path / 'bm25'}"
        )
