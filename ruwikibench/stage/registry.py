"""Stages by name: one registry for the built-in stages and for installed plug-in packages.

A stage (a subclass of :class:`ruwikibench.stage.contract.Stage`) registers itself with the
:func:`register_stage` decorator::

    @register_stage
    class MyStage(Stage[MyOutput]):
        name = "my_stage"
        columns = [("Score", "score")]
        def build_graph(self): ...
        def units(self, dataset, article, config): ...
        def score(self, unit, output, context): ...  # -> StageScore

An object that does not subclass :class:`Stage` but has its required members (an older plug-in) is registered
wrapped in :class:`ruwikibench.stage.contract.AdaptedStage`: every consumer sees one typed :class:`Stage`.

Installed packages add stages through the ``ruwikibench.stages`` entry-point group (pyproject.toml)::

    [project.entry-points."ruwikibench.stages"]
    my_stage = "my_pkg.stages:MyStage"     # a stage class, a stage object, or a module that registers stages

The built-in stages (ranking, outline, sections, writer) come through the same door: ruwikibench's own
pyproject.toml names their stage objects in that group, and nothing imports them otherwise.

Everything is found on first use (:func:`get_stage`, :func:`stage_names`), never at import.
"""

from __future__ import annotations

import importlib
import threading
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from ruwikibench.conf.config import ModelRole
from ruwikibench.stage.contract import Stage, as_stage, current_stage_name, defining_stage, missing_members

if TYPE_CHECKING:
    from ruwikibench.conf.config import RunConfig

ENTRY_POINT_GROUP = "ruwikibench.stages"

_stages: dict[str, Stage[Any]] = {}
_broken: dict[str, str] = {}
_discovered = False
_lock = threading.RLock()

T = TypeVar("T")


class StageRegistryError(KeyError):
    """An unknown stage name, a stage object missing part of the contract, or a plug-in that fails to load."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _check(stage: Any, origin: str) -> None:
    missing = missing_members(stage)
    if missing:
        raise StageRegistryError(
            f"{origin}: not a stage, missing {', '.join(missing)} (see ruwikibench.stage.contract)"
        )
    if not isinstance(stage.name, str) or not stage.name:
        raise StageRegistryError(f"{origin}: stage name must be a non-empty string")


def register_stage(stage: T) -> T:
    """Register a stage class (instantiated without arguments) or a stage object under its ``name``.

    Returns its argument, so it works as a class decorator. A name registered twice by different classes is an
    error; registering the same class again (a module imported twice) replaces the old object."""
    instance: Any = stage() if isinstance(stage, type) else stage
    origin = _qualified(instance)
    _check(instance, origin)
    with _lock:
        old = _stages.get(instance.name)
        if old is not None and _qualified(old) != origin:
            raise StageRegistryError(
                f"stage {instance.name!r} is registered twice: {_qualified(old)} and {origin}"
            )
        _stages[instance.name] = as_stage(instance)
    return stage


def _qualified(stage: object) -> str:
    code = defining_stage(stage) if isinstance(stage, Stage) else stage
    return f"{type(code).__module__}.{type(code).__qualname__}"


def unregister_stage(name: str) -> None:
    """Forget a stage (tests that register a temporary one)."""
    with _lock:
        _stages.pop(name, None)


def _load_entry_point(entry: EntryPoint) -> None:
    loaded = entry.load()
    if isinstance(loaded, type(importlib)):  # a module: importing it ran its @register_stage decorators
        return
    if isinstance(loaded, type):
        loaded = loaded()
    _check(loaded, f"entry point {entry.name} = {entry.value}")
    register_stage(loaded)


def discover(refresh: bool = False) -> None:
    """Load the ``ruwikibench.stages`` entry points, ruwikibench's own (the built-in stages) and those of the
    installed plug-in packages (once).

    A plug-in that fails to load does not break the other stages: the error is kept and raised when the
    stage is asked for by name."""
    global _discovered
    with _lock:
        if _discovered and not refresh:
            return
        _discovered = True
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            try:
                _load_entry_point(entry)
            except Exception as exc:  # noqa: BLE001 - any plug-in error becomes one line naming the entry point
                dist = entry.dist.name if entry.dist is not None else "?"
                _broken[entry.name] = (
                    f"stage plug-in {entry.name!r} ({entry.value}, package {dist}) failed to load: "
                    f"{type(exc).__name__}: {exc}"
                )


def get_stage(name: str) -> Stage[Any]:
    """The stage registered as ``name`` (an earlier name of a renamed stage finds it too)."""
    discover()
    name = current_stage_name(name)
    if name in _stages:
        return _stages[name]
    if name in _broken:
        raise StageRegistryError(_broken[name])
    known = stage_names()
    hint = (
        ""
        if known
        else " (no stage is registered: install ruwikibench, e.g. pip install -e ., for its entry points)"
    )
    raise StageRegistryError(f"unknown stage {name!r}; known: {', '.join(known)}{hint}")


def known_stages() -> dict[str, Stage[Any]]:
    """Every registered stage by name, in report order."""
    discover()
    with _lock:
        ordered = sorted(_stages.values(), key=lambda s: (s.order, s.name))
        return {stage.name: stage for stage in ordered}


def stage_names() -> list[str]:
    return list(known_stages())


def plugin_errors() -> dict[str, str]:
    """Entry points that failed to load: name -> one-line reason."""
    discover()
    return dict(_broken)


def options_model(stage: Stage[Any]) -> type[BaseModel] | None:
    """The stage's options model (its ``options_model`` class attribute), or None."""
    model = stage.options_model
    if model is not None and not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise StageRegistryError(
            f"stage {stage.name!r}: options_model must be a pydantic model class, got {model!r}"
        )
    return model


