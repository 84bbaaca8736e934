"""Code identity of plug-in code: what enters the run id and spec.json for stages and overrides from outside
the package.

For an object (a stage class, a node function, a graph builder) the identity is the sha256 of the source file
the object is *defined* in (``inspect.getsourcefile`` of the unwrapped function or of the class — a function
re-exported by another module hashes the module that defines it), the name and version of the installed
distribution that holds that file, if any, and the sha256 of every file of its top-level package and of
that distribution (:mod:`ruwikibench.runner.package_files`: the helpers it imports, directly or not, and its
package data). Built-in stages (modules of :mod:`ruwikibench`) have no code identity: the package version
and git commit in spec.json already say which code ran, and their run ids stay as they were.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from dataclasses import asdict, dataclass
from importlib.metadata import Distribution
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ruwikibench.conf.config import RunConfig
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.package_files import code_files, distributions_of
from ruwikibench.stage.contract import Stage, defining_stage
from ruwikibench.stage.registry import stage_options

BUILTIN_PREFIX = "ruwikibench."


@dataclass(frozen=True)
class CodeIdentity:
    """Where an object's code is defined and the sha256 of that file (and its installed distribution)."""

    qualname: str  # "package.module.Name"
    file: str | None
    sha256: str | None
    distribution: str | None = None
    version: str | None = None
    files: dict[str, str] | None = None  # path relative to the package's folder -> sha256

    def record(self) -> dict[str, Any]:
        """What spec.json keeps of it."""
        return asdict(self)


def defining_object(obj: Any) -> Any:
    """The function or class whose source defines ``obj``: decorators unwrapped, an instance's class (for an
    older plug-in stage seen through :class:`~ruwikibench.stage.contract.AdaptedStage`, the plug-in's
    class)."""
    if isinstance(obj, Stage):
        obj = defining_stage(obj)
    if inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isclass(obj) or inspect.ismodule(obj):
        return inspect.unwrap(obj) if callable(obj) and not inspect.isclass(obj) else obj
    return type(obj)


def file_sha256(path: str | Path | None) -> str | None:
    if not path or not Path(path).is_file():
        return None
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def source_file(obj: Any) -> str | None:
    """The source file ``obj`` is defined in (not the module that re-exports it); None for built-ins."""
    try:
        return inspect.getsourcefile(defining_object(obj))
    except (TypeError, OSError):
        return None


def code_identity(obj: Any) -> CodeIdentity:
    target = defining_object(obj)
    module = str(getattr(target, "__module__", None) or getattr(target, "__name__", ""))
    qualname = str(getattr(target, "__qualname__", getattr(target, "__name__", "")))
    name = module if inspect.ismodule(target) else f"{module}.{qualname}"
    file = source_file(target)
    return module_identity(name, module, file)


def module_identity(name: str, module: str, file: str | None) -> CodeIdentity:
    """The identity of code named ``name`` defined in ``file`` of ``module``: the file's sha256, its installed
    distribution, the files of its top-level package and distribution."""
    dist = distribution_of(module, file)
    files = code_files(module, file, dist) if file is not None else None
    if dist is None:
        return CodeIdentity(name, file, file_sha256(file), files=files)
    return CodeIdentity(name, file, file_sha256(file), dist.metadata["Name"], dist.version, files)


def distribution_of(module: str, file: str | None) -> Distribution | None:
    """The installed distribution that holds ``file`` (module ``module``), if any."""
    if file is None:
        return None
    resolved = Path(file).resolve()
    return next((dist for dist in distributions_of(module) if _holds(dist, resolved)), None)


def files_key(code: dict[str, Any]) -> list[list[str]] | None:
    """The run-id part of a code record's ``files`` (sorted [path, sha256] pairs); None when they say no more
    than ``sha256`` (a plug-in made of its one defining file keeps the run id it had)."""
    files = code.get("files") or {}
    if len(files) <= 1 and set(files.values()) <= {code.get("sha256")}:
        return None
    return [[path, digest] for path, digest in sorted(files.items())]


def _holds(dist: Distribution, file: Path) -> bool:
    """The distribution installed ``file``: listed in its RECORD, or under the folder of an editable
    install."""
    for entry in dist.files or []:
        if entry.suffix == ".py" and Path(str(dist.locate_file(entry))).resolve() == file:
            return True
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        return False
    url = str(direct.get("url", ""))
    if direct.get("dir_info", {}).get("editable") and url.startswith("file://"):
        return Path(url.removeprefix("file://")).resolve() in file.parents
    return False


def is_builtin(obj: Any) -> bool:
    module = getattr(defining_object(obj), "__module__", "") or ""
    return module == "ruwikibench" or module.startswith(BUILTIN_PREFIX)


def prompt_fields(model: type[BaseModel]) -> list[str]:
    """The fields of an options model naming prompt files (declared with
    :func:`ruwikibench.conf.config.prompt_slot`)."""
    return [
        name
        for name, info in model.model_fields.items()
        if isinstance(info.json_schema_extra, dict) and "prompt_fields" in info.json_schema_extra
    ]


def stage_prompts(stage: Stage[Any], options: BaseModel | None = None) -> list[str]:
    """The prompt files a stage declares before the run: its ``prompt_files`` and its options' prompt
    fields."""
    names = list(stage.prompt_files)
    if options is not None:
        names += [str(getattr(options, field)) for field in prompt_fields(type(options))]
    return names


def prompt_hashes(names: list[str], config: RunConfig) -> dict[str, str]:
    """name -> sha256 of the text, as the prompt loader hashes it (a missing file raises
    FileNotFoundError)."""
    library = PromptLibrary(config.prompts_dir)
    return {name: library.get(name).sha256 for name in sorted(set(names))}


def stage_identity(stage: Stage[Any], config: RunConfig) -> dict[str, Any] | None:
    """What a run of ``stage`` adds to the run id and spec.json: for a plug-in stage its code, declared prompt
    files and options; for a built-in stage its options when it declares an options model; else None. Options
    the config's own identity hashes (``options_alias``: the built-in stages') are not added again."""
    options = stage_options(config, stage.name)
    builtin = is_builtin(stage)
    if builtin and (options is None or stage.options_alias):
        return None
    record: dict[str, Any] = {}
    if not builtin:
        record["code"] = code_identity(stage).record()
    prompts = stage_prompts(stage, options)
    if prompts or not builtin:
        record["prompts"] = prompt_hashes(prompts, config)
    if options is not None and not stage.options_alias:
        record["options"] = options.model_dump(mode="json")
    return record


def stages_identity(stages: list[Stage[Any]], config: RunConfig) -> dict[str, dict[str, Any]]:
    """:func:`stage_identity` of every stage that has one, by name."""
    found = {stage.name: stage_identity(stage, config) for stage in stages}
    return {name: record for name, record in found.items() if record is not None}


def identity_key(records: dict[str, dict[str, Any]]) -> str:
    """The run-id part of :func:`stages_identity`: code and prompt hashes (no file paths: moving a checkout
    keeps the id) and the stage options."""

    def one(record: dict[str, Any]) -> dict[str, Any]:
        key: dict[str, Any] = {"prompts": sorted(record.get("prompts", {}).values())}
        if "options" in record:
            key["options"] = record["options"]
        if "code" in record:
            code = record["code"]
            key["code"] = [code["qualname"], code["sha256"], code["distribution"], code["version"]]
            files = files_key(code)
            if files is not None:
                key["code"].append(files)
        return key

    return json.dumps({name: one(record) for name, record in sorted(records.items())}, sort_keys=True)
