"""Stage 1 as a LangGraph graph, and its benchmark contract (``STAGE``).

expand_query → retrieve → rerank (``Send``, one per candidate) → rank; the picture:
``ruwikibench graph ranking``.

Benchmark mode: one unit per article, pool size k = pool_ratio × R (R = the article's snippet count);
a snippet is relevant iff it belongs to the article's sources. Scores: NDCG (whole pool, @K), R-Precision,
R-recall (recall at R over all the article's snippets) for the BM25 order (the baseline) and the reranked
order, and pool recall.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

from langgraph.graph import END, START, StateGraph

from ruwikibench.baselines.ranking import RANKING_BASELINES
from ruwikibench.conf.builtin_options import RankingConfig
from ruwikibench.conf.config import ModelRole, RunConfig
from ruwikibench.dataset import Article, Dataset
from ruwikibench.evaluators.ranking import ranking_metrics
from ruwikibench.graphs.views import pool_view
from ruwikibench.nodes.ranking import (
    RankingInput,
    RankingOutput,
    RankingOutputModel,
    RankingState,
    RerankFailed,
    RerankTask,
    expand_query,
    rank,
    rerank,
    retrieve,
    route_candidates,
)
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import ScoreRecord, Stage, StageScore, Unit
from ruwikibench.stage.metric import Metric

POOL = "pool"
"""``info`` key of a ranking record: the digest of its candidate pool (sorted snippet ids). Two runs are
paired on NDCG and R-Precision only on items whose pools are the same."""

METRICS = (
    Metric(
        key="bm25_ndcg",
        label="BM25 NDCG",
        description="NDCG of the candidate pool in BM25 order (retrieval alone, before the rerank); "
        "normalised inside the pool: compares runs on the same pool only",
        kind="ranking",
        paired_when_equal=POOL,
    ),
    Metric(
        key="bm25_r_precision",
        label="BM25 R-Pr",
        description="share of the article's own snippets among the first R of the BM25 order "
        "(R = their count in the pool): compares runs on the same pool only",
        kind="ranking",
        paired_when_equal=POOL,
    ),
    Metric(
        key="rerank_ndcg",
        label="Rerank NDCG",
        description="NDCG of the candidate pool in the LLM's reranked order (the stage's result); "
        "normalised inside the pool: compares runs on the same pool only",
        kind="ranking",
        paired_when_equal=POOL,
        vs_baselines=True,
        headline=True,
    ),
    Metric(
        key="rerank_r_precision",
        label="Rerank R-Pr",
        description="share of the article's own snippets among the first R of the reranked order "
        "(R = their count in the pool): compares runs on the same pool only",
        kind="ranking",
        paired_when_equal=POOL,
        vs_baselines=True,
    ),
    Metric(
        key="pool_recall",
        label="Pool recall",
        description="share of the article's own snippets that BM25 put into the candidate pool",
        kind="ranking",
    ),
    Metric(
        key="bm25_recall_at_r",
        label="BM25 R-recall",
        description="the article's own snippets among the first R of the BM25 order over all of them "
        "(R = the article's snippet count in the dataset); compares across pools and query modes",
        kind="ranking",
    ),
    Metric(
        key="rerank_recall_at_r",
        label="Rerank R-recall",
        description="the article's own snippets among the first R of the reranked order over all of them "
        "(R = the article's snippet count in the dataset); compares across pools and query modes",
        kind="ranking",
        vs_baselines=True,
    ),
)
"""NDCG and R-Precision are normalised inside the run's own pool (a pool of 10 relevant snippets out of 16
scores R-Precision 1.0): they compare rerankers on one pool only, so paired comparisons of runs pair them on
items with the same pool (``paired_when_equal``). Pool recall and R-recall divide by the article's full
relevant set, so they compare runs whose pools differ (query modes)."""


def build_ranking_graph() -> StateGraph[RankingState, StageContext, RankingInput, RankingOutput]:
    """The uncompiled stage-1 graph (input: RankingInput, output: RankingOutput, context: StageContext)."""
    graph = StateGraph(
        RankingState, context_schema=StageContext, input_schema=RankingInput, output_schema=RankingOutput
    )
    graph.add_node("expand_query", expand_query)
    graph.add_node("retrieve", retrieve)
    # the stubs want the node's input to be the state; mypy calls the mismatch arg-type or call-overload
    # depending on the order it checks the modules in (whole package or this file), hence both codes and
    # unused-ignore
    graph.add_node("rerank", rerank, input_schema=RerankTask)  # type: ignore[arg-type,call-overload,unused-ignore]
    graph.add_node("rank", rank)
    graph.add_edge(START, "expand_query")
    graph.add_edge("expand_query", "retrieve")
    graph.add_conditional_edges("retrieve", route_candidates, ["rerank", "rank"])
    graph.add_edge("rerank", "rank")
    graph.add_edge("rank", END)
    return graph


def pool_size(dataset: Dataset, article: Article, config: RunConfig) -> int:
    """k = pool_ratio × R, R = the number of the article's snippets (1 relevant : 2 non-relevant at ratio
    3)."""
    return config.options(RankingConfig).pool_ratio * len(dataset.snippets_of(article.name))


FAILED_SOURCES = ("error", "unparseable")


def pool_digest(candidates: list[dict[str, Any]]) -> str:
    """sha256 (16 hex digits) of the pool's sorted snippet ids: equal for two runs that ranked the same
    pool."""
    ids = "\n".join(sorted(str(c["snippet_id"]) for c in candidates))
    return hashlib.sha256(ids.encode("utf-8")).hexdigest()[:16]


def _judgement_counts(candidates: list[dict[str, Any]]) -> dict[str, int]:
    counts = Counter(c["source"] for c in candidates)
    return {
        f"judged_{source}": counts.get(source, 0) for source in ("logprobs", "text", "unparseable", "error")
    }


class RankingStage(Stage[RankingOutputModel]):
    """The stage contract of :mod:`ruwikibench.stage.contract` for source ranking."""

    name = "ranking"
    description = "source selection: query -> BM25 -> LLM rerank"
    order = 1
    metrics = METRICS
    output_model = RankingOutputModel
    options_model = RankingConfig
    options_alias = True  # `ranking:` at the top of a config
    runs_by_default = True
    paper_table = "Tables 3/4"
    doc_page = "ranking.md"
    warm_modules = ("bm25s", "Stemmer", "stop_words", "pymorphy3", "ruwikibench.evaluators.ranking")
    roles = (  # query expansion, relevance yes/no, the stored reference queries (written once)
        ModelRole("query", general_rank=4),
        ModelRole("ranking", general_rank=3),
        ModelRole("reference"),
    )
    baselines = RANKING_BASELINES

    def build_graph(self) -> StateGraph:
        return build_ranking_graph()  # type: ignore[return-value]

    def warm_up(self, config: RunConfig, *, scoring: bool) -> None:
        """The stopword list and the normaliser's morphology dictionary (BM25 queries)."""
        from ruwikibench.retrieval.normalize import Normalizer, stopwords

        stopwords()
        Normalizer(config.options(RankingConfig).normalizer).terms("прогрев словаря")

    def reads_reference_queries(self, config: RunConfig) -> bool:
        return config.options(RankingConfig).query_mode == "reference"

    def article_view(self, records: Any) -> dict[str, Any] | None:
        return pool_view(records)

    def units(self, dataset: Dataset, article: Article, config: RunConfig) -> list[Unit]:
        size = pool_size(dataset, article, config)
        graph_input = RankingInput(article=article.name, title=article.title, pool_size=size)
        judged = min(
            size, config.options(RankingConfig).max_candidates or size
        )  # one relevance request per candidate, at once
        return [
            Unit(
                stage=self.name,
                article=article.name,
                unit_id="article",
                input=dict(graph_input),
                fan_out=max(1, judged),
            )
        ]

    def score(self, unit: Unit, output: RankingOutputModel, context: StageContext) -> StageScore:
        """NDCG, R-Precision and R-recall of the BM25 and the reranked order, and pool recall; no texts."""
        return StageScore(records=[self.ranking_record(unit, output, context)])

    def ranking_record(self, unit: Unit, output: RankingOutputModel, context: StageContext) -> ScoreRecord:
        dataset = context.dataset
        if dataset is None:
            raise ValueError("scoring ranking needs StageContext.dataset")
        relevant = {s.id for s in dataset.snippets_of(unit.article)}
        candidates = [dict(c) for c in output.candidates or []]
        info: dict[str, Any] = {
            "query_mode": output.query_mode,
            "pool_size": output.pool_size,
            "candidates": len(candidates),
            "relevant_total": len(relevant),
            "relevant_in_pool": sum(c["snippet_id"] in relevant for c in candidates),
            POOL: pool_digest(candidates),
            **_judgement_counts(candidates),
        }
        if not relevant:
            return ScoreRecord(
                stage=self.name,
                article=unit.article,
                item=unit.unit_id,
                info=info,
                excluded="the article has no snippets (no kept source)",
            )
        if output.error:
            info["reason"] = output.error
        elif info["relevant_in_pool"] == 0:
            info["reason"] = "no snippet of the article in the BM25 pool"
        bm25 = [int(c["snippet_id"] in relevant) for c in sorted(candidates, key=lambda c: c["bm25_rank"])]
        reranked = [int(c["snippet_id"] in relevant) for c in sorted(candidates, key=lambda c: c["rank"])]
        metrics = ranking_metrics(
            bm25, reranked, len(relevant), context.config.options(RankingConfig).ndcg_at
        )
        return ScoreRecord(
            stage=self.name, article=unit.article, item=unit.unit_id, metrics=metrics, info=info
        )

    def failure_keys(self, reason: str, keys: list[str]) -> list[str]:
        """What a failed unit takes away in the failures-as-zero view: a failed rerank (every relevance
        request failed) leaves the query, the BM25 pool and its order standing, so only the rerank metrics are
        zeroed; any other failure zeroes every metric."""
        if reason.startswith(RerankFailed.__name__):
            return [key for key in keys if key.startswith("rerank_")]
        return list(keys)

    def retry_reason(self, output: dict[str, Any]) -> str | None:
        """Why a finished unit is run again on resume: relevance judgements that failed (request error or an
        answer neither yes nor no). The output is scored meanwhile, its failed judgements counted; on the
        rerun the judgements that succeeded come from the response cache and only the failed ones are asked
        again."""
        failed = sum(c.get("source") in FAILED_SOURCES for c in output.get("candidates") or [])
        return f"{failed} relevance judgement(s) failed" if failed else None


STAGE = RankingStage()
"""The stage object the ``ruwikibench.stages`` entry point names (pyproject.toml)."""
