"""Code identity covers a plug-in's whole top-level package: a helper the stage imports through another
module, a data file it reads, a node override's helper and the prompt files an override declares
(``uses_prompts``) each change the run id when edited; caches and VCS folders do not; ``--run-id`` over
changed code refuses."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from ruwikibench.conf.config import RunConfig, prompt_slot
from ruwikibench.dataset import Article, Dataset, Section
from ruwikibench.runner.execute import RunOptions, build_spec, run_id_for
from ruwikibench.runner.overrides import OverrideError, check_overrides
from ruwikibench.runner.package_files import folder_files
from ruwikibench.runner.same_run import check_same_specs
from ruwikibench.stage.prompt_use import declared_prompts, uses_prompts
from ruwikibench.stage.registry import register_stage, unregister_stage
from ruwikibench.storage.rundir import RunDir
from ruwikibench.storage.runspec import parse_spec

PACKAGE = "idpkg_local"

FILES = {
    "__init__.py": "",
    "stage.py": """
from pathlib import Path
from typing import Any, ClassVar, TypedDict

from langgraph.graph import END, START, StateGraph

from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import GeneratedText, ScoreRecord, Unit

from idpkg_local.middle import decorate

WORDS = Path(__file__).parent / "data" / "words.txt"


class In(TypedDict):
    title: str


class Out(TypedDict):
    answer: str


class State(In, Out, total=False):
    pass


async def ask(state: State, runtime) -> dict[str, Any]:
    return {"answer": decorate(state["title"]) + WORDS.read_text(encoding="utf-8")}


class IdStage:
    name = "idpkg_stage"
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
                            metrics={"words": float(len(output["answer"].split()))})]

    def texts(self, unit, output) -> list[GeneratedText]:
        return []
""",
    "middle.py": "from idpkg_local.deep import SUFFIX\n\n\ndef decorate(text):\n    return text + SUFFIX\n",
    "deep.py": 'SUFFIX = " v1"\n',
    "data/words.txt": "один два\n",
    "nodes.py": """
from idpkg_local.deep import SUFFIX


async def ask(state, runtime):
    return {"answer": state["title"] + SUFFIX}
""",
}


def _dataset() -> Dataset:
    article = Article(title="Кошка", name="Кошка", root=Section(id="s0", level=1, title="Кошка"))
    return Dataset(articles=[article], sources=[], snippets=[])


def _config(**extra: object) -> RunConfig:
    return RunConfig.model_validate({"name": "p", "models": {"writer": {"name": "fake"}}, **extra})


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The package in a folder on sys.path (not installed), its stage registered; yields the package
    folder."""
    root = tmp_path / "src" / PACKAGE
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(root.parent))
    register_stage(importlib.import_module(f"{PACKAGE}.stage").IdStage)
    yield root
    unregister_stage("idpkg_stage")
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        sys.modules.pop(name)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_every_file_of_the_stage_package_is_in_the_run_id_and_spec(package: Path) -> None:
    options, dataset = RunOptions(stages=["idpkg_stage"]), _dataset()
    ids = [run_id_for(_config(), dataset, options)]
    spec = build_spec(ids[0], _config(), dataset, "d", options)
    files = spec["stage_identity"]["idpkg_stage"]["code"]["files"]
    assert sorted(files) == [f"{PACKAGE}/{name}" for name in sorted(FILES)]
    for step in [
        lambda: _edit(package / "deep.py", "v1", "v2"),  # imported by middle.py, which stage.py imports
        lambda: _edit(package / "data" / "words.txt", "два", "три"),  # a data file
        lambda: (package / "extra.py").write_text("X = 1\n", encoding="utf-8"),  # a new module
    ]:
        step()
        ids.append(run_id_for(_config(), dataset, options))
    assert len(set(ids)) == len(ids), ids
    for cache in ["__pycache__/deep.cpython-311.pyc", ".git/HEAD", ".mypy_cache/x.json", "deep.py~"]:
        (package / cache).parent.mkdir(exist_ok=True)
        (package / cache).write_text("cache", encoding="utf-8")
    assert run_id_for(_config(), dataset, options) == ids[-1]


def test_a_single_module_plugin_keeps_its_run_id_key() -> None:
    """A plug-in made of one file hashes [qualname, sha256, …] as before: no ``files`` part is added."""
    from ruwikibench.runner.identity import files_key

    assert files_key({"sha256": "a", "files": {"mod.py": "a"}}) is None
    assert files_key({"sha256": "a", "files": {"mod.py": "a", "mod_helper.py": "b"}}) == [
        ["mod.py", "a"],
        ["mod_helper.py", "b"],
    ]


def test_a_namespace_folder_gives_its_modules_not_other_files(tmp_path: Path) -> None:
    """Below a folder without __init__.py only modules count (run outputs kept there change nothing); below a
    regular package every file does."""
    root = tmp_path / "ns"
    for name in ["a.py", "runs/r1/outputs.jsonl", "pkg/__init__.py", "pkg/prompts/p.txt", "notes.txt"]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x", encoding="utf-8")
    assert sorted(folder_files(root, tmp_path)) == [
        "ns/a.py",
        "ns/pkg/__init__.py",
        "ns/pkg/prompts/p.txt",
    ]


