"""Scoring in a process of its own (runner/score_process.py): the same records and metrics as scoring in the
run's own process, really computed in the child, and every way the child can fail hands scoring back to the
run."""

from __future__ import annotations

import json
import logging
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from ruwikibench.conf.config import RunConfig
from ruwikibench.corpus_builder.store import save_dataset
from ruwikibench.runner import score_process
from ruwikibench.runner.execute import RunOptions, execute
from ruwikibench.runner.score_process import ScoringProcess, WorkerSetup, wanted
from ruwikibench.runner.setup import build_context
from ruwikibench.stage.contract import Stage, Unit
from tests.graphs.writer_fixture import make_dataset
from tests.runner.sample_run import fake_server_process, sample_config

HASH = {"kind": "langchain", "name": "tests.graphs.writer_fixture:HashEmbeddings"}


def _config(url: str, cache: Path) -> RunConfig:
    return sample_config(url, cache, embedder=HASH)


async def _run(url: str, folder: Path, data: Path, score_in: str) -> Path:
    from ruwikibench.corpus_builder.dataset_files import resolve_dataset

    dataset, path = resolve_dataset(str(data), source_texts=False)
    context = build_context(_config(url, folder / "cache"), dataset, path)
    try:
        options = RunOptions(out=folder / "runs", progress=False, score_in=score_in)  # type: ignore[arg-type]
        rundir = (await execute(context, str(path), options)).path
    finally:
        await context.llm.aclose()
    assert len(context.indexes) == 0  # the BM25 index let go once the units were done, before the floors
    return rundir


def _records(rundir: Path, name: str) -> list[str]:
    lines = (rundir / name).read_text(encoding="utf-8").splitlines()
    return sorted(json.dumps(json.loads(line), sort_keys=True) for line in lines)


async def test_the_process_scores_what_the_thread_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_dataset(make_dataset(), tmp_path / "data")
    scored_here: list[str] = []
    checked = Stage.checked_score

    def counting(self: Stage[Any], unit: Unit, output: dict[str, Any], context: Any) -> Any:
        scored_here.append(unit.stage)
        return checked(self, unit, output, context)

    with fake_server_process() as url:
        by_thread = await _run(url, tmp_path / "thread", tmp_path / "data", "thread")
        monkeypatch.setattr(Stage, "checked_score", counting)  # this process only: the child has its own
        by_process = await _run(url, tmp_path / "process", tmp_path / "data", "process")
        import multiprocessing

        spawned = [p for p in multiprocessing.active_children() if p.name.startswith("SpawnProcess")]
        assert (
            not spawned
        )  # the scoring process was told to exit early and waited for at the end (not the endpoint)
    assert scored_here == []  # every unit, its baselines and the floors were scored in the child
    spec = json.loads((by_process / "spec.json").read_text(encoding="utf-8"))
    assert (
        spec["last_session"]["scoring"]["in"] == "process"
    )  # and how many baselines were scored ahead (timing)
    assert isinstance(spec["last_session"]["scoring"]["baselines_scored_ahead"], int)
    for name in (
        "results.jsonl",
        "generated.jsonl",
        "baseline_scores.jsonl",
        "floors.jsonl",
        "baselines.jsonl",
    ):
        assert _records(by_process, name) == _records(by_thread, name), name
        assert _records(by_thread, name), name
    metrics = [json.loads((d / "metrics.json").read_text(encoding="utf-8")) for d in (by_thread, by_process)]
    assert metrics[0] == metrics[1]
    assert set(metrics[0]) == {"format_version", "ranking", "outline", "sections"}


def test_auto_scores_in_a_process_only_when_it_pays(monkeypatch: pytest.MonkeyPatch) -> None:
    data = Path("data")
    monkeypatch.setattr(score_process, "usable_cores", lambda: 2)
    assert wanted("auto", score_process.AUTO_MIN_UNITS, data)
    assert not wanted("auto", score_process.AUTO_MIN_UNITS - 1, data)
    assert not wanted("auto", 10_000, None)  # an in-memory dataset: nothing for the child to load
    assert not wanted("thread", 10_000, data)
    assert wanted("process", 1, data)
    monkeypatch.setattr(score_process, "usable_cores", lambda: 1)
    assert not wanted("auto", 10_000, data)


def _setup(tmp_path: Path, stages: list[str], data: Path | None = None) -> WorkerSetup:
    if data is None:
        data = tmp_path / "data"
        save_dataset(make_dataset(), data)
    return WorkerSetup(_config("http://127.0.0.1:9/v1", tmp_path / "cache"), str(data), stages)


async def test_a_stage_the_child_cannot_build_stays_here(tmp_path: Path) -> None:
    scoring = ScoringProcess(_setup(tmp_path, ["ranking", "registered-at-run-time"]))
    try:
        assert await scoring.scores("ranking")
        assert not await scoring.scores("registered-at-run-time")
    finally:
        scoring.close()


