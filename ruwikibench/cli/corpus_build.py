"""`ruwikibench corpus build` — build a dataset from article titles by downloading the pages and their
sources."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

if TYPE_CHECKING:
    from ruwikibench.corpus_builder.web.manifest import BuildSummary


class _RichProgress:
    """Two bars: article pages, and footnotes (sources) whose URLs have all been tried."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.pages = progress.add_task("article pages", total=0)
        self.sources = progress.add_task("sources", total=0)

    def pages_total(self, n: int) -> None:
        self.progress.update(self.pages, total=n)

    def page_done(self) -> None:
        self.progress.advance(self.pages)

    def sources_total(self, n: int) -> None:
        total = self.progress.tasks[self.sources].total or 0
        self.progress.update(self.sources, total=total + n)

    def source_done(self) -> None:
        self.progress.advance(self.sources)


def summary_table(s: BuildSummary) -> Table:
    """The end-of-build table: articles, references, downloads, exclusions by reason."""
    table = Table(title="Corpus build")
    table.add_column("")
    table.add_column("count", justify="right")
    failed = sum(s.articles_failed.values())
    rows = [
        ("titles", s.titles),
        ("articles built", s.articles_built),
        *((f"articles failed: {reason}", n) for reason, n in s.articles_failed.items()),
        ("references", s.references),
        ("  with URLs (candidate sources)", s.references_with_urls),
        ("  explanatory notes (not sources)", s.notes_skipped),
        ("source URLs", s.urls),
        ("  requested", s.urls_requested),
        ("  not needed (earlier URL kept)", s.skipped),
        ("downloaded", s.downloaded),
        ("kept sources (>= min chars)", s.kept),
        *((f"excluded: {reason}", n) for reason, n in s.excluded.items()),
        ("HTTP requests sent", s.requests_sent),
        ("answers from the cache", s.cache_hits),
        ("dataset sources / snippets", f"{s.sources} / {s.snippets}"),
    ]
    for label, value in rows:
        table.add_row(
            label, str(value), style="red" if label.startswith("articles failed") and failed else None
        )
    table.caption = f"dataset id {s.dataset_id}"
    return table


def build(
    titles: Annotated[
        Path, typer.Option("--titles", help="UTF-8 file, one article title per line ('#' = comment)")
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="output directory (dataset, JSON, manifest, cache)")
    ],
    site: Annotated[
        str, typer.Option(help="ru.ruwiki.ru | ru.wikipedia.org | en.wikipedia.org")
    ] = "ru.ruwiki.ru",
    base_url: Annotated[
        str | None, typer.Option(help="fetch article pages from this base URL instead of https://<site>")
    ] = None,
    allow_private: Annotated[
        bool,
        typer.Option("--allow-private", help="allow private, loopback, link-local and reserved addresses"),
    ] = False,
    allow_net: Annotated[
        list[str] | None, typer.Option("--allow-net", help="allow one internal network (CIDR); repeatable")
    ] = None,
    cache: Annotated[Path | None, typer.Option(help="page cache directory (default OUT/cache)")] = None,
    extractors: Annotated[
        str,
        typer.Option(
            help="extractor chain: trafilatura, newspaper, trafilatura-precision, trafilatura-recall"
        ),
    ] = "trafilatura,newspaper",
    min_source_chars: Annotated[int, typer.Option(help="drop sources with fewer characters of text")] = 1500,
    window: Annotated[int, typer.Option(help="snippet size in words")] = 600,
    overlap: Annotated[int, typer.Option(help="words shared by neighbouring snippets")] = 0,
    lists: Annotated[str, typer.Option(help="'ignore' lists (as the authors) or 'keep' them")] = "ignore",
    concurrency: Annotated[int, typer.Option(help="requests in flight overall")] = 16,
    per_host: Annotated[int, typer.Option(help="requests in flight per host")] = 2,
    host_delay: Annotated[float, typer.Option(help="seconds between request starts to one host")] = 0.5,
    timeout: Annotated[float, typer.Option(help="seconds per request (connect + headers + body)")] = 20.0,
    retries: Annotated[int, typer.Option(help="extra attempts after a transient failure")] = 2,
    max_bytes: Annotated[int, typer.Option(help="largest page accepted, bytes")] = 5_000_000,
    max_redirects: Annotated[int, typer.Option(help="redirect hops followed")] = 5,
    user_agent: Annotated[
        str | None,
        typer.Option(help="User-Agent header (default names the tool; add a contact for big builds)"),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar or summary table")] = False,
) -> None:
    """Fetch each article page, parse it, download every cited URL, extract the main text, apply the paper's
    filters and write OUT: the processed dataset, ruwikibench_articles.json (published layout), manifest.jsonl
    (one line per URL) and build_summary.json. Re-running resumes from the page cache without refetching.
    """
    from ruwikibench.corpus_builder.web.build import build_corpus, read_titles
    from ruwikibench.corpus_builder.web.extract import parse_chain
    from ruwikibench.corpus_builder.web.types import SITES, BuildError, BuildSettings, FetchSettings

    try:
        if site not in SITES:
            raise BuildError(f"--site must be one of {', '.join(SITES)}, got {site!r}")
        if lists not in ("ignore", "keep"):
            raise BuildError(f"--lists must be 'ignore' or 'keep', got {lists!r}")
        title_list = read_titles(titles)
        fetch = FetchSettings(
            allow_private=allow_private,
            allow_networks=allow_net or [],
            concurrency=concurrency,
            per_host=per_host,
            host_delay=host_delay,
            timeout=timeout,
            retries=retries,
            max_bytes=max_bytes,
            max_redirects=max_redirects,
        )
        if user_agent:
            fetch.user_agent = user_agent
        settings = BuildSettings(
            site=site,
            base_url=base_url,
            fetch=fetch,
            extractors=parse_chain(extractors),
            min_source_chars=min_source_chars,
            window=window,
            overlap=overlap,
            lists=lists,  # type: ignore[arg-type]
            cache_dir=str(cache) if cache else None,
        )
    except (BuildError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    console = Console(stderr=True, quiet=quiet)
    columns = (TextColumn("{task.description:14}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, disable=quiet) as bars:
        result = build_corpus(title_list, out, settings, _RichProgress(bars))
    summary = result.summary
    if not quiet:
        Console(file=sys.stdout).print(summary_table(summary))
    for entry in result.manifest:
        if entry.kind == "page" and entry.outcome == "failed":
            typer.echo(
                f"error: article {entry.article!r}: {entry.url}: {entry.reason} {entry.detail}".rstrip(),
                err=True,
            )
    for line in summary.errors:
        typer.echo(f"error: {line}", err=True)
    if summary.articles_failed or summary.errors:
        raise typer.Exit(1)
