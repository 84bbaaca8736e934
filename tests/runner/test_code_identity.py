"""Code identity: plug-in stages and overrides enter the run id and spec.json by the sha256 of the file that
defines them (a re-exported function by its defining module), so an edit never reuses stale outputs; built-in
stages keep the run ids they had."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Article, Dataset, Section
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.execute import RunOptions, build_spec, execute, run_id_for
from ruwikibench.runner.identity import code_identity, is_builtin, stages_identity
from ruwikibench.runner.overrides import check_overrides
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.registry import get_stage, register_stage, stage_names, unregister_stage

STAGE_SOURCE = """
from typing import Any, ClassVar, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import GeneratedText, ScoreRecord, Unit

VERSION = "v1"


class In(TypedDict):
    title: str


class Out(TypedDict):
    answer: str


class State(In, Out, total=False):
    pass


async def ask(state: State, runtime: Runtime[StageContext]) -> dict[str, Any]:
    completion = await runtime.context.llm.complete("writer", "Опиши: " + state["title"])
    return {"answer": completion.text + " " + VERSION}


class EchoStage:
    name = "echo_plugin"
    columns: ClassVar[list[tuple[str, str]]] = [("Words", "words")]
    prompt_files = ("PROMPT",)

    def build_graph(self) -> StateGraph:
        graph = StateGraph(State, context_schema=StageContext, input_schema=In, output_schema=Out)
        graph.add_node("ask", ask)
        graph.add_edge(START, "ask")
        graph.add_edge("ask", END)
        return graph

    def units(self, dataset, article, config) -> list[Unit]:
        return [Unit(stage=self.name, article=article.name, unit_id="article", input={"title": \
article.title})]

    def score(self, unit, output, context) -> list[ScoreRecord]:
        return [ScoreRecord(stage=self.name, article=unit.article, item="article",
                            metrics={"words": float(len(output["answer"].split()))})]

    def texts(self, unit, output) -> list[GeneratedText]:
        return []
