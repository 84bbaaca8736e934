"""`ruwikibench ranking …`: stage-1 data that is made once per dataset (the stored reference queries)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from ruwikibench.cli.console import make_console, print_error
from ruwikibench.cli.run import ArticleOpt, ArticlesOpt, ConfigOpt, DatasetOpt, _load

console = make_console()
ranking_app = typer.Typer(help="Stage-1 data made once per dataset.", no_args_is_help=True)


@ranking_app.command("reference-queries")
def reference_queries(
    dataset: DatasetOpt,
    config: ConfigOpt,
    articles: ArticlesOpt = None,
    article: ArticleOpt = None,
    overwrite: Annotated[
        bool, typer.Option(help="regenerate all (needed to switch the reference model)")
    ] = False,
) -> None:
    """Write the reference-mode queries (title + H2 headings -> description) with the config's `reference`
    model.

    Stored beside the dataset (or at `ranking.reference_queries`) so every evaluated model ranks the same
    pool; resumable: articles already stored are kept.
    """
    from ruwikibench.models.retry import LLMRequestError
    from ruwikibench.nodes.queries import (
        ReferenceQueriesError,
        generate_reference_queries,
        read_reference_queries,
        reference_queries_path,
    )
    from ruwikibench.runner.setup import build_context

    cfg, data, path = _load(config, dataset)
    names = list(article or []) or None
    if articles is not None:
        names = [a.name for a in data.articles[:articles]]

    async def go() -> Path:
        context = build_context(cfg, data, path)
        target = reference_queries_path(context)
        try:
            return await generate_reference_queries(
                path, context, articles=names, overwrite=overwrite, file=target
            )
        finally:
            await context.llm.aclose()

    try:
        written = asyncio.run(go())
    except (ReferenceQueriesError, LLMRequestError) as exc:
        print_error(f"{exc}  (queries stored so far are kept)")
        raise typer.Exit(2) from exc
    stored = read_reference_queries(written)
    console.print(f"{len(stored.queries)} reference queries by {stored.model!r} in {written}")
