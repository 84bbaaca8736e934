"""The stage registry: built-in stages by decorator, third-party stages by the ``ruwikibench.stages`` entry
points."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.stage import registry
from ruwikibench.stage.contract import AdaptedStage, defining_stage
from ruwikibench.stage.registry import (
    StageRegistryError,
    get_stage,
    known_stages,
    register_stage,
    stage_names,
    unregister_stage,
)

PLUGIN = textwrap.dedent(
    """
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class In(TypedDict):
        title: str

    class EchoStage:
        name = "echo_plugin"
        columns = [("Length", "length")]

        def build_graph(self):
            graph = StateGraph(In, input_schema=In, output_schema=In)
            graph.add_node("echo", lambda state: {"title": state["title"]})
            graph.add_edge(START, "echo")
            graph.add_edge("echo", END)
            return graph

        def units(self, dataset, article, config):
            return []

        def score(self, unit, output, context):
            return []

        def texts(self, unit, output):
            return []
    """
)


def test_builtin_stages_register_themselves_in_report_order() -> None:
    names = stage_names()
    assert names[:3] == ["ranking", "outline", "sections"]
    from ruwikibench.graphs.outline import STAGE

    assert get_stage("outline") is STAGE
    assert known_stages()["outline"] is STAGE


def test_unknown_stage_names_the_known_ones() -> None:
    with pytest.raises(StageRegistryError) as error:
        get_stage("nope")
    assert str(error.value).startswith("unknown stage 'nope'; known: ranking, outline, sections")
    assert isinstance(error.value, KeyError)


def test_decorator_registers_an_instance_and_checks_the_contract() -> None:
    @register_stage
    class Tiny:
        name = "tiny_test_stage"
        columns: ClassVar[list[tuple[str, str]]] = []

        def build_graph(self): ...
        def units(self, dataset, article, config): ...
        def score(self, unit, output, context): ...
        def texts(self, unit, output): ...

    try:
        stage = get_stage("tiny_test_stage")  # a plain object (no Stage base class): seen through the adapter
        assert isinstance(stage, AdaptedStage) and isinstance(stage.plugin, Tiny)
        assert (stage.order, stage.metrics, stage.roles) == (100, (), ())
        assert stage.failure_keys("boom", ["a", "b"]) == ["a", "b"] and stage.retry_reason({}) is None
    finally:
        unregister_stage("tiny_test_stage")
    assert "tiny_test_stage" not in stage_names()

    class NotAStage:
        name = "broken"

    with pytest.raises(StageRegistryError, match="missing metrics, build_graph, units, score"):
        register_stage(NotAStage)


def test_a_name_taken_by_another_class_is_refused() -> None:
    class Impostor:
        name = "outline"
        columns: ClassVar[list[tuple[str, str]]] = []

        def build_graph(self): ...
        def units(self, dataset, article, config): ...
        def score(self, unit, output, context): ...
        def texts(self, unit, output): ...

    with pytest.raises(StageRegistryError, match="registered twice"):
        register_stage(Impostor)


@pytest.fixture
def installed_plugin(tmp_path: Path) -> Iterator[Path]:
    """A package 'echo_plugin_pkg' installed the way pip leaves it: the module and a dist-info with entry
    points."""
    (tmp_path / "echo_plugin_pkg.py").write_text(PLUGIN, encoding="utf-8")
    (tmp_path / "broken_plugin_pkg.py").write_text(
        "raise ImportError('needs a missing library')\n", encoding="utf-8"
    )
    dist = tmp_path / "echo_plugin_pkg-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: echo-plugin-pkg\nVersion: 0.1\n", encoding="utf-8"
    )
    (dist / "entry_points.txt").write_text(
        "[ruwikibench.stages]\necho_plugin = "
        "echo_plugin_pkg:EchoStage\nbroken_plugin = broken_plugin_pkg:Stage\n",
        encoding="utf-8",
    )
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("echo_plugin_pkg", "broken_plugin_pkg"):
            sys.modules.pop(name, None)
        unregister_stage("echo_plugin")
        registry._broken.clear()
        registry.discover(refresh=True)


def test_entry_point_stages_are_discovered(installed_plugin: Path) -> None:
    registry.discover(refresh=True)
    stage = get_stage("echo_plugin")
    assert type(defining_stage(stage)).__name__ == "EchoStage"
    assert "echo_plugin" in stage_names()
    compiled = stage.build_graph().compile()
    assert compiled.invoke({"title": "Бородино"}) == {"title": "Бородино"}
    listed = CliRunner().invoke(app, ["stages"], terminal_width=200)
    row = next(line for line in listed.output.splitlines() if "echo_plugin" in line)
    assert "echo_plugin_pkg" in row  # the plug-in's own module, not the adapter's


def test_a_broken_plugin_is_one_line_when_asked_for_and_spares_the_rest(installed_plugin: Path) -> None:
    registry.discover(refresh=True)
    with pytest.raises(StageRegistryError) as error:
        get_stage("broken_plugin")
    message = str(error.value)
    assert "\n" not in message
    assert (
        "broken_plugin_pkg:Stage" in message
        and "echo-plugin-pkg" in message
        and "needs a missing library" in message
    )
    assert get_stage("ranking").name == "ranking"


def test_a_stage_subclass_must_define_the_required_methods() -> None:
    from ruwikibench.plugin import Stage

    class HalfStage(Stage[dict]):
        name = "half_test_stage"
        columns: ClassVar[list[tuple[str, str]]] = []

        def build_graph(self): ...

    with pytest.raises(StageRegistryError, match="missing units, score"):
        register_stage(HalfStage)
    assert "half_test_stage" not in stage_names()
