"""A node override returns what the node it replaces returns: a state update, or a Command for a node that
routes itself (outline.describe: ``Command(goto=Send("mini_outline", ...))``). The docs' recipe runs through
the outline graph; an override annotated to return a dict where a Command is needed is refused at load."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from ruwikibench.conf.config import RunConfig
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.runner.node_kinds import builtin_kind, override_kind
from ruwikibench.runner.overrides import OverrideError, check_overrides, replace_node
from ruwikibench.stage.registry import get_stage
from tests.graphs.test_outline import context_for, python_unit, responder, tiny_dataset

NODES = textwrap.dedent(
    '''
    from __future__ import annotations

    from typing import Any, Literal

    from langgraph.runtime import Runtime
    from langgraph.types import Command, Send

    from ruwikibench.plugin import ClusterTask, StageContext


    async def describe(
        state: ClusterTask, runtime: Runtime[StageContext]
    ) -> Command[Literal["mini_outline"]]:
        """The recipe of docs/plugins.md: describe the cluster without an LLM call, then go on to
        mini_outline with the description, as the built-in node does."""
        description = "Кластер: " + state["cluster"].label
        return Command(goto=Send("mini_outline", {**state, "description": description}))


    async def describe_as_update(state: ClusterTask, runtime: Runtime[StageContext]) -> dict[str, Any]:
        return {"description": "x"}


    async def describe_unannotated(state, runtime):
        return {"description": "x"}


    async def mini_outline_update(state: ClusterTask, runtime: Runtime[StageContext]) -> dict[str, Any]:
        return {}
    '''
)


@pytest.fixture
def module(tmp_path: Path) -> Iterator[str]:
    name = f"kind_nodes_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(NODES, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        yield name
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


def _config(overrides: dict[str, str]) -> RunConfig:
    return RunConfig(models={}, overrides=overrides)


def test_builtin_node_kinds_come_from_the_graph() -> None:
    graph = get_stage("outline").build_graph()
    assert [builtin_kind(graph, n) for n in ("cluster", "select", "describe", "mini_outline", "merge")] == [
        "update",
        "command",
        "command",
        "update",
        "update",
    ]


def test_a_dict_where_a_command_is_needed_is_refused_at_load(module: str) -> None:
    with pytest.raises(OverrideError) as caught:
        check_overrides(_config({"outline.describe": f"{module}:describe_as_update"}), "plugins.yaml")
    message = str(caught.value)
    assert message.startswith("plugins.yaml: overrides.outline.describe: the built-in 'describe' node routes")
    assert 'Command(goto=Send("mini_outline", {...}))' in message and "\n" not in message


def test_overrides_of_the_right_kind_or_without_annotation_load(module: str) -> None:
    fits = {
        "outline.describe": f"{module}:describe",
        "outline.mini_outline": f"{module}:mini_outline_update",
    }
    assert set(check_overrides(_config(fits))) == set(fits)
    unknown = check_overrides(_config({"outline.describe": f"{module}:describe_unannotated"}))
    assert override_kind(unknown["outline.describe"].obj) is None  # not annotated: not knowable at load


def test_the_documented_command_recipe_runs_through_the_outline_graph(module: str) -> None:
    override = check_overrides(_config({"outline.describe": f"{module}:describe"}))["outline.describe"]
    graph = get_stage("outline").build_graph()
    replace_node(graph, "describe", override.obj)
    dataset = tiny_dataset()
    chat = ScriptedChat(responder())
    context = context_for(dataset, chat, mode="description", per_cluster=1)
    out = asyncio.run(graph.compile().ainvoke(python_unit(dataset), context=context))
    descriptions = sorted(r.description for r in out["cluster_results"])
    assert descriptions == ["Кластер: Библиотеки", "Кластер: История", "Кластер: Синтаксис"]
    assert len(chat.calls) == 3 + 1  # three mini-outlines and the merge: the override asked nothing


def test_an_unannotated_dict_for_a_routing_node_fails_its_unit_with_one_clear_line(module: str) -> None:
    """Not knowable at load (no annotation): the run says what is wrong instead of LangGraph's error about
    concurrent updates of 'description'. The recipe's Command passes the same wrapper."""
    from ruwikibench.runner.node_kinds import NodeKindError
    from ruwikibench.runner.overrides import stage_graph

    dataset = tiny_dataset()
    stage = get_stage("outline")
    for target, fails in (("describe_unannotated", True), ("describe", False)):
        overrides = check_overrides(_config({"outline.describe": f"{module}:{target}"}))
        graph = stage_graph(stage, overrides)
        context = context_for(dataset, ScriptedChat(responder()), mode="description", per_cluster=1)
        run = graph.compile().ainvoke(python_unit(dataset), context=context)
        if not fails:
            assert len(asyncio.run(run)["cluster_results"]) == 3
            continue
        with pytest.raises(NodeKindError) as caught:
            asyncio.run(run)
        assert str(caught.value).startswith(
            "overrides.outline.describe: returned dict, but the 'describe' node routes itself: "
            "return Command(goto=Send(<next node>, <its input>))"
        )
