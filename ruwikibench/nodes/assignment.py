"""The writer's sources and snippet assignment: which reranked candidates become sources (topped up to a
minimum), which outline items get a section, and which snippets each section is written from (BM25 and
embedding cosine against title + heading, fused by reciprocal rank, picked per section, optionally
exclusively).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ruwikibench.conf.builtin_options import RankingConfig, WriterConfig
from ruwikibench.dataset import Dataset, Snippet
from ruwikibench.nodes.written import OutlineItem
from ruwikibench.stage.context import StageContext

if TYPE_CHECKING:  # numpy is imported where it is used: a run loads this module before its first request
    import numpy as np


class SourceSnippet(BaseModel):
    """A snippet chosen by select_sources: its text, where it comes from, and how the ranking scored it."""

    snippet_id: str
    source_id: str
    index: int = 0
    text: str
    rank: int = Field(description="position in the reranked pool, 1-based")
    score: float | None = Field(description="P(relevant) from the ranking model; None = no usable judgement")
    topped_up: bool = Field(
        default=False, description="below the relevance threshold, taken to reach min_sources"
    )


class Assignment(BaseModel):
    """The snippets retrieved for one outline section (BM25 + embeddings, fused by reciprocal rank)."""

    section_id: str
    query: str
    snippet_ids: list[str]
    fused: list[float] = Field(default_factory=list, description="fused score of each assigned snippet")


def choose_sources(
    candidates: list[dict[str, Any]], min_relevance: float, max_sources: int, min_sources: int
) -> list[tuple[dict[str, Any], bool]]:
    """Candidates (in reranked order) with score >= threshold, at most ``max_sources``; if fewer than
    ``min_sources`` pass, the best-ranked others (scored first, then unscored) are added, flagged True."""
    ordered = sorted(candidates, key=lambda c: c.get("rank") or 0)
    passed = [c for c in ordered if c.get("llm_score") is not None and c["llm_score"] >= min_relevance]
    chosen = [(c, False) for c in passed[:max_sources]]
    wanted = min(min_sources, max_sources)
    if len(chosen) < wanted:
        taken = {c["snippet_id"] for c, _ in chosen}
        rest = [c for c in ordered if c["snippet_id"] not in taken]
        rest.sort(key=lambda c: (c.get("llm_score") is None, c.get("rank") or 0))
        chosen += [(c, True) for c in rest[: wanted - len(chosen)]]
    return chosen


def source_snippet(dataset: Dataset, candidate: dict[str, Any], topped_up: bool) -> SourceSnippet:
    snippet: Snippet = dataset.snippet(candidate["snippet_id"])
    return SourceSnippet(
        snippet_id=snippet.id, source_id=snippet.source_id, index=snippet.index, text=snippet.text,
        rank=int(candidate.get("rank") or 0), score=candidate.get("llm_score"), topped_up=topped_up,
    )  # fmt: skip


def writable_sections(items: list[OutlineItem], max_level: int, parent_text: bool) -> list[OutlineItem]:
    """The headings that get text: within ``max_level``; with ``parent_text`` False only those without
    children."""
    kept = [item for item in items if item.level <= max_level]
    if parent_text:
        return kept
    has_child = {kept[i].id for i in range(len(kept) - 1) if kept[i + 1].level > kept[i].level}
    return [item for item in kept if item.id not in has_child]


def section_query(title: str, item: OutlineItem) -> str:
    """The retrieval query of a section: article title, enclosing headings, the heading."""
    return ". ".join([title, *item.parents, item.title])


def rank_positions(scores: np.ndarray, positive_only: bool) -> np.ndarray:
    """1-based rank of each entry by descending score (stable); 0 where ``positive_only`` and score <= 0."""
    import numpy as np

    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[order] = np.arange(1, len(scores) + 1)
    if positive_only:
        ranks[scores <= 0] = 0
    return ranks


def fuse(bm25: np.ndarray, cosine: np.ndarray, k: int, w_bm25: float, w_emb: float) -> np.ndarray:
    """Reciprocal rank fusion of two score matrices (sections × snippets): Σ w / (k + rank).

    A snippet sharing no term with a section's query gets no BM25 contribution for it.
    """
    import numpy as np

    fused = np.zeros(bm25.shape, dtype=np.float64)
    for row in range(bm25.shape[0]):
        b_rank = rank_positions(bm25[row], positive_only=True)
        e_rank = rank_positions(cosine[row], positive_only=False)
        fused[row] += np.where(b_rank > 0, w_bm25 / (k + np.maximum(b_rank, 1)), 0.0)
        fused[row] += w_emb / (k + e_rank)
    return fused


def pick(fused: np.ndarray, per_section: int, exclusive: bool) -> list[list[int]]:
    """Snippet indices per section by descending fused score, ``per_section`` each; ``exclusive`` gives each
    snippet only to the section where it scores highest (ties: the earlier section)."""
    import numpy as np

    n_sections, n_snippets = fused.shape
    allowed = np.ones(fused.shape, dtype=bool)
    if exclusive and n_sections:
        best = np.argmax(fused, axis=0)
        allowed[:] = False
        allowed[best, np.arange(n_snippets)] = True
    picks = []
    for row in range(n_sections):
        order = [int(i) for i in np.argsort(-fused[row], kind="stable") if allowed[row, i]]
        picks.append(order[:per_section])
    return picks


def bm25_matrix(queries: list[str], texts: list[str], normalizer: str) -> np.ndarray:
    """BM25 scores (queries × texts) over an index of just these texts (the stage-1 normalizer and index)."""
    import numpy as np

    from ruwikibench.retrieval.bm25 import BM25Index

    pool = Dataset(
        articles=[],
        sources=[],
        snippets=[
            Snippet(id=f"t{i}", article="", source_id="", index=i, text=t, word_start=0, word_end=0)
            for i, t in enumerate(texts)
        ],
    )
    index = BM25Index.build(pool, normalizer)  # type: ignore[arg-type]
    return np.stack([index.scores(q) for q in queries]) if queries else np.zeros((0, len(texts)))


def assign_snippets(
    context: StageContext, title: str, sections: list[OutlineItem], sources: list[SourceSnippet]
) -> list[Assignment]:
    """Retrieve snippets for every section: BM25 and embedding cosine against title + heading, RRF-fused."""
    import numpy as np

    cfg = context.config.options(WriterConfig)
    queries = [section_query(title, s) for s in sections]
    if not sections or not sources:
        return [
            Assignment(section_id=s.id, query=q, snippet_ids=[])
            for s, q in zip(sections, queries, strict=True)
        ]
    texts = [s.text for s in sources]
    bm25 = bm25_matrix(queries, texts, context.config.options(RankingConfig).normalizer)
    query_vectors = context.embedder.embed(queries, "query")
    text_vectors = context.embedder.embed(texts, "passage")
    cosine = np.asarray(query_vectors, dtype=np.float64) @ np.asarray(text_vectors, dtype=np.float64).T
    fused = fuse(bm25, cosine, cfg.rrf_k, cfg.bm25_weight, cfg.embedding_weight)
    picks = pick(fused, cfg.per_section, cfg.exclusive)
    return [
        Assignment(
            section_id=section.id,
            query=query,
            snippet_ids=[sources[i].snippet_id for i in chosen],
            fused=[round(float(fused[row, i]), 6) for i in chosen],
        )
        for row, (section, query, chosen) in enumerate(zip(sections, queries, picks, strict=True))
    ]