def test_an_edit_to_an_override_helper_changes_the_run_id_and_refuses_resume(package: Path) -> None:
    config = _config(overrides={"outline.describe": f"{PACKAGE}.nodes:ask"})
    options, dataset = RunOptions(stages=["outline"]), _dataset()
    first = run_id_for(config, dataset, options)
    old = parse_spec(build_spec(first, config, dataset, "d", options))
    assert old.overrides["outline.describe"]["files"][f"{PACKAGE}/deep.py"]
    _edit(package / "deep.py", "v1", "v2")
    assert run_id_for(config, dataset, options) != first
    now = parse_spec(build_spec(first, config, dataset, "d", options))
    with pytest.raises(ValueError, match="override outline.describe changed"):
        check_same_specs(RunDir(package / "run"), old, now)


class DescribePrompts(BaseModel):
    describe: str = prompt_slot("id_describe.txt", "title", "texts")


def _declaring_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, declared: str) -> str:
    folder = tmp_path / "decl_src"
    folder.mkdir(exist_ok=True)
    name = f"decl_override_{abs(hash(declared)) % 10**8}"
    (folder / f"{name}.py").write_text(
        "from pydantic import BaseModel\n"
        "from ruwikibench.plugin import prompt_slot, uses_prompts\n\n"
        "class DescribePrompts(BaseModel):\n"
        '    describe: str = prompt_slot("id_describe.txt", "title", "texts")\n\n'
        f"@uses_prompts({declared})\n"
        "async def describe(state, runtime):\n    return {}\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(folder))
    return name


def test_declared_prompts_are_checked_at_load_and_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    module = _declaring_module(tmp_path, monkeypatch, 'DescribePrompts, "id_footer.txt"')
    config = _config(prompts_dir=str(prompts), overrides={"outline.describe": f"{module}:describe"})
    with pytest.raises(OverrideError) as missing:
        check_overrides(config, "my.yaml")
    assert "\n" not in str(missing.value)
    assert str(missing.value).startswith(
        "my.yaml: overrides.outline.describe: declared prompt file 'id_describe.txt'"
    )

    (prompts / "id_describe.txt").write_text("{title}: {texts} {nope}", encoding="utf-8")
    (prompts / "id_footer.txt").write_text("конец", encoding="utf-8")
    with pytest.raises(
        OverrideError,
        match=r"overrides.outline.describe: prompt file .*id_describe.txt: "
        r"unknown field\(s\) \{nope\}; this prompt is given \{texts\}, \{title\}",
    ):
        check_overrides(config, "my.yaml")

    (prompts / "id_describe.txt").write_text("{title}: {texts}", encoding="utf-8")
    record = check_overrides(config)["outline.describe"].record()
    assert sorted(record["prompts"]) == ["id_describe.txt", "id_footer.txt"]
    options, dataset = RunOptions(stages=["outline"]), _dataset()
    first = run_id_for(config, dataset, options)
    (prompts / "id_footer.txt").write_text("конец статьи", encoding="utf-8")  # a bare declared name
    second = run_id_for(config, dataset, options)
    _edit(prompts / "id_describe.txt", "{title}:", "{title} —")  # a slot's file
    assert len({first, second, run_id_for(config, dataset, options)}) == 3


def test_uses_prompts_keeps_the_function_and_refuses_other_declarations() -> None:
    async def node(state: dict) -> dict:
        return {}

    assert uses_prompts("a.txt")(node) is node
    assert [p.name for p in declared_prompts(uses_prompts(DescribePrompts)(node))] == [
        "a.txt",
        "id_describe.txt",
    ]
    assert declared_prompts(uses_prompts(DescribePrompts)(node))[1].fields == ("title", "texts")
    with pytest.raises(TypeError, match="neither a prompt file name nor a pydantic model"):
        uses_prompts(42)  # type: ignore[arg-type]


def test_distribution_files_come_from_its_record_only(tmp_path: Path) -> None:
    """RECORD entries count except metadata, scripts installed elsewhere, an editable install's finder and
    caches; an egg-info without RECORD (SOURCES.txt lists source paths, not installed files) gives none."""
    from importlib.metadata import PathDistribution

    from ruwikibench.runner.package_files import distribution_files

    legacy = tmp_path / "old.egg-info"
    legacy.mkdir()
    (legacy / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: old\nVersion: 1\n", encoding="utf-8")
    (legacy / "SOURCES.txt").write_text("old/__init__.py\nsetup.py\n", encoding="utf-8")
    assert distribution_files(PathDistribution(legacy)) == {}

    info = tmp_path / "new-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: new\nVersion: 1.0\n", encoding="utf-8")
    entries = [
        "new/__init__.py",
        "new/data/words.txt",
        "new_util.py",
        "new/__pycache__/__init__.cpython-311.pyc",
        "new-1.0.dist-info/RECORD",
        "../../bin/new-cli",
        "__editable___new_1_0_finder.py",
        "__editable__.new-1.0.pth",
    ]
    (info / "RECORD").write_text("".join(f"{e},,\n" for e in entries), encoding="utf-8")
    assert distribution_files(PathDistribution(info)) == {
        name: tmp_path / name for name in ["new/__init__.py", "new/data/words.txt", "new_util.py"]
    }
