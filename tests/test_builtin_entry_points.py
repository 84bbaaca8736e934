"""The built-in stages come through the plug-in door: ruwikibench's own ``ruwikibench.stages`` entry points
(pyproject.toml) register them, nothing else does, and the stages so loaded run a benchmark and the writer on
a tiny corpus with the scripted fake chat model."""

from __future__ import annotations

import importlib
import json
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import pytest

from ruwikibench.conf.config import RunConfig
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.execute import RunOptions, execute
from ruwikibench.stage import registry
from ruwikibench.stage.context import StageContext
from tests.cli.small_runs import BenchModel
from tests.graphs.writer_fixture import HashEmbedder, make_dataset

BUILTINS = ("ranking", "outline", "sections", "writer")


def _fresh_registry(monkeypatch, found: list[EntryPoint]) -> list[EntryPoint]:
    """An empty registry whose discovery sees only ``found`` as the entry points; returns the ones it
    loaded."""
    loaded: list[EntryPoint] = []

    class Recorded(EntryPoint):
        def load(self):  # type: ignore[no-untyped-def]
            loaded.append(self)
            return super().load()

    def group(group: str) -> list[EntryPoint]:
        assert group == registry.ENTRY_POINT_GROUP
        return [Recorded(e.name, e.value, e.group) for e in found]

    monkeypatch.setattr(registry, "_stages", {})
    monkeypatch.setattr(registry, "_broken", {})
    monkeypatch.setattr(registry, "_discovered", False)
    monkeypatch.setattr(registry, "entry_points", group)
    return loaded


def _own_entry_points() -> list[EntryPoint]:
    found = [
        e for e in entry_points(group=registry.ENTRY_POINT_GROUP) if e.dist and e.dist.name == "ruwikibench"
    ]
    assert sorted(e.name for e in found) == sorted(BUILTINS), "pip install -e . refreshes the entry points"
    return found


def test_without_the_entry_points_no_builtin_stage_is_registered(monkeypatch) -> None:
    for module in ("ruwikibench.graphs.ranking", "ruwikibench.writer.stage"):
        importlib.import_module(module)  # imported, yet not registered: only entry points register

    _fresh_registry(monkeypatch, [])
    assert registry.known_stages() == {}
    with pytest.raises(registry.StageRegistryError, match="unknown stage 'ranking'.*install ruwikibench"):
        registry.get_stage("ranking")


def test_the_entry_points_register_the_stage_objects_they_name(monkeypatch) -> None:
    own = _own_entry_points()
    loaded = _fresh_registry(monkeypatch, own)
    stages = registry.known_stages()
    assert list(stages) == list(BUILTINS)
    assert sorted(e.name for e in loaded) == sorted(BUILTINS)
    for entry in own:
        assert stages[entry.name] is entry.load()


def _context(dataset, config: RunConfig) -> StageContext:
    chat = ScriptedChat(BenchModel())
    return StageContext(
        config=config,
        llm=LLM({"writer": chat}, max_concurrency=4),
        embedder=HashEmbedder(),  # type: ignore[arg-type]
        prompts=PromptLibrary(),
        dataset=dataset,
    )


def _scored(rundir, stage: str) -> int:
    metrics = json.loads(rundir.file("metrics.json").read_text(encoding="utf-8"))
    return int(metrics[stage]["counts"]["evaluated"])


async def test_the_builtins_so_loaded_run_a_benchmark_and_the_writer(tmp_path: Path, monkeypatch) -> None:
    loaded = _fresh_registry(monkeypatch, _own_entry_points())
    dataset = make_dataset()
    models = {"writer": {"name": "fake"}}
    benchmark = RunConfig.model_validate(
        {
            "name": "ep",
            "models": models,
            "cache_dir": str(tmp_path / "cache"),
            "ranking": {"query_mode": "generated"},
        }
    )
    options = RunOptions(stages=list(BUILTINS[:3]), out=tmp_path / "runs", progress=False, score_in="thread")
    rundir = await execute(_context(dataset, benchmark), "fixture", options)
    assert {name: _scored(rundir, name) > 0 for name in BUILTINS[:3]} == dict.fromkeys(BUILTINS[:3], True)
    assert not list(rundir.read("errors.jsonl"))

    writer = benchmark.with_profile("writer")
    writer_options = RunOptions(stages=["writer"], out=tmp_path / "runs", progress=False, score_in="thread")
    written = await execute(_context(dataset, writer), "fixture", writer_options)
    assert _scored(written, "writer") > 0 and not list(written.read("errors.jsonl"))
    assert sorted(e.name for e in loaded) == sorted(BUILTINS)  # every stage came through its entry point
