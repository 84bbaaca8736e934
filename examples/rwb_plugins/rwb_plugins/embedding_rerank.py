"""A node override for the ranking stage: ``rerank`` by embedding similarity instead of an LLM judgement.

Config: ``overrides: {ranking.rerank: "rwb_plugins.embedding_rerank:rerank"}``. The node gets what the
built-in ``rerank`` gets (one candidate: title, query, BM25 hit) and returns a judgement whose score is the
cosine between the query and the snippet under the run's embedder; the stage's ``rank`` node then orders by
it. No LLM call.
"""

from __future__ import annotations

import asyncio

import numpy as np
from langgraph.runtime import Runtime

from ruwikibench.plugin import Judgement, RankingConfig, RerankTask, StageContext


def cosine(query: np.ndarray, passage: np.ndarray) -> float:
    norm = float(np.linalg.norm(query) * np.linalg.norm(passage))
    return float(np.dot(query, passage) / norm) if norm else 0.0


def similarity(context: StageContext, query: str, text: str) -> float:
    query_vector = context.embedder.embed([query], "query")[0]
    passage_vector = context.embedder.embed([text], "passage")[0]
    return cosine(np.asarray(query_vector, dtype=np.float64), np.asarray(passage_vector, dtype=np.float64))


async def rerank(task: RerankTask, runtime: Runtime[StageContext]) -> dict:
    """One candidate scored by cosine(query, snippet); embedding runs off the event loop."""
    context = runtime.context
    assert context.dataset is not None
    snippet_id = task["hit"]["snippet_id"]
    text = context.dataset.snippet(snippet_id).text[: context.config.options(RankingConfig).snippet_chars]
    score = await asyncio.to_thread(similarity, context, task["query"], text)
    judgement = Judgement(
        snippet_id=snippet_id,
        llm_score=score,
        p_yes=None,
        p_no=None,
        p_yes_norm=None,
        answer=None,
        source="text",
        reply=f"embedding cosine {score:.4f}",
        error=None,
    )
    return {"judgements": [judgement]}
