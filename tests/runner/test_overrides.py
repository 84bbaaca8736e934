"""Node and graph overrides from the run config: checked on load (one line naming the key), applied by the
runner, captured in nodes.jsonl, recorded in spec.json, part of the run id, shown in the report's 'differs in'
column."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Article, Dataset, Section
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.reporting.settings import settings_table
from ruwikibench.runner.execute import RunOptions, execute
from ruwikibench.runner.overrides import OverrideError, check_overrides, resolve_overrides
from ruwikibench.stage.context import StageContext
from ruwikibench.storage.rundir import RunDir

from .toy_stage import install  # type: ignore[import-not-found]

install()

NODES = textwrap.dedent(
    """
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    async def shout(state, runtime):
        completion = await runtime.context.llm.complete("writer", "Кричи: " + state["title"])
        return {"answer": state["title"].upper() + " " + completion.text + " VERSION"}

    def needs_more(state, runtime, extra):
        return {}

    not_callable = 42

    class NeedsPool(TypedDict):
        title: str
        pool_size: int

    class Out(TypedDict):
        answer: str

    class Other(TypedDict):
        something: str

    def _graph(input_schema, output_schema):
        graph = StateGraph(NeedsPool, input_schema=input_schema, output_schema=output_schema)
        graph.add_node("n", lambda state: {"answer": "x"})
        graph.add_edge(START, "n")
        graph.add_edge("n", END)
        return graph

    def graph_needing_pool():
        return _graph(NeedsPool, Out)

    def graph_without_answer():
        class In(TypedDict):
            title: str
        return _graph(In, Other)

    def compiled_graph():
        class In(TypedDict):
            title: str
        return _graph(In, Out).compile()
    """
)


@pytest.fixture
def plugin(tmp_path: Path) -> Iterator[str]:
    """A user module on sys.path (a fresh name per test, so edits of its source are imported anew)."""
    name = f"user_nodes_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(NODES, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        yield name
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


def _config(**overrides: str) -> RunConfig:
    return RunConfig(name="toy", models={"writer": {"name": "fake"}}, stages=["toy"], overrides=overrides)


@pytest.mark.parametrize(
    ("key", "target", "message"),
    [
        (
            "toy.ask",
            "no_such_module_xyz:shout",
            ("overrides.toy.ask: cannot import 'no_such_module_xyz': ModuleNotFoundError"),
        ),
        ("toy.ask", "{m}:missing", "overrides.toy.ask: module '{m}' has no attribute 'missing'"),
        ("toy.ask", "{m}", "overrides.toy.ask: '{m}' is not 'package.module:attribute'"),
        (
            "toy.ask",
            "{m}:needs_more",
            (
                "overrides.toy.ask: wrong signature (state, runtime, extra): a node takes "
                "(state) or (state, runtime); extra would never be given"
            ),
        ),
        ("toy.ask", "{m}:not_callable", "overrides.toy.ask: 42 is not callable"),
        ("toy.nope", "{m}:shout", "overrides.toy.nope: the toy graph has no node 'nope' (nodes: ask)"),
        ("nostage.ask", "{m}:shout", "overrides.nostage.ask: unknown stage 'nostage'"),
        (
            "toy",
            "{m}:graph_needing_pool",
            (
                "overrides.toy: input schema NeedsPool requires pool_size, which the toy "
                "stage's input (ToyIn: title) does not give"
            ),
        ),
        (
            "toy",
            "{m}:graph_without_answer",
            ("overrides.toy: output schema Other lacks answer, which the toy stage scores"),
        ),
        (
            "toy",
            "{m}:compiled_graph",
            (
                "overrides.toy: the builder returned CompiledStateGraph, not a StateGraph "
                "(return the uncompiled StateGraph; the runner compiles it)"
            ),
        ),
    ],
)
def test_a_bad_override_is_one_line_naming_the_key(plugin: str, key: str, target: str, message: str) -> None:
    with pytest.raises(OverrideError) as error:
        check_overrides(_config(**{key: target.format(m=plugin)}), "my.yaml")
    text = str(error.value)
    assert "\n" not in text
    assert text.startswith("my.yaml: " + message.format(m=plugin))


def test_good_overrides_resolve_with_the_source_hash(plugin: str, tmp_path: Path) -> None:
    import hashlib

    resolved = resolve_overrides(_config(**{"toy.ask": f"{plugin}:shout"}))
    record = resolved["toy.ask"].record()
    source = tmp_path / f"{plugin}.py"
    sha256 = hashlib.sha256(source.read_bytes()).hexdigest()
    assert record == {
        "kind": "node",
        "target": f"{plugin}:shout",
        "file": str(source),
        "sha256": sha256,
        "files": {source.name: sha256},  # a top-level module: its package is that one file
    }


def _context(config: RunConfig) -> StageContext:
    dataset = Dataset(
        articles=[Article(title="Кошка", name="Кошка", root=Section(id="s0", level=1, title="Кошка"))],
        sources=[],
        snippets=[],
    )
    chat = ScriptedChat(lambda messages: "кошка мяу")
    return StageContext(
        config=config,
        llm=LLM({"writer": chat}),
        embedder=None,  # type: ignore[arg-type]
        prompts=PromptLibrary(),
        dataset=dataset,
    )


async def test_a_node_override_runs_is_captured_recorded_and_told_apart(plugin: str, tmp_path: Path) -> None:
    builtin = await execute(
        _context(_config()), "mem", RunOptions(stages=["toy"], out=tmp_path / "runs", progress=False)
    )
    first = await execute(
        _context(_config(**{"toy.ask": f"{plugin}:shout"})),
        "mem",
        RunOptions(stages=["toy"], out=tmp_path / "runs", progress=False),
    )
    assert first.path != builtin.path
    outputs = list(first.read("outputs.jsonl"))
    assert outputs[0]["output"]["answer"] == "КОШКА кошка мяу VERSION"
    nodes = list(first.read("nodes.jsonl"))
    assert [n["node"] for n in nodes] == ["ask"] and "VERSION" in str(nodes[0])
    spec = first.read_json("spec.json")
    assert (
        spec["overrides"]["toy.ask"]["target"] == f"{plugin}:shout"
        and len(spec["overrides"]["toy.ask"]["sha256"]) == 64
    )
    assert spec["config"]["overrides"] == {"toy.ask": f"{plugin}:shout"}

    # the same import path, other code: another run id, and the report tells the runs apart
    source = tmp_path / f"{plugin}.py"
    source.write_text(NODES.replace("VERSION", "VERSION2"), encoding="utf-8")
    sys.modules.pop(plugin, None)
    second = await execute(
        _context(_config(**{"toy.ask": f"{plugin}:shout"})),
        "mem",
        RunOptions(stages=["toy"], out=tmp_path / "runs", progress=False),
    )
    assert second.path != first.path
    assert next(iter(second.read("outputs.jsonl")))["output"]["answer"].endswith("VERSION2")
    table = settings_table([(p.path.name, {}, RunDir(p.path)) for p in (builtin, first, second)])
    hashes = next(row for row in table.differing if row.key == "override.toy.ask.sha256")
    assert hashes.group == "overrides" and len(set(hashes.values)) == 3