"""


def _dataset() -> Dataset:
    article = Article(title="Кошка", name="Кошка", root=Section(id="s0", level=1, title="Кошка"))
    return Dataset(articles=[article], sources=[], snippets=[])


def _config(**extra: object) -> RunConfig:
    return RunConfig.model_validate({"name": "p", "models": {"writer": {"name": "fake"}}, **extra})


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, Path, Path]]:
    """A plug-in stage in its own file outside the package, with a prompt file it declares; registered."""
    folder = tmp_path / "plugin_src"
    folder.mkdir()
    prompt = folder / "prompt.txt"
    prompt.write_text("Опиши: {title}", encoding="utf-8")
    source = folder / "echo_plugin_stage.py"
    source.write_text(STAGE_SOURCE.replace("PROMPT", str(prompt)), encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    module = importlib.import_module("echo_plugin_stage")
    register_stage(module.EchoStage)
    yield module, source, prompt
    unregister_stage("echo_plugin")
    sys.modules.pop("echo_plugin_stage", None)


def _edit(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


def test_builtin_stages_have_no_code_identity_and_keep_their_run_ids() -> None:
    """The pinned ids of tests/runner/test_run_id.py hold; here: no built-in stage adds anything to the id."""
    builtin = [get_stage(name) for name in stage_names() if is_builtin(get_stage(name))]
    assert {"ranking", "outline", "sections", "writer"} <= {s.name for s in builtin}
    assert stages_identity(builtin, _config()) == {}
    spec = build_spec("r", _config(), _dataset(), "d", RunOptions())
    assert "stage_identity" not in spec


def test_an_older_plugin_stage_seen_through_the_adapter_keeps_its_own_code_identity(
    plugin: tuple[ModuleType, Path, Path],
) -> None:
    """A plug-in object without the Stage base class is registered wrapped in AdaptedStage: its identity is
    still the plug-in's class and file, never the adapter's (which would make it look built in)."""
    from ruwikibench.stage.contract import AdaptedStage

    _, source, _ = plugin
    stage = get_stage("echo_plugin")
    assert isinstance(stage, AdaptedStage) and not is_builtin(stage)
    identity = code_identity(stage)
    assert identity.qualname == "echo_plugin_stage.EchoStage" and identity.file == str(source)


def test_editing_a_plugin_stage_changes_the_run_id(plugin: tuple[ModuleType, Path, Path]) -> None:
    _, source, prompt = plugin
    options, dataset = RunOptions(stages=["echo_plugin"]), _dataset()
    first = run_id_for(_config(), dataset, options)
    spec = build_spec(first, _config(), dataset, "d", options)
    code = spec["stage_identity"]["echo_plugin"]["code"]
    assert code["file"] == str(source) and code["qualname"] == "echo_plugin_stage.EchoStage"
    assert code["distribution"] is None  # imported from a folder, not an installed distribution
    assert spec["stage_identity"]["echo_plugin"]["prompts"] == {
        str(prompt): PromptLibrary().get(str(prompt)).sha256
    }
    assert run_id_for(_config(), dataset, options) == first  # deterministic
    _edit(source, 'VERSION = "v1"', 'VERSION = "v2"')
    second = run_id_for(_config(), dataset, options)
    assert second != first
    _edit(prompt, "Опиши", "Расскажи о")  # the prompt file it declares
    assert run_id_for(_config(), dataset, options) not in {first, second}


def test_a_reexported_override_is_hashed_by_its_defining_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "reexport_src"
    (folder / "reexport_pkg").mkdir(parents=True)
    (folder / "reexport_pkg" / "__init__.py").write_text("", encoding="utf-8")
    defining = folder / "reexport_pkg" / "impl.py"
    defining.write_text(
        textwrap.dedent("""
        def describe(state):
            return {"descriptions": []}
    """),
        encoding="utf-8",
    )
    (folder / "reexport_pkg" / "api.py").write_text(
        "from reexport_pkg.impl import describe  # noqa: F401\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(folder))
    config = _config(overrides={"outline.describe": "reexport_pkg.api:describe"})
    options, dataset = RunOptions(stages=["outline"]), _dataset()
    record = check_overrides(config)["outline.describe"].record()
    assert record["file"] == str(defining)  # not api.py, the module the config names
    first = run_id_for(config, dataset, options)
    _edit(defining, "return {", "return  {")
    assert run_id_for(config, dataset, options) != first
    assert check_overrides(config)["outline.describe"].record()["sha256"] != record["sha256"]
    for name in ("reexport_pkg.api", "reexport_pkg.impl", "reexport_pkg"):
        sys.modules.pop(name, None)


def test_an_override_defined_where_the_config_points_keeps_its_old_run_id_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs with overrides made before: [import path, sha256 of the module's file] is still what is hashed."""
    import hashlib

    from ruwikibench.runner.overrides import fingerprint

    folder = tmp_path / "plain_src"
    folder.mkdir()
    (folder / "plain_override.py").write_text("def describe(state):\n    return {}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    config = _config(overrides={"outline.describe": "plain_override:describe"})
    sha = hashlib.sha256((folder / "plain_override.py").read_bytes()).hexdigest()
    assert fingerprint(check_overrides(config)) == json.dumps(
        {"outline.describe": ["plain_override:describe", sha]}, sort_keys=True
    )
    sys.modules.pop("plain_override", None)


def test_code_identity_unwraps_decorators_and_instances(plugin: tuple[ModuleType, Path, Path]) -> None:
    import functools

    module, source, _ = plugin

    @functools.wraps(module.ask)
    def wrapped(*args: object) -> object:
        return module.ask(*args)

    assert code_identity(wrapped).file == str(source)
    assert code_identity(module.EchoStage()).qualname == "echo_plugin_stage.EchoStage"


def _context(dataset: Dataset) -> tuple[StageContext, ScriptedChat]:
    chat = ScriptedChat(lambda messages: "ответ")
    return StageContext(
        config=_config(),
        llm=LLM({"writer": chat}),
        embedder=None,  # type: ignore[arg-type]
        prompts=PromptLibrary(),
        dataset=dataset,
    ), chat


async def test_a_rerun_after_an_edit_does_not_reuse_stale_outputs(
    plugin: tuple[ModuleType, Path, Path], tmp_path: Path
) -> None:
    module, source, _ = plugin
    dataset, out = _dataset(), tmp_path / "runs"
    options = RunOptions(stages=["echo_plugin"], out=out, progress=False)
    first = await execute(_context(dataset)[0], "mem", options)
    assert [o["output"]["answer"] for o in first.outputs()] == ["ответ v1"]

    _edit(source, 'VERSION = "v1"', 'VERSION = "v2"')
    register_stage(importlib.reload(module).EchoStage)  # the new code, as a new process would import it
    second = await execute(_context(dataset)[0], "mem", options)
    assert second.path != first.path
    assert [o["output"]["answer"] for o in second.outputs()] == ["ответ v2"]

    named = options.model_copy(update={"run_id": first.path.name})  # the old directory named explicitly
    with pytest.raises(ValueError, match="other code"):
        await execute(_context(dataset)[0], "mem", named)
    assert [o["output"]["answer"] for o in first.outputs()] == ["ответ v1"]