def stage_options(config: RunConfig, name: str) -> BaseModel | None:
    """The options of stage ``name`` under ``config``: its ``stage_options`` block validated by the stage's
    options model (defaults where the config is silent); None for a stage without an options model."""
    stage = get_stage(name)
    model = options_model(stage)
    return None if model is None else model.model_validate(config.stage_options.get(stage.name, {}))


def stage_roles() -> dict[str, str]:
    """Model roles the registered stages declare (their ``roles``): role -> the stage declaring it."""
    return {_role(role).name: name for name, stage in known_stages().items() for role in stage.roles}


def declared_roles() -> dict[str, ModelRole]:
    """The model roles the registered stages declare, in report order (a role named by a string has no
    fallbacks of its own)."""
    return {(r := _role(role)).name: r for stage in known_stages().values() for role in stage.roles}


def builtin_stage_roles() -> list[str]:
    """The roles ruwikibench's own stages declare (the other stages' are plug-ins' roles)."""
    builtin = [
        s for s in known_stages().values() if type(defining_stage(s)).__module__.startswith("ruwikibench.")
    ]
    return [_role(role).name for stage in builtin for role in stage.roles]


def _role(role: str | ModelRole) -> ModelRole:
    return role if isinstance(role, ModelRole) else ModelRole(role)


def stage_of_options(model: type[BaseModel]) -> Stage[Any]:
    """The registered stage whose ``options_model`` is ``model``."""
    discover()
    for stage in list(_stages.values()):
        if stage.options_model is model:
            return stage
    raise StageRegistryError(f"{model.__qualname__} is the options model of no registered stage")


def options_stages() -> list[Stage[Any]]:
    """The registered stages that declare an options model, in report order."""
    return [stage for stage in known_stages().values() if options_model(stage) is not None]


def default_stage_names() -> list[str]:
    """The stages a config runs when it names none (those declaring ``runs_by_default``), in report order."""
    return [name for name, stage in known_stages().items() if stage.runs_by_default]


def profile_names(default: str) -> list[str]:
    """``default`` (the benchmark profile) and the profiles the registered stages declare."""
    declared = [profile for stage in known_stages().values() for profile in stage.profiles]
    return list(dict.fromkeys([default, *declared]))
