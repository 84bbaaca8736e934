"""The options models of the built-in stages (their ``options_model``): ``stage_options.ranking`` (alias: the
top-level ``ranking:`` key of a run config), ``outline``, ``sections`` and ``writer``. A plug-in declares its
own the same way; ``config.options(OutlineConfig)`` is a config's validated block."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ruwikibench.conf.config import prompt_slot


class RankingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query_mode: Literal["reference", "generated", "title"] = "reference"
    normalizer: Literal["lemma", "stem"] = "lemma"
    pool_ratio: int = Field(default=3, description="pool size k = pool_ratio × the article's snippet count")
    max_candidates: int | None = Field(default=None, description="cap the reranked pool (cheap local runs)")
    snippet_chars: int = Field(
        default=2500, description="snippet text cut to this many characters in the prompt"
    )
    top_logprobs: int = Field(
        default=10, ge=0, le=20, description="alternatives per token for the yes/no score"
    )
    judge_max_tokens: int = Field(
        default=8, description="max_tokens of a relevance judgement (raise for thinkers)"
    )
    ndcg_at: list[int] = Field(default_factory=lambda: [10], description="cutoffs K of the NDCG@K metrics")
    default_pool: int = Field(
        default=30, description="pool size when no gold snippet count is known (writer)"
    )
    reference_queries: str | None = Field(
        default=None, description="stored reference queries; default <dataset dir>/reference_queries.json"
    )
    prompt_query_ru: str = prompt_slot("ru/query_description_ru.txt", "title")
    prompt_query_en: str = prompt_slot("ru/query_description_en.txt", "title")
    prompt_relevance: str = prompt_slot("ru/relevance.txt", "title", "text", "query")
    prompt_reference_query: str = prompt_slot("ru/reference_query.txt", "title", "headings")
    prompt_reference_query_en: str = prompt_slot("ru/reference_query_en.txt", "title", "headings")


class OutlineConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["direct", "neighbors", "description"] = "description"
    centroids: Literal["headings", "first_snippet", "data"] = "headings"
    per_cluster: int = 5
    neighbors: int | None = Field(
        default=None,
        description="neighbouring snippets of the same source each side; None = 1 for 'neighbors', else 0",
    )
    snippet_chars: int = 1500
    cluster_chars: int = Field(default=6000, description="budget for all snippet text of one cluster prompt")
    seed: int = 42
    data_k_min: int = Field(default=2, description="'data' centroids: smallest k tried (silhouette)")
    data_k_max: int = Field(default=8, description="'data' centroids: largest k tried (silhouette)")
    describe_max_tokens: int = 256
    mini_max_tokens: int = 200
    merge_max_tokens: int = 700
    bullets: Literal["auto", "headings", "prose"] = Field(
        default="auto", description="outline parser: bullets"
    )
    eval_min_level: int = Field(default=2, description="reference headings scored: lowest level (title = 1)")
    eval_max_level: int | None = Field(default=None, description="reference headings scored: deepest level")
    eval_include_title: bool = Field(
        default=False, description="score the article title as a reference heading"
    )
    eval_drop_title_echo: bool = Field(
        default=True, description="ignore generated headings equal to the title"
    )
    prompt_describe: str = prompt_slot("ru/outline_describe.txt", "title", "texts")
    prompt_mini_outline_direct: str = prompt_slot("ru/outline_mini_direct.txt", "title", "texts")
    prompt_mini_outline_description: str = prompt_slot(
        "ru/outline_mini_description.txt", "title", "description"
    )
    prompt_merge: str = prompt_slot("ru/outline_merge.txt", "title", "outlines")

    def neighbor_count(self) -> int:
        if self.neighbors is not None:
            return self.neighbors
        return 1 if self.mode == "neighbors" else 0


class SectionsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    group_threshold: float = 0.8
    snippet_use: Literal["passage", "symmetric"] = Field(
        default="passage",
        description="how snippets are embedded for grouping: 'passage' shares the vectors the outline stage "
        "computes (each snippet embedded once); 'symmetric' is the embedder's paraphrase mode",
    )
    chunk_size: int = 5
    compression: Literal["iterative", "tree"] = "iterative"
    oracle_filter: float | None = Field(
        default=None, description="authors' filter: cosine to gold text (oracle)"
    )
    max_snippets: int | None = Field(default=None, description="cap snippets per section (cheap local runs)")
    snippet_chars: int = 1500
    prompt_describe: str = prompt_slot("ru/section_describe.txt", "article", "section", "texts")
    prompt_extend: str = prompt_slot("ru/section_extend.txt", "article", "section", "description", "texts")
    prompt_write: str = prompt_slot("ru/section_write.txt", "article", "section", "materials")
    prompt_write_lead: str = prompt_slot(
        "ru/section_write_lead.txt", "article", "section", "materials", description="write prompt of the lead"
    )
    describe_max_tokens: int | None = Field(default=400, description="answer cap of describe/extend calls")
    write_max_tokens: int | None = Field(
        default=None, description="answer cap of write calls; None = model's"
    )
    unit: Literal["section", "article"] = Field(
        default="section", description="benchmark unit: one section, or all sections of an article"
    )
    bleu_tokenize: str = Field(default="intl", description="sacrebleu tokenizer ('intl' splits «», —; '13a')")
    rouge_lemmatize: bool = Field(default=False, description="also report ROUGE-L over pymorphy3 lemmas")


class WriterConfig(BaseModel):
    """The STORM-like writer (``ruwikibench write``): ranking -> outline -> assignment -> sections -> lead."""

    model_config = ConfigDict(extra="forbid")

    query_mode: Literal["generated", "title"] = Field(
        default="generated", description="ranking query in writer mode ('reference' would need gold headings)"
    )
    candidates: int = Field(default=60, description="BM25 pool reranked by the relevance model")
    min_relevance: float = Field(
        default=0.5, description="select_sources: keep snippets with P(relevant) >= this"
    )
    max_sources: int = Field(default=30, description="select_sources: at most this many snippets")
    min_sources: int = Field(
        default=5, description="select_sources: if fewer pass the threshold, take this many top-ranked anyway"
    )
    per_section: int = Field(default=5, description="assign: snippets given to each section")
    exclusive: bool = Field(
        default=False, description="assign: each snippet to its best-matching section only"
    )
    rrf_k: int = Field(default=60, description="assign: reciprocal rank fusion constant (BM25 + embeddings)")
    bm25_weight: float = Field(default=1.0, description="assign: weight of the BM25 ranking in the fusion")
    embedding_weight: float = Field(
        default=1.0, description="assign: weight of the embedding ranking in the fusion"
    )
    max_level: int = Field(default=3, description="outline headings deeper than this are dropped")
    parent_text: bool = Field(
        default=False, description="headings with subheadings get text of their own too"
    )
    group_threshold: float | None = Field(
        default=1.01,
        description="sections grouping threshold in writer mode: above 1 every snippet is described "
        "alone, so each [n] marker cites exactly one snippet; None = sections.group_threshold (a marker then "
        "cites every snippet of a similarity group)",
    )
    review_outline: bool = Field(
        default=False, description="stop after the outline for a human edit (interrupt)"
    )
    lead_citations: bool = Field(
        default=True,
        description="keep [n] markers in the lead that the body shown to the lead writer carries",
    )
    lead_body_chars: int = Field(default=6000, description="body text shown to the lead writer, cut to this")
    lead_max_tokens: int = 400
    section_max_tokens: int | None = Field(default=700, description="answer cap of a section write call")
    prompt_section: str = prompt_slot("ru/writer_section.txt", "article", "section", "materials")
    prompt_lead: str = prompt_slot("ru/writer_lead.txt", "title", "body")
