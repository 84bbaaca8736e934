"""The native graphs' output shapes for external rows (a ranked list, a section text), their checks, and what
an external article's writer record adds (source counts, how each source was matched)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ruwikibench.dataset import Article
from ruwikibench.external.formats import ExternalFormatError, RankingRow

if TYPE_CHECKING:
    from ruwikibench.external.article import SourceMatch
    from ruwikibench.stage.contract import ScoreRecord


def add_source_info(
    record: ScoreRecord,
    stats: dict[str, float],
    matches: list[SourceMatch],
    storm_markers: dict[str, Any] | None = None,
) -> None:
    """The writer record's source counts and how each number of the sources map was matched."""
    for key in ("sources_unmatched", "markers_unresolved"):
        record.metrics[key] = stats[key]
    record.info.update(
        {
            "sources_given": len(matches),
            "unmatched_sources": [m.given for m in matches if m.source_id is None],
            "matched_by": {m.n: m.how for m in matches},
            "shared_url_sources": {m.n: m.source_ids for m in matches if len(m.source_ids) > 1},
        }
    )
    if storm_markers:
        record.info["storm_markers"] = storm_markers


def drop_first_stage_metrics(records: list[dict[str, Any]]) -> None:
    """Without a ``pool`` order there is no first-stage ranking: its metrics would only copy the final
    order's."""
    for record in records:
        for key in [k for k in record["metrics"] if k.startswith("bm25_")]:
            del record["metrics"][key]
        record["info"]["first_stage_order"] = False


def check_ranking_row(row: RankingRow, known: set[str], path: Path, line: int) -> None:
    """Every id a snippet of the dataset; ``pool``, when given, the same ids as ``ranking``."""
    for field in ("ranking", "pool"):
        unknown = [s for s in getattr(row, field) or [] if s not in known]
        if unknown:
            raise ExternalFormatError(f"{path}:{line}: field {field!r}: unknown snippet id {unknown[0]!r}")
    if row.pool is not None and set(row.pool) != set(row.ranking):
        raise ExternalFormatError(f"{path}:{line}: field 'pool': must hold exactly the ids of 'ranking'")


def ranking_output(article: Article, row: RankingRow) -> dict[str, Any]:
    """The ranking graph's output shape for an external ranked list (first-stage order from ``pool``)."""
    first = {s: i + 1 for i, s in enumerate(row.pool or row.ranking)}
    candidates = [
        {
            "snippet_id": s,
            "bm25_rank": first[s],
            "bm25_score": 0.0,
            "llm_score": None,
            "p_yes": None,
            "p_no": None,
            "p_yes_norm": None,
            "answer": None,
            "source": "external",
            "reply": "",
            "error": None,
            "rank": i + 1,
        }
        for i, s in enumerate(row.ranking)
    ]
    return {
        "article": article.name,
        "title": article.title,
        "query": row.query or "",
        "query_mode": "external",
        "pool_size": len(candidates),
        "candidates": candidates,
        "error": None if candidates else "empty ranking",
    }


def section_result(spec: dict[str, Any], text: str) -> dict[str, Any]:
    """The section graph's result shape for an external text (no snippets given -> the paper's exclusion)."""
    return {
        "id": spec["id"],
        "title": spec["title"],
        "level": spec["level"],
        "text": text,
        "status": "ok" if spec.get("snippets") else "no_snippets",
        "snippets_total": len(spec.get("snippets", [])),
        "snippet_ids": [],
        "oracle_filter": None,
        "oracle_dropped": [],
        "groups": [],
        "write_calls": 0,
        "calls": 0,
    }
