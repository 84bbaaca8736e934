"""``ruwikibench score`` after a plug-in stage's code changed scores with the new code and says so in
spec.json (``scored_with``: the code that scored, what differs); ``stage_identity`` keeps the code that made
the outputs. Scoring again with the outputs' own code drops the note; a run scored with its own code keeps
spec.json as it was."""

from __future__ import annotations

import hashlib
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Article, Dataset, Section
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.execute import RunOptions, execute
from ruwikibench.runner.rescore import rescore
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.registry import register_stage, unregister_stage
from ruwikibench.storage.runspec import read_spec

SOURCE = """
from typing import Any, ClassVar, TypedDict

from langgraph.graph import END, START, StateGraph

from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import GeneratedText, ScoreRecord, Unit

WEIGHT = 1.0


class In(TypedDict):
    title: str


class Out(TypedDict):
    answer: str


class State(In, Out, total=False):
    pass


async def ask(state: State, runtime) -> dict[str, Any]:
    completion = await runtime.context.llm.complete("writer", "Опиши: " + state["title"])
    return {"answer": completion.text}


class ScoredStage:
    name = "scored_plugin"
    columns: ClassVar[list[tuple[str, str]]] = [("Words", "words")]

    def build_graph(self) -> StateGraph:
        graph = StateGraph(State, context_schema=StageContext, input_schema=In, output_schema=Out)
        graph.add_node("ask", ask)
        graph.add_edge(START, "ask")
        graph.add_edge("ask", END)
        return graph

    def units(self, dataset, article, config) -> list[Unit]:
        return [Unit(stage=self.name, article=article.name, unit_id="article",
                     input={"title": article.title})]

    def score(self, unit, output, context) -> list[ScoreRecord]:
        return [ScoreRecord(stage=self.name, article=unit.article, item="article",
                            metrics={"words": WEIGHT * len(output["answer"].split())})]

    def texts(self, unit, output) -> list[GeneratedText]:
        return []
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, Path]]:
    folder = tmp_path / "scored_src"
    folder.mkdir()
    source = folder / "scored_plugin_stage.py"
    source.write_text(SOURCE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    module = importlib.import_module("scored_plugin_stage")
    register_stage(module.ScoredStage)
    yield module, source
    unregister_stage("scored_plugin")
    sys.modules.pop("scored_plugin_stage", None)


def _context() -> StageContext:
    article = Article(title="Кошка", name="Кошка", root=Section(id="s0", level=1, title="Кошка"))
    dataset = Dataset(articles=[article], sources=[], snippets=[])
    return StageContext(
        config=RunConfig.model_validate({"name": "s", "models": {"writer": {"name": "fake"}}}),
        llm=LLM({"writer": ScriptedChat(lambda messages: "два слова")}),
        embedder=None,  # type: ignore[arg-type]
        prompts=PromptLibrary(),
        dataset=dataset,
    )


def _set_weight(module: ModuleType, source: Path, weight: str) -> ModuleType:
    text = source.read_text(encoding="utf-8")
    source.write_text(text.replace(text.split("WEIGHT = ")[1].split("\n")[0], weight, 1), encoding="utf-8")
    module = importlib.reload(module)  # the new code, as a new process would import it
    register_stage(module.ScoredStage)
    return module


def _words(run: Path) -> list[float]:
    from ruwikibench.storage.rundir import RunDir

    return [r["metrics"]["words"] for r in RunDir(run).results()]


async def test_scoring_with_changed_code_records_that_code(
    plugin: tuple[ModuleType, Path], tmp_path: Path
) -> None:
    module, source = plugin
    options = RunOptions(stages=["scored_plugin"], out=tmp_path / "runs", progress=False)
    run = await execute(_context(), "mem", options)
    made_with = hashlib.sha256(source.read_bytes()).hexdigest()
    before = run.file("spec.json").read_bytes()

    rescore(run, _context())  # the same code: spec.json untouched
    assert run.file("spec.json").read_bytes() == before and _words(run.path) == [2.0]

    module = _set_weight(module, source, "10.0")
    rescore(run, _context())
    spec = read_spec(run.path)
    assert _words(run.path) == [20.0]  # scored by the new code
    assert spec.stage_identity is not None
    assert spec.stage_identity["scored_plugin"]["code"]["sha256"] == made_with  # what made the outputs
    assert spec.scored_with is not None and spec.scored_with.changed == ["stage scored_plugin"]
    scored_code = spec.scored_with.stage_identity["scored_plugin"]["code"]
    assert scored_code["sha256"] == hashlib.sha256(source.read_bytes()).hexdigest() != made_with

    _set_weight(module, source, "1.0")  # back to the outputs' own code
    rescore(run, _context())
    assert read_spec(run.path).scored_with is None and _words(run.path) == [2.0]


async def test_a_resumed_run_keeps_the_record_of_a_rescoring(
    plugin: tuple[ModuleType, Path], tmp_path: Path
) -> None:
    module, source = plugin
    options = RunOptions(stages=["scored_plugin"], out=tmp_path / "runs", progress=False)
    run = await execute(_context(), "mem", options)
    module = _set_weight(module, source, "10.0")
    rescore(run, _context())
    module = _set_weight(module, source, "1.0")
    again = await execute(_context(), "mem", options)  # the outputs' code: the same run, nothing to do
    assert again.path == run.path
    scored_with = read_spec(run.path).scored_with
    assert scored_with is not None and scored_with.changed == ["stage scored_plugin"]


async def test_the_score_command_says_when_other_code_scored(
    plugin: tuple[ModuleType, Path], tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from ruwikibench.cli import app
    from ruwikibench.corpus_builder.store import save_dataset

    module, source = plugin
    context = _context()
    assert context.dataset is not None
    save_dataset(context.dataset, tmp_path / "data")
    options = RunOptions(stages=["scored_plugin"], out=tmp_path / "runs", progress=False)
    run = await execute(context, str(tmp_path / "data"), options)
    same = CliRunner().invoke(app, ["score", str(run.path)])
    assert same.exit_code == 0, same.output
    assert "note: scored with other code" not in same.output

    _set_weight(module, source, "10.0")
    changed = CliRunner().invoke(app, ["score", str(run.path)])
    assert changed.exit_code == 0, changed.output
    assert (
        "note: scored with other code than made the outputs (stage scored_plugin); spec.json records it "
        "under scored_with" in " ".join(changed.output.split())
    )
