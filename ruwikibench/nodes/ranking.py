"""Stage 1 nodes: expand_query → retrieve (BM25) → rerank (one yes/no judgement per candidate, via Send) →
rank.

State types live here too; the graph is assembled in :mod:`ruwikibench.graphs.ranking`.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import BaseModel, ConfigDict

from ruwikibench.conf.builtin_options import RankingConfig
from ruwikibench.models.priority import Priority
from ruwikibench.models.types import Completion
from ruwikibench.models.yesno import score_yes_no
from ruwikibench.nodes.answers import ask
from ruwikibench.nodes.queries import join_query, reference_query
from ruwikibench.runtime.executors import run_cpu
from ruwikibench.stage.context import StageContext

JudgementSource = Literal["logprobs", "text", "unparseable", "error"]


class RankingInput(TypedDict):
    """Graph input: fillable from gold data (benchmark) or by the writer (title only)."""

    article: str  # Article.name in benchmark mode; any id in writer mode
    title: str
    pool_size: NotRequired[int | None]  # k; benchmark: pool_ratio × the article's snippet count
    query: NotRequired[str | None]  # a ready query overrides the configured query mode


class Hit(TypedDict):
    snippet_id: str
    bm25_rank: int
    bm25_score: float


class Judgement(TypedDict):
    snippet_id: str
    llm_score: float | None  # paper score: P(yes) if yes else 1 − P(no); None = no usable answer
    p_yes: float | None
    p_no: float | None
    p_yes_norm: float | None
    answer: Literal["yes", "no"] | None
    source: JudgementSource
    reply: str
    error: str | None


class Candidate(Hit, Judgement):
    rank: int  # final position, 1-based


class RankingOutput(TypedDict):
    article: str
    title: str
    query: str
    query_mode: str
    pool_size: int
    candidates: list[Candidate]  # in final (reranked) order
    error: str | None  # why the pool is empty, when it is


class RankingOutputModel(BaseModel):
    """A ranking output as the stage's ``score()`` receives it: the keys it reads, validated (a stored output
    that lacks one gets its default, as outputs of older runs may); other keys are kept."""

    model_config = ConfigDict(extra="allow")

    query_mode: str | None = None
    pool_size: int | None = None
    candidates: list[dict[str, Any]] | None = None
    error: str | None = None


class RankingState(TypedDict):
    """The whole state: input keys, working keys, output keys."""

    article: str
    title: str
    pool_size: NotRequired[int | None]
    query: NotRequired[str | None]
    query_mode: NotRequired[str]
    hits: NotRequired[list[Hit]]
    judgements: NotRequired[Annotated[list[Judgement], operator.add]]
    candidates: NotRequired[list[Candidate]]
    error: NotRequired[str | None]


class RerankTask(TypedDict):
    title: str
    query: str
    hit: Hit


# -- helpers: LLM calls and parsing ---------------------------------------------------------------------


async def generated_query(context: StageContext, title: str) -> str:
    """The model under test writes the Russian and the English description concurrently; joined by newline."""
    cfg = context.config.options(RankingConfig)
    ru, en = await asyncio.gather(
        *(ask(context, "query", name, title=title) for name in (cfg.prompt_query_ru, cfg.prompt_query_en))
    )
    return join_query(ru, en)


async def judge(context: StageContext, title: str, query: str, hit: Hit) -> Judgement:
    """One relevance judgement of a candidate snippet; failures become a judgement with source 'error'."""
    cfg = context.config.options(RankingConfig)
    assert context.dataset is not None
    text = context.dataset.snippet(hit["snippet_id"]).text[: cfg.snippet_chars]
    prompt = context.prompts.get(cfg.prompt_relevance).format(title=title, text=text, query=query)
    try:
        completion = await context.llm.complete(
            "ranking",
            prompt,
            max_tokens=cfg.judge_max_tokens,
            top_logprobs=cfg.top_logprobs,
            accept=parseable,
            priority=Priority.LEAF,  # nothing waits for one judgement: chain calls of other units go first
        )
    except Exception as exc:  # noqa: BLE001 — recorded per candidate, counted in the report
        return Judgement(
            snippet_id=hit["snippet_id"],
            llm_score=None,
            p_yes=None,
            p_no=None,
            p_yes_norm=None,
            answer=None,
            source="error",
            reply="",
            error=f"{type(exc).__name__}: {exc}",
        )
    result = score_yes_no(completion)
    return Judgement(
        snippet_id=hit["snippet_id"],
        llm_score=result.score,
        p_yes=result.p_yes,
        p_no=result.p_no,
        p_yes_norm=result.p_yes_norm,
        answer=result.answer,
        source=result.source,
        reply=result.text,
        error=None,
    )


def parseable(completion: Completion) -> bool:
    """A relevance answer that reads as yes or no (only such answers are cached; the rest are asked again)."""
    return score_yes_no(completion).answer is not None


def order_candidates(hits: list[Hit], judgements: list[Judgement]) -> list[Candidate]:
    """Sort by LLM score (descending); ties and unscored candidates keep BM25 order, unscored go last."""
    by_id = {j["snippet_id"]: j for j in judgements}
    merged = [Candidate(**{**hit, **by_id[hit["snippet_id"]], "rank": 0}) for hit in hits]
    merged.sort(key=lambda c: (c["llm_score"] is None, -(c["llm_score"] or 0.0), c["bm25_rank"]))
    for rank, candidate in enumerate(merged, start=1):
        candidate["rank"] = rank
    return merged


def _dataset(runtime: Runtime[StageContext]):  # -> Dataset
    if runtime.context.dataset is None:
        raise ValueError("the ranking graph needs StageContext.dataset (the corpus BM25 searches)")
    return runtime.context.dataset


# -- nodes ----------------------------------------------------------------------------------------------


async def expand_query(state: RankingState, runtime: Runtime[StageContext]) -> dict:
    """The BM25 query by mode: a given query, the stored reference query, a generated one, or the title."""
    context = runtime.context
    cfg = context.config.options(RankingConfig)
    if state.get("query"):
        return {"query": state["query"], "query_mode": "given"}
    if cfg.query_mode == "title":
        return {"query": state["title"], "query_mode": "title"}
    if cfg.query_mode == "reference":
        return {"query": reference_query(context, state["article"]), "query_mode": "reference"}
    return {"query": await generated_query(context, state["title"]), "query_mode": "generated"}


async def retrieve(state: RankingState, runtime: Runtime[StageContext]) -> dict:
    """Top k snippets of the whole corpus by BM25 (k = pool size). With ranking.max_candidates the pool is
    thinned evenly across BM25 ranks (not cut at the top, which would keep only the easy relevant head)."""
    context = runtime.context
    cfg = context.config.options(RankingConfig)
    dataset = _dataset(runtime)
    query = state.get("query") or ""
    k = state.get("pool_size") or cfg.default_pool
    index = await run_cpu(context.indexes.get, dataset, cfg.normalizer, context.config.cache_path)
    found = spread_sample(await run_cpu(index.search, query, k), cfg.max_candidates)
    hits = [Hit(snippet_id=h.snippet_id, bm25_rank=h.rank, bm25_score=h.score) for h in found]
    error = None
    if not hits:
        error = "empty query" if not query.strip() else "BM25 found no snippet sharing a term with the query"
    return {"hits": hits, "pool_size": k, "error": error}


def spread_sample(items: list, cap: int | None) -> list:
    """At most ``cap`` items spread evenly over the list (first and last kept), order preserved."""
    if cap is None or len(items) <= cap:
        return items
    if cap <= 1:
        return items[:cap]
    step = (len(items) - 1) / (cap - 1)
    return [items[round(i * step)] for i in range(cap)]


def route_candidates(state: RankingState) -> list[Send] | str:
    """One rerank task per candidate (fan-out), or straight to rank when the pool is empty."""
    hits = state.get("hits") or []
    if not hits:
        return "rank"
    query = state.get("query") or ""
    return [Send("rerank", RerankTask(title=state["title"], query=query, hit=h)) for h in hits]


async def rerank(task: RerankTask, runtime: Runtime[StageContext]) -> dict:
    """The ranking model judges one candidate: relevant (yes) or not (no), scored from logprobs."""
    return {"judgements": [await judge(runtime.context, task["title"], task["query"], task["hit"])]}


class RerankFailed(RuntimeError):
    """Every relevance request of an article failed (endpoint down?): the article fails, so a resumed run
    retries it instead of scoring the BM25 order as the model's."""


async def rank(state: RankingState) -> dict:
    """Final order: LLM score, ties keep BM25 order."""
    judgements = state.get("judgements") or []
    failed = [j for j in judgements if j["source"] == "error"]
    if judgements and len(failed) == len(judgements):
        raise RerankFailed(
            f"article {state['article']!r}: all {len(failed)} relevance requests failed; "
            f"first error: {failed[0]['error']}"
        )
    return {"candidates": order_candidates(state.get("hits") or [], judgements)}
