"""Reading a run config from YAML: ``${VAR}`` expansion, the ``base:`` chain, stage names and prompt fields
checked, errors that name the file and the field."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, cast

import yaml
from pydantic import ValidationError

from ruwikibench.conf.config import JUDGE_ROLES, ConfigError, RunConfig
from ruwikibench.conf.secrets import looks_secret, register, register_env, register_model, without_credentials
from ruwikibench.prompts import PromptLibrary, placeholders

MAX_VALUES = 100_000
"""A config expands to at most this many values (strings, numbers, mappings, lists; YAML aliases counted each
time they are used): the paper's config has ~200. Beyond is an alias bomb (9 levels of 9 aliases: 387M
strings)."""

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(value: object, path: Path) -> object:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in every string of the loaded YAML."""
    if isinstance(value, dict):
        return {k: expand_env(v, path) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, path) for v in value]
    if not isinstance(value, str):
        return value

    def repl(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in os.environ:
            if looks_secret(name):
                register(os.environ[name])
            return os.environ[name]
        if default is not None:
            return default
        raise ConfigError(f"{path}: environment variable {name} is not set (used as ${{{name}}})")

    return _ENV.sub(repl, value)


def check_size(data: object, path: Path) -> None:
    """Stop a config whose aliases would expand to more than :data:`MAX_VALUES` values, or that contains
    itself, before anything expands it (counted once per distinct object: a bomb is counted in
    microseconds)."""
    sizes: dict[int, int] = {}
    open_ids: set[int] = set()

    def size(value: object) -> int:
        if not isinstance(value, dict | list):
            return 1
        key = id(value)
        if key in sizes:
            return sizes[key]
        if key in open_ids:
            raise ConfigError(f"{path}: a YAML alias refers to the mapping or list that contains it")
        open_ids.add(key)
        children = [*value.keys(), *value.values()] if isinstance(value, dict) else value
        total = 1
        for child in children:
            total += size(child)
            if total > MAX_VALUES:
                raise ConfigError(
                    f"{path}: the YAML expands to more than {MAX_VALUES:,} values (aliases within aliases?); "
                    "a run config has a few hundred"
                )
        open_ids.discard(key)
        sizes[key] = total
        return total

    size(data)


def check_stages(config: RunConfig, path: str | Path) -> None:
    """Every name in ``stages`` is a registered stage (built in, or from an installed plug-in package); a
    renamed stage's earlier name is replaced by its name now."""
    from ruwikibench.stage.registry import StageRegistryError, get_stage

    for index, name in enumerate(config.stages):
        try:
            stage = get_stage(name)
        except StageRegistryError as exc:
            raise ConfigError(f"{path}: stages.{index}: {exc}") from exc
        profiles = stage.profiles
        if config.profile not in profiles:
            raise ConfigError(
                f"{path}: stages.{index}: stage {name!r} runs under profile {' or '.join(profiles)}; "
                f"set 'profile: {profiles[0]}' (the config has {config.profile!r})"
            )
        config.stages[index] = stage.name


def merged(base: dict, update: dict) -> dict:
    """``update`` over ``base``: mappings merge key by key (recursively), anything else is replaced."""
    out = dict(base)
    for key, value in update.items():
        out[key] = (
            merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def read_config_data(path: Path, seen: tuple[Path, ...] = ()) -> dict:
    """The YAML of a config with its ``base:`` chain applied (a path relative to the file; the file's own keys
    win, mappings merge key by key); ``prompts_dir`` is resolved against the file that names it."""
    if not path.exists():
        raise ConfigError(f"{path}: config file not found" + (f" (the base of {seen[-1]})" if seen else ""))
    if path.resolve() in seen:
        raise ConfigError(f"{path}: 'base' chain loops back to this file")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {_yaml_problem(exc)}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a run config is a mapping of settings")
    check_size(data, path)
    data = cast(dict, expand_env(data, path))
    if data.get("prompts_dir") and not Path(data["prompts_dir"]).is_absolute():
        data["prompts_dir"] = str((path.parent / data["prompts_dir"]).resolve())
    base = data.pop("base", None)
    if base is None:
        return data
    if not isinstance(base, str):
        raise ConfigError(f"{path}: base: the path of another run config, got {base!r}")
    return merged(read_config_data(path.parent / base, (*seen, path.resolve())), data)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error as one line: the problem and where (line, column)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return " ".join(f"{problem}{where}".split())


def load_config(path: str | Path) -> RunConfig:
    """Load a YAML run config (and its ``base:`` chain); errors name the file and the field."""
    path = Path(path)
    return config_from_data(read_config_data(path), path)


def config_from_data(data: dict[str, Any], origin: str | Path) -> RunConfig:
    """A run config from its settings (a loaded YAML mapping, or a dict given in Python), checked exactly as a
    config file is; errors name ``origin`` and the field."""
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{origin}: {error_fields(exc)}") from exc
    check_model_secrets(config, origin)
    check_stages(config, origin)
    check_stage_options(config, origin)
    check_roles(config, origin)
    check_prompt_fields(config, origin)
    return config


def error_fields(exc: ValidationError) -> str:
    """The errors as 'field: problem'; a whole-config check (a stage's options) names its field itself."""

    def one(error: Any) -> str:
        if not error["loc"] and error["type"] == "value_error":
            return str(error["ctx"]["error"])
        return f"{'.'.join(map(str, error['loc']))}: {error['msg']}"

    return "; ".join(one(e) for e in exc.errors())


def check_model_secrets(config: RunConfig, origin: str | Path) -> None:
    """Register every model's secrets for redaction (:mod:`ruwikibench.conf.secrets`); an endpoint's
    ``user:pass@`` becomes its ``Authorization: Basic`` header, so it cannot come with another source of that
    header."""
    for role, model in config.models.items():
        register_env(model.api_key_env)
        register_model(model.endpoints, model.headers)
        with_credentials = [i for i, url in enumerate(model.endpoints) if without_credentials(url)[1]]
        own = "api_key_env" if model.api_key_env else None
        own = own or next((f"headers.{h}" for h in model.headers if h.lower() == "authorization"), None)
        if with_credentials and own:
            raise ConfigError(
                f"{origin}: models.{role}.endpoints.{with_credentials[0]}: credentials in the URL "
                f"(user:pass@) and {own} both set the Authorization header; keep one"
            )


def check_stage_options(config: RunConfig, origin: str | Path) -> None:
    """Every ``stage_options`` block names a registered stage with an options model (the config validated the
    blocks of those: each is held as its model, defaults filled, so equal settings give equal run ids)."""
    from ruwikibench.stage.registry import StageRegistryError, get_stage, options_model

    for name, values in list(config.stage_options.items()):
        try:
            stage = get_stage(name)
            model = options_model(stage)
        except StageRegistryError as exc:
            raise ConfigError(f"{origin}: stage_options.{name}: {exc}") from None
        if model is None:
            raise ConfigError(
                f"{origin}: stage_options.{name}: stage {stage.name!r} declares no options (no options_model)"
            )
        if stage.name != name:  # an earlier name of a renamed stage
            del config.stage_options[name]
            config.stage_options[stage.name] = model.model_validate(values)


def check_roles(config: RunConfig, origin: str | Path) -> None:
    """Every role under ``models:`` is a judge's role or one a registered stage declares (``roles``)."""
    from ruwikibench.stage.registry import builtin_stage_roles, stage_roles

    builtin = [*builtin_stage_roles(), *(role.name for role in JUDGE_ROLES)]
    plugins = [role for role in stage_roles() if role not in builtin]
    for role in config.models:
        if role not in builtin and role not in plugins:
            extra = f"; stage roles: {', '.join(sorted(plugins))}" if plugins else ""
            raise ConfigError(
                f"{origin}: models.{role}: not a role; built-in roles: {', '.join(builtin)}{extra}"
            )


PROMPT_BLOCKS = ("citations", "judges")


def prompt_blocks(config: RunConfig) -> list[tuple[str, Any]]:
    """The config blocks that may name prompt files: the judges' and the options of the stages."""
    from ruwikibench.stage.registry import stage_options

    blocks: list[tuple[str, Any]] = [(name, getattr(config, name)) for name in PROMPT_BLOCKS]
    for stage in dict.fromkeys([*config.stages, *config.stage_options]):
        options = stage_options(config, stage)
        if options is not None:
            blocks.append((f"stage_options.{stage}", options))
    return blocks


def check_prompt_fields(config: RunConfig, origin: str | Path) -> None:
    """Every prompt file the config names exists and uses only the fields the code fills in (so a ``{titel}``
    stops the run here, before any request, with the config key, the file and the fields it may use)."""
    library = PromptLibrary(config.prompts_dir)
    for block_name, block in prompt_blocks(config):
        for name, info in type(block).model_fields.items():
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            if "prompt_fields" not in extra:
                continue
            given = set(extra["prompt_fields"])
            key, value = f"{block_name}.{name}", getattr(block, name)
            try:
                path = library.resolve(value)
                used = placeholders(path.read_text(encoding="utf-8"))
            except FileNotFoundError as exc:
                raise ConfigError(f"{origin}: {key}: {exc}") from None
            except ValueError as exc:
                raise ConfigError(f"{origin}: {key} ({value}): not a str.format template: {exc}") from None
            unknown = sorted(used - given)
            if unknown:
                raise ConfigError(
                    f"{origin}: {key} ({path}): unknown field(s) "
                    f"{', '.join('{' + u + '}' for u in unknown)}; this prompt is given "
                    f"{', '.join('{' + g + '}' for g in sorted(given))}"
                )
