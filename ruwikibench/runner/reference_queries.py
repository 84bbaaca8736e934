"""Stored reference queries a run needs and does not find: written before the ranking stage runs.

A run whose ranking stage uses ``ranking.query_mode: reference`` reads one stored query per article
(:mod:`ruwikibench.nodes.queries`). The articles of the run that have none are first given one by the config's
``reference`` model, in the file the run reads (``ranking.reference_queries``, else
``<dataset dir>/reference_queries.json``), so the file's sha256 in the run id and spec.json covers them. How
many were written and how many failed is printed and kept in spec.json (``last_session.reference_queries``);
an article whose query failed is a failed ranking unit, as before.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Article
from ruwikibench.nodes.queries import QueriesWritten, write_missing_reference_queries
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.registry import get_stage


def reads_reference_queries(config: RunConfig, stages: list[str]) -> bool:
    """A stage of the run reads the stored reference queries (ranking with ``query_mode: reference``)."""
    return any(get_stage(name).reads_reference_queries(config) for name in stages)


async def write_missing_queries(
    context: StageContext, stages: list[str], articles: list[Article], progress: bool
) -> QueriesWritten | None:
    """Write the run's missing reference queries (a progress bar and a summary line when ``progress``)."""
    if not reads_reference_queries(context.config, stages):
        return None
    written = await write_missing_reference_queries(context, [a.name for a in articles], progress=progress)
    if written is not None and progress:
        Console(stderr=True).print(summary_line(written), highlight=False, soft_wrap=True)
    return written


def summary_line(written: QueriesWritten) -> str:
    line = f"reference queries: {written.written} written, {len(written.failed)} failed"
    if written.written:
        line += f", in {written.path}"
    if written.failed:
        name, reason = next(iter(written.failed.items()))
        line += f" (first failure: {name}: {' '.join(reason.split())})"
    return line


def session_record(written: QueriesWritten | None) -> dict[str, Any]:
    """What spec.json's ``last_session`` keeps of it (nothing when no query was missing)."""
    if written is None:
        return {}
    return {
        "reference_queries": {
            "path": str(written.path),
            "written": written.written,
            "failed": len(written.failed),
            "failed_articles": sorted(written.failed),
        }
    }
