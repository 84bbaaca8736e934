"""Node and graph overrides from the run config: evaluate your own node or your own graph without editing the
package.

::

    overrides:
      outline.describe: my_pkg.nodes:describe          # one node of a stage graph (stage.node)
      ranking: my_pkg.graphs:build_ranking_graph       # the whole graph of a stage (stage)

A node override is a callable taking the node's input state (and optionally ``runtime``), like the built-in
node it replaces; it keeps the node's name, place and edges, so its outputs are captured in ``nodes.jsonl``
like the built-in ones. A graph override is a function without arguments returning an uncompiled
``StateGraph`` whose input schema is filled by the stage's units and whose output schema carries what the
stage's ``score()`` reads.

Everything is checked by :func:`resolve_overrides` when a command loads the config, before any LLM call: an
import error, a missing attribute, a callable with the wrong signature, a node annotated to return a state
update where the built-in node routes with a ``Command`` (:mod:`ruwikibench.runner.node_kinds`), an unknown
stage or node, or a graph whose schemas do not fit the stage contract each give one :class:`OverrideError`
line naming the config key. An override declares the prompt files it reads with
:func:`ruwikibench.plugin.uses_prompts` (names, or a model of :func:`~ruwikibench.plugin.prompt_slot` fields):
each must exist and use only the fields it is given.
Every override is recorded in ``spec.json`` (import path, the source file the object is defined in, its
sha256, the installed distribution holding it, every file of its top-level package and distribution, its
declared prompts) and enters the run id (:mod:`ruwikibench.runner.identity`).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.graph import StateGraph
from pydantic import BaseModel

from ruwikibench.conf.config import ConfigError, RunConfig
from ruwikibench.prompts import PromptLibrary, placeholders
from ruwikibench.runner.identity import CodeIdentity, code_identity, files_key, module_identity
from ruwikibench.runner.node_kinds import kind_mismatch, routing_checked
from ruwikibench.stage.contract import Stage
from ruwikibench.stage.prompt_use import declared_prompts
from ruwikibench.stage.registry import StageRegistryError, get_stage

INJECTED = frozenset("runtime config writer store".split())  # noqa: SIM905 - parameter names, no stage among them
"""The parameters LangGraph fills in for a node (``writer`` is its StreamWriter, not the writer stage)."""


class OverrideError(ConfigError):
    """An override that cannot be used; the message names the config key."""


@dataclass(frozen=True)
class Override:
    key: str  # the config key: "stage" or "stage.node"
    stage: str
    node: str | None  # None = the whole graph
    target: str  # "package.module:attribute"
    obj: Any
    file: str | None
    sha256: str | None
    distribution: str | None = None
    version: str | None = None
    files: dict[str, str] | None = None  # every file of its top-level package and distribution -> sha256
    prompts: dict[str, str] = dataclasses.field(default_factory=dict)  # declared prompt file -> sha256

    def record(self) -> dict[str, Any]:
        """What spec.json keeps of it."""
        record: dict[str, Any] = {
            "kind": "node" if self.node else "graph",
            "target": self.target,
            "file": self.file,
            "sha256": self.sha256,
        }
        if self.distribution:
            record |= {"distribution": self.distribution, "version": self.version}
        if self.files is not None:
            record["files"] = self.files
        if self.prompts:
            record["prompts"] = self.prompts
        return record

    def id_key(self) -> list[Any]:
        """What the run id hashes: the import path and the code (an installed distribution's name and
        version; the package's files and the declared prompts' hashes, each only when there are any beyond the
        defining file, so an override of one file and no prompts keeps the run id it had)."""
        key: list[Any] = [self.target, self.sha256]
        key += [self.distribution, self.version] if self.distribution else []
        files = files_key({"sha256": self.sha256, "files": self.files})
        key += [{"files": files}] if files is not None else []
        key += [{"prompts": sorted(self.prompts.values())}] if self.prompts else []
        return key


def _fail(key: str, message: str) -> OverrideError:
    return OverrideError(f"overrides.{key}: {message}")


def load_target(key: str, target: str) -> tuple[Any, CodeIdentity]:
    """Import ``package.module:attribute``; returns the object and its code identity (the file that defines
    it, which for a re-exported function is not the module the config names)."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise _fail(key, f"{target!r} is not 'package.module:attribute'")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is reported on one line
        raise _fail(key, f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    obj: Any = module
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise _fail(key, f"module {module_name!r} has no attribute {attribute!r}")
        obj = getattr(obj, part)
    identity = code_identity(obj)
    if identity.file is None:  # an object without source of its own (an instance, a C function): its module's
        identity = module_identity(identity.qualname, module_name, getattr(module, "__file__", None))
    return obj, identity


def check_node_signature(key: str, fn: Any) -> None:
    """A node takes the state as its first argument; any other required parameter must be one LangGraph
    fills."""
    if not callable(fn):
        raise _fail(key, f"{fn!r} is not callable")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise _fail(key, f"cannot read the signature of {fn!r}: {exc}") from None
    params = list(signature.parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if not params or params[0].kind not in (*positional, inspect.Parameter.VAR_POSITIONAL):
        raise _fail(key, f"wrong signature {signature}: a node takes the state first, e.g. (state, runtime)")
    extra = [
        p.name
        for p in params[1:]
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        and p.name not in INJECTED
    ]
    if extra:
        raise _fail(
            key,
            f"wrong signature {signature}: a node takes (state) or (state, runtime); "
            f"{', '.join(extra)} would never be given",
        )


def check_declared_prompts(key: str, obj: Any, config: RunConfig) -> dict[str, str]:
    """The prompt files ``obj`` declares (:func:`ruwikibench.stage.prompt_use.uses_prompts`), each found by
    the prompt loader (a slot's file using only the fields it names): name -> sha256."""
    library = PromptLibrary(config.prompts_dir)
    hashes: dict[str, str] = {}
    for declared in declared_prompts(obj):
        try:
            prompt = library.get(declared.name)
        except FileNotFoundError as exc:
            raise _fail(key, f"declared {exc}") from None
        if declared.fields is not None:
            try:
                unknown = sorted(placeholders(prompt.text) - set(declared.fields))
            except ValueError as exc:
                raise _fail(key, f"prompt file {prompt.path}: not a str.format template: {exc}") from None
            if unknown:
                raise _fail(
                    key,
                    f"prompt file {prompt.path}: unknown field(s) {', '.join('{' + u + '}' for u in unknown)}"
                    f"; this prompt is given {', '.join('{' + g + '}' for g in sorted(declared.fields))}",
                )
        hashes[declared.name] = prompt.sha256
    return dict(sorted(hashes.items()))


def schema_keys(schema: Any) -> tuple[set[str], set[str]]:
    """(all keys, required keys) of a state schema: a TypedDict, a pydantic model or a dataclass."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        fields = schema.model_fields
        return set(fields), {name for name, field in fields.items() if field.is_required()}
    if dataclasses.is_dataclass(schema):
        members = dataclasses.fields(schema)
        required = {
            f.name
            for f in members
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        return {f.name for f in members}, required
    if typing.is_typeddict(schema):
        return set(typing.get_type_hints(schema)), set(schema.__required_keys__)
    hints = getattr(schema, "__annotations__", {})
    return set(hints), set(hints)


def output_keys(stage: Stage[Any], builtin: StateGraph) -> set[str]:
    """The output keys the stage's ``score()`` reads: its ``output_keys`` if declared, else the required keys
    of its own graph's output schema."""
    declared = stage.output_keys
    if declared is not None:
        return set(declared)
    return schema_keys(builtin.output_schema)[1]


def build_override_graph(key: str, builder: Any) -> StateGraph:
    if not callable(builder):
        raise _fail(
            key, f"{builder!r} is not callable (a graph override names a function returning a StateGraph)"
        )
    try:
        required = [
            p
            for p in inspect.signature(builder).parameters.values()
            if p.default is inspect.Parameter.empty
            and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        ]
    except (TypeError, ValueError):
        required = []
    if required:
        raise _fail(
            key,
            f"wrong signature: a graph builder takes no arguments, this one needs "
            f"{', '.join(p.name for p in required)}",
        )
    try:
        graph = builder()
    except Exception as exc:  # noqa: BLE001
        raise _fail(key, f"building the graph failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(graph, StateGraph):
        hint = (
            " (return the uncompiled StateGraph; the runner compiles it)"
            if hasattr(graph, "get_graph")
            else ""
        )
        raise _fail(key, f"the builder returned {type(graph).__name__}, not a StateGraph{hint}")
    return graph


def check_graph_fits(key: str, stage: Stage[Any], builtin: StateGraph, graph: StateGraph) -> None:
    given, _ = schema_keys(builtin.input_schema)
    _, needed = schema_keys(graph.input_schema)
    missing_in = sorted(needed - given)
    if missing_in:
        raise _fail(
            key,
            f"input schema {graph.input_schema.__name__} requires {', '.join(missing_in)}, which the "
            f"{stage.name} stage's input ({builtin.input_schema.__name__}: {', '.join(sorted(given))}) "
            "does not give",
        )
    produced, _ = schema_keys(graph.output_schema)
    missing_out = sorted(output_keys(stage, builtin) - produced)
    if missing_out:
        raise _fail(
            key,
            f"output schema {graph.output_schema.__name__} lacks {', '.join(missing_out)}, which the "
            f"{stage.name} stage scores",
        )


def _split(key: str) -> tuple[str, str | None]:
    stage, _, node = key.partition(".")
    if not stage or (node == "" and key.endswith(".")):
        raise _fail(key, "a key is 'stage' (graph) or 'stage.node' (node)")
    return stage, node or None


def resolve_overrides(config: RunConfig) -> dict[str, Override]:
    """Import and check every override of the config (raises :class:`OverrideError`, one line naming the
    key)."""
    resolved: dict[str, Override] = {}
    graphs: dict[str, StateGraph] = {}
    for key in sorted(
        config.overrides, key=lambda k: ("." in k, k)
    ):  # graphs first: node keys check against them
        target = config.overrides[key]
        stage_name, node = _split(key)
        try:
            stage = get_stage(stage_name)
        except StageRegistryError as exc:
            raise _fail(key, str(exc)) from None
        stage_name = (
            stage.name
        )  # a renamed stage's earlier name ("article.merge") finds it under its name now
        obj, code = load_target(key, target)
        if node is None:
            graph = build_override_graph(key, obj)
            check_graph_fits(key, stage, stage.build_graph(), graph)
            graphs[stage_name] = graph
        else:
            graph = graphs.get(stage_name) or stage.build_graph()
            if node not in graph.nodes:
                raise _fail(
                    key, f"the {stage_name} graph has no node {node!r} (nodes: {', '.join(graph.nodes)})"
                )
            check_node_signature(key, obj)
            if (mismatch := kind_mismatch(graph, node, obj)) is not None:
                raise _fail(key, mismatch)
        prompts = check_declared_prompts(key, obj, config)
        resolved[f"{stage_name}.{node}" if node else stage_name] = Override(
            key=key,
            stage=stage_name,
            node=node,
            target=target,
            obj=obj,
            file=code.file,
            sha256=code.sha256,
            distribution=code.distribution,
            version=code.version,
            files=code.files,
            prompts=prompts,
        )
    return resolved


def check_overrides(config: RunConfig, origin: str | Path | None = None) -> dict[str, Override]:
    """:func:`resolve_overrides` with the config file named in the error."""
    try:
        return resolve_overrides(config)
    except OverrideError as exc:
        raise OverrideError(f"{origin}: {exc}" if origin else str(exc)) from None


def replace_node(graph: StateGraph, node: str, fn: Any) -> None:
    """Swap the callable of ``node`` in an uncompiled graph, keeping its input schema, edges and policies."""
    from langgraph._internal._runnable import coerce_to_runnable

    spec = graph.nodes[node]
    graph.nodes[node] = dataclasses.replace(spec, runnable=coerce_to_runnable(fn, name=node, trace=False))


def stage_graph(stage: Stage[Any], overrides: dict[str, Override]) -> StateGraph:
    """The stage's uncompiled graph with the config's overrides applied (a fresh graph each call)."""
    whole = overrides.get(stage.name)
    subgraph_stages = stage.subgraph_stages
    if whole is not None:
        graph = whole.obj()
    elif subgraph_stages:  # the writer: its stage subgraphs with their overrides
        graph = stage.build_graph_from(
            {name: stage_graph(get_stage(name), overrides) for name in subgraph_stages}
        )
    else:
        graph = stage.build_graph()
    for override in overrides.values():
        if override.stage == stage.name and override.node is not None:
            replace_node(
                graph, override.node, routing_checked(graph, override.node, override.obj, override.key)
            )
    return graph


def spec_records(overrides: dict[str, Override]) -> dict[str, dict[str, Any]]:
    return {key: override.record() for key, override in sorted(overrides.items())}


def fingerprint(overrides: dict[str, Override]) -> str:
    """What enters the run id: each key with its import path and source hash (two runs that differ only by the
    code of one node get different ids)."""
    return json.dumps({k: o.id_key() for k, o in sorted(overrides.items())}, sort_keys=True)