async def test_a_child_that_cannot_start_says_why_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    scoring = ScoringProcess(_setup(tmp_path, ["ranking"], data=tmp_path / "no-such-dataset"))
    with caplog.at_level(logging.WARNING):
        assert not await scoring.scores("ranking")
    assert "the scoring process could not start" in caplog.text and "no-such-dataset" in caplog.text
    assert "Traceback" not in capfd.readouterr().err
    scoring.close()


async def test_a_child_that_dies_hands_scoring_back(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    scoring = ScoringProcess(_setup(tmp_path, ["ranking"]))
    assert await scoring.scores("ranking")
    pool = scoring._pool
    assert pool is not None
    for pid in list(pool._processes):  # type: ignore[attr-defined]  # the pool's children, by pid
        os.kill(pid, signal.SIGKILL)
    unit = Unit(stage="ranking", article="Москва", unit_id="article", input={})
    with caplog.at_level(logging.WARNING):
        assert await scoring.score("ranking", unit, {}, with_baselines=False) is None
    assert "the scoring process ended unexpectedly" in caplog.text
    assert not await scoring.scores("ranking")  # from now on the run scores in its own process
    scoring.close()


def test_the_cli_names_a_bad_score_in_in_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ruwikibench.cli import app

    result = CliRunner().invoke(
        app,
        ["run", "all", "--dataset", str(tmp_path), "--config", str(tmp_path / "c.yaml"), "--score-in", "gpu"],
    )
    assert result.exit_code == 2
    assert "--score-in gpu: one of auto, thread, process" in result.output
    assert "Traceback" not in result.output


def test_the_python_api_names_a_bad_score_in(tmp_path: Path) -> None:
    from ruwikibench import api
    from ruwikibench.conf.config import RunInputError

    with pytest.raises(RunInputError, match="score_in 'gpu': one of auto, thread, process"):
        api.run(str(tmp_path / "c.yaml"), tmp_path, score_in="gpu")


async def test_baselines_that_need_no_output_are_scored_ahead_and_taken_as_they_are(tmp_path: Path) -> None:
    """The run's units handed over at its start: the idle child scores a sections unit's lead and random
    baselines, and the unit's scoring takes them — the same record as scoring them with the unit (here,
    without the child)."""
    import asyncio

    from ruwikibench.aggregation.baselines import unit_baselines
    from ruwikibench.corpus_builder.dataset_files import resolve_dataset
    from ruwikibench.stage.registry import get_stage

    setup = _setup(tmp_path, ["sections"])
    dataset, path = resolve_dataset(setup.dataset_dir, source_texts=False)
    context = build_context(setup.config, dataset, path, with_llm=False)
    stage = get_stage("sections")
    article = next(a for a in dataset.articles if stage.units(dataset, a, setup.config))
    unit = stage.units(dataset, article, setup.config)[0]
    output = next(b for b in stage.baselines if b.name == "lead").build(unit, {}, context)
    scoring = ScoringProcess(setup)
    try:
        assert await scoring.scores("sections")
        scoring.score_ahead({"sections": stage}, [unit])
        await asyncio.sleep(0.1)
        await scoring._call(
            score_process._child_stages
        )  # one worker, first in first out: the ahead job is done
        scored = await scoring.score("sections", unit, output, with_baselines=True)
        changed = Unit(
            stage=unit.stage,
            article=unit.article,
            unit_id=unit.unit_id,
            input={**unit.input, "article": "another title"},
        )
        scoring.score_ahead({"sections": stage}, [changed])  # scored ahead for one input, scored with another
        await asyncio.sleep(0.1)
        await scoring._call(score_process._child_stages)
        other = await scoring.score(
            "sections", Unit(**{**changed.model_dump(), "input": unit.input}), output, True
        )
    finally:
        scoring.close()
    assert scored is not None and scored.ahead == 2 and scoring.scored_ahead == 2
    assert scored.baselines == unit_baselines(stage, unit, output, context)
    assert other is not None and other.ahead == 0 and other.baselines == scored.baselines


def test_the_child_s_blas_holds_one_thread() -> None:
    """In a fresh process (as the spawned child is, numpy not yet loaded) the limit reaches numpy's BLAS."""
    import subprocess
    import sys

    script = (
        "import sys; from ruwikibench.runner.score_process import _leave_a_core_to_the_run; "
        "assert 'numpy' not in sys.modules; _leave_a_core_to_the_run(); "
        "from threadpoolctl import threadpool_info; "
        "print(sorted({i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "4"},
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.stdout.strip() == "[1]"


def test_the_store_of_baselines_scored_ahead_gives_each_back_once_for_its_input() -> None:
    store = score_process.AheadStore()
    store.put(("sections", "A", "s1"), "d1", {"lead": ([{"metrics": {"f1": 0.5}}], {"text": "Первое."})})
    store.put(("sections", "A", "s2"), "d2", {"lead": ([], None)})
    assert len(store) == 2 and ("sections", "A", "s1") in store and ("sections", "A", "s3") not in store
    assert store.take(("sections", "A", "s1"), "d1") == {
        "lead": ([{"metrics": {"f1": 0.5}}], {"text": "Первое."})
    }
    assert store.take(("sections", "A", "s1"), "d1") is None  # taken once
    assert store.take(("sections", "A", "s2"), "another input") is None and len(store) == 0
