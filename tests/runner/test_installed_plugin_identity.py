"""An outside plug-in package installed for real (``pip install --target``): a stage and a node override of it
with a declared prompt. Editing a helper the override imports through another module, a helper module of the
same distribution outside its package (found through the distribution's RECORD), a data file the stage reads,
or the override's prompt each gives a new run directory; naming the first one with ``--run-id`` refuses."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Article, Dataset, Section
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.execute import RunOptions, execute
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.registry import register_stage, unregister_stage
from ruwikibench.storage.runspec import read_spec

PYPROJECT = """
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "idplug"
version = "0.3.0"

[tool.setuptools]
packages = ["idplug"]
py-modules = ["idplug_util"]

[tool.setuptools.package-data]
idplug = ["data/*.txt"]
"""

FILES = {
    "pyproject.toml": PYPROJECT,
    "idplug_util.py": "def shout(text):\n    return text.upper()\n",
    "idplug/__init__.py": "",
    "idplug/deep.py": 'SUFFIX = " v1"\n',
    "idplug/middle.py": (
        "from idplug.deep import SUFFIX\nfrom idplug_util import shout\n\n\n"
        "def decorate(text):\n    return shout(text) + SUFFIX\n"
    ),
    "idplug/data/words.txt": "один два\n",
    "idplug/nodes.py": """
from ruwikibench.plugin import uses_prompts

from idplug.middle import decorate


@uses_prompts("idplug_ask.txt")
async def ask(state, runtime):
    prompt = runtime.context.prompts.get("idplug_ask.txt").format(title=state["title"])
    completion = await runtime.context.llm.complete("writer", prompt)
    return {"answer": decorate(completion.text)}
""",
    "idplug/stage.py": """
from pathlib import Path
from typing import Any, ClassVar, TypedDict

from langgraph.graph import END, START, StateGraph

from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import GeneratedText, ScoreRecord, Unit

WORDS = Path(__file__).parent / "data" / "words.txt"


class In(TypedDict):
    title: str


class Out(TypedDict):
    answer: str


class State(In, Out, total=False):
    pass


async def ask(state: State, runtime) -> dict[str, Any]:
    return {"answer": state["title"]}


class IdPlugStage:
    name = "idplug_stage"
    columns: ClassVar[list[tuple[str, str]]] = [("Known words", "known")]

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
        known = set(WORDS.read_text(encoding="utf-8").split())
        words = output["answer"].lower().split()
        return [ScoreRecord(stage=self.name, article=unit.article, item="article",
                            metrics={"known": float(sum(w in known for w in words))})]

    def texts(self, unit, output) -> list[GeneratedText]:
        return []
""",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package built and installed into a folder of its own (the shared environment is not changed)."""
    source, target = tmp_path_factory.mktemp("idplug_src"), tmp_path_factory.mktemp("idplug_site")
    for name, text in FILES.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text, encoding="utf-8")
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index"]
    result = subprocess.run(
        [*command, "--quiet", "--target", str(target), str(source)],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TMPDIR": str(tmp_path_factory.mktemp("idplug_build"))},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (target / "idplug-0.3.0.dist-info" / "RECORD").is_file()
    return target


@pytest.fixture
def installed(site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(site))
    register_stage(importlib.import_module("idplug.stage").IdPlugStage)
    yield site
    unregister_stage("idplug_stage")
    for name in [m for m in sys.modules if m.split(".")[0] in ("idplug", "idplug_util")]:
        sys.modules.pop(name)


def _context(prompts: Path) -> StageContext:
    article = Article(title="Кошка", name="Кошка", root=Section(id="s0", level=1, title="Кошка"))
    config = RunConfig.model_validate(
        {
            "name": "idplug",
            "models": {"writer": {"name": "fake"}},
            "prompts_dir": str(prompts),
            "overrides": {"idplug_stage.ask": "idplug.nodes:ask"},
        }
    )
    return StageContext(
        config=config,
        llm=LLM({"writer": ScriptedChat(lambda messages: "один три")}),
        embedder=None,  # type: ignore[arg-type]
        prompts=PromptLibrary(config.prompts_dir),
        dataset=Dataset(articles=[article], sources=[], snippets=[]),
    )


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, path
    path.write_text(text.replace(old, new), encoding="utf-8")


async def test_each_edit_of_an_installed_plugin_gives_a_new_run_directory(
    installed: Path, tmp_path: Path
) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "idplug_ask.txt").write_text("Опиши: {title}", encoding="utf-8")
    options = RunOptions(stages=["idplug_stage"], out=tmp_path / "runs", progress=False)
    first = await execute(_context(prompts), "mem", options)
    spec = read_spec(first.path)
    override = spec.overrides["idplug_stage.ask"]
    assert (override["distribution"], override["version"]) == ("idplug", "0.3.0")
    assert {"idplug/deep.py", "idplug_util.py", "idplug/data/words.txt"} <= set(override["files"])
    assert override["prompts"] == {"idplug_ask.txt": PromptLibrary(prompts).get("idplug_ask.txt").sha256}
    assert spec.stage_identity is not None
    assert "idplug/data/words.txt" in spec.stage_identity["idplug_stage"]["code"]["files"]
    assert (await execute(_context(prompts), "mem", options)).path == first.path  # unchanged: resumed

    runs = [first.path]
    for path, old, new in [
        (installed / "idplug" / "deep.py", "v1", "v2"),  # nodes -> middle -> deep
        (installed / "idplug_util.py", "upper", "title"),  # another module of the distribution (RECORD)
        (installed / "idplug" / "data" / "words.txt", "два", "три"),  # package data
        (prompts / "idplug_ask.txt", "Опиши", "Расскажи о"),  # the override's declared prompt
    ]:
        _edit(path, old, new)
        runs.append((await execute(_context(prompts), "mem", options)).path)
    assert len(set(runs)) == len(runs), runs

    named = options.model_copy(update={"run_id": first.path.name})
    with pytest.raises(ValueError, match="other code"):
        await execute(_context(prompts), "mem", named)
