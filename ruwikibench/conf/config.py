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
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ruwikibench.conf.blocks import (
    E5_INT8_SHA256,  # noqa: F401 - importable from here, as before the blocks had a module
    CitationsConfig,
    EmbedderConfig,
    JudgesConfig,
    LocalServerConfig,
    ModelConfig,
    prompt_slot,  # noqa: F401 - importable from here (plug-ins, builtin_options.py)
)

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
    """The configured role that serves ``role``: itself, else its own fallbacks (``support`` -> ``judge``),
    else the general fallback (writer, outline, ranking, query); None when none is configured. The one rule
    for configs and LLM clients."""
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
"""Moves every cache: models/, datasets/ and logs/ (:func:`ruwikibench.models.asset_files.cache_root`) and,
for a config that leaves ``cache_dir`` at its default, the response, embedding and entity caches and bm25/."""


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
        "writer's: no gold data) has that stage rewrite the "
        "stages' options for it, see RunConfig.with_profile",
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
        description="each stage's options (its `options_model`), by stage name: validated when the config "
        "is, recorded in spec.json and in the run id (a built-in stage's under its top-level key, as before)",
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
        """A top-level key named like a stage that declares ``options_alias`` is its ``stage_options``
        block."""
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
        """Every registered stage's options validated by its model (defaults for a stage with an alias when
        the config is silent), then rewritten for the profile by the stages that declare one."""
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
        """The validated options of the stage whose ``options_model`` is ``model``:
        ``config.options(OutlineConfig)`` (a block assigned as a plain dict since is validated here)."""
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
        """This config under ``profile`` (a new object; the same one if it already is). A profile other than
        the benchmark's has its stage rewrite the stages' options; such a config does not go back (load the
        YAML again for a benchmark run)."""
        if profile == self.profile:
            return self
        if profile == BENCHMARK_PROFILE:
            raise ValueError(
                f"a {self.profile}-profile config has its stage settings replaced; load it again for "
                f"{BENCHMARK_PROFILE!r}"
            )
        return RunConfig.model_validate({**self.model_dump(), "profile": profile})

    def model_for(self, role: str) -> ModelConfig:
        """The model of a role; roles not named fall back to their own fallbacks (``support`` -> ``judge``),
        then to the general fallback roles, then to any configured model."""
        served_by = role_served_by(role, self.models)
        if served_by is None:
            raise KeyError(f"config names no model for role {role!r}")
        return self.models[served_by]

    @property
    def cache_path(self) -> Path:
        """``cache_dir``; a config that leaves it at its default follows ``$RUWIKIBENCH_CACHE`` when set, so
        one variable moves every cache (a ``cache_dir`` a config names is kept)."""
        if self.cache_dir == DEFAULT_CACHE_DIR and os.environ.get(CACHE_ENV):
            return Path(os.environ[CACHE_ENV]).expanduser()
        return Path(self.cache_dir).expanduser()

    def identity(self) -> dict[str, object]:
        """What changes a run's answers or scores: the run id hashes this. Where and how fast the models are
        reached (endpoints, timeouts, retries, concurrency, cache folder) is left out, so the same run on
        another endpoint or port resumes the same run directory and reuses its cached answers. The judges'
        settings are left out too: they judge a finished run, they do not change it. The options of a stage
        with ``options_alias`` are hashed under its top-level key, where they were before ``stage_options``
        existed; other stages' options enter the run id through the stages that read them
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
    """``stage_options.<name>`` validated by ``model``; an error names the field
    (``stage_options.<name>.<field>``)."""
    assert model is not None
    try:
        return model.model_validate(given.get(name) or {})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(['stage_options', name, *map(str, e['loc'])])}: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(problems) from None


class RunInputError(ValueError):
    """Bad user input (a file, a field, an option, an article name): the message is one line naming it. The
    CLI prints it as it is (never as markup) and exits with status 2, without a traceback."""


class ConfigError(RunInputError):
    pass
