"""What a node returns, as far as it can be known before a run: a **state update** (a dict of state keys; the
graph's edges say where to go next) or a **Command** (``Command(goto=Send("mini_outline", {...}))``: the node
routes itself and has no outgoing edge). A node override must return what the node it replaces returns: a dict
where a Command is expected leaves the fan-out with nowhere to go, and every unit fails at run time.

The built-in node's kind is known from its graph (a node added with ``destinations=`` routes by Command) or
from its return annotation (``Command[...]``); the override's kind only from its return annotation. An
override without a return annotation is not checked at load; at run time :func:`routing_checked` fails its
unit with one clear line when it returns a state update for a routing node.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import types
import typing
from typing import Any, Literal

from langgraph.graph import StateGraph
from langgraph.types import Command, Send
from pydantic import BaseModel

NodeKind = Literal["command", "update"]


def _node_function(spec: Any) -> Any:
    """The function a graph node runs (async or sync), or None."""
    runnable = spec.runnable
    return getattr(runnable, "afunc", None) or getattr(runnable, "func", None)


def _return_annotation(fn: Any) -> Any:
    """``fn``'s return annotation, resolved when it can be (a string when it cannot); None when absent."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - an annotation naming something not importable: take it as written
        hints = getattr(fn, "__annotations__", {}) or {}
    return hints.get("return")


MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


def _kind_of_text(annotation: str) -> NodeKind | None:
    """The kind of an unresolved annotation, from its text ('Command[...]', 'dict[str, Any]')."""
    head = annotation.split("[")[0].strip().rsplit(".", 1)[-1]
    if head in ("Command", "Send"):
        return "command"
    return "update" if head in ("dict", "Dict", "Mapping", "MutableMapping") else None


def _kind_of(annotation: Any) -> NodeKind | None:
    """'command' for Command / Send (or a union holding one), 'update' for a dict, a mapping, a TypedDict or a
    pydantic model, None when the annotation does not say (absent, Any, another type)."""
    if annotation is None:
        return None
    if isinstance(annotation, str):
        return _kind_of_text(annotation)
    origin = typing.get_origin(annotation) or annotation
    if origin in (Command, Send):
        return "command"
    if origin in (typing.Union, types.UnionType):
        kinds = {_kind_of(arg) for arg in typing.get_args(annotation)}
        return "command" if "command" in kinds else "update" if kinds == {"update"} else None
    if origin in MAPPINGS or typing.is_typeddict(origin):
        return "update"
    if isinstance(origin, type) and issubclass(origin, BaseModel):
        return "update"
    return None


def builtin_kind(graph: StateGraph, node: str) -> NodeKind:
    """The kind of ``node`` in ``graph``: 'command' when it was added with ``destinations=`` or is annotated
    to return a Command, else 'update'."""
    spec = graph.nodes[node]
    if spec.ends:
        return "command"
    return _kind_of(_return_annotation(_node_function(spec))) or "update"


def override_kind(fn: Any) -> NodeKind | None:
    """The kind an override's return annotation declares (None: not annotated, or not telling)."""
    return _kind_of(_return_annotation(fn))


def kind_mismatch(graph: StateGraph, node: str, fn: Any) -> str | None:
    """Why ``fn`` cannot replace ``node`` (one line), or None when its kind fits or cannot be known."""
    expected, declared = builtin_kind(graph, node), override_kind(fn)
    if declared is None or declared == expected or expected == "update":
        return None  # a Command with an update may stand for a state update; an unannotated function: unknown
    targets = graph.nodes[node].ends
    where = f'"{targets[0]}"' if isinstance(targets, tuple) and len(targets) == 1 else "the next node"
    return (
        f"the built-in {node!r} node routes itself with a Command (it returns "
        f"Command(goto=Send({where}, {{...}})) and has no outgoing edge), but "
        f"{getattr(fn, '__name__', fn)!r} is annotated to return a state update: return a Command as the "
        "built-in node does (see docs/plugins.md, 'A node override')"
    )


class NodeKindError(TypeError):
    """A node override returned a state update where the node it replaces routes with a Command."""


def _is_command(result: Any) -> bool:
    if isinstance(result, Command):
        return True
    return isinstance(result, list | tuple) and bool(result) and all(isinstance(r, Command) for r in result)


def routing_checked(graph: StateGraph, node: str, fn: Any, key: str) -> Any:
    """``fn`` as the override of ``node``; for a routing node (:func:`builtin_kind` 'command') wrapped so a
    return that is not a Command fails the unit with one line naming the config key, instead of LangGraph's
    error about concurrent updates further on. The wrapper keeps ``fn``'s signature (LangGraph still injects
    ``runtime``)."""
    if builtin_kind(graph, node) != "command":
        return fn

    def check(result: Any) -> Any:
        if not _is_command(result):
            raise NodeKindError(
                f"overrides.{key}: returned {type(result).__name__}, but the {node!r} node routes itself: "
                "return Command(goto=Send(<next node>, <its input>)) as the built-in node does "
                "(docs/plugins.md, 'A node override')"
            )
        return result

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def checked_async(*args: Any, **kwargs: Any) -> Any:
            return check(await fn(*args, **kwargs))

        return checked_async

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        return check(fn(*args, **kwargs))

    return checked
