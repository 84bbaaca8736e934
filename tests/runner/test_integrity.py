"""Run-directory integrity: a resumed run equals an uninterrupted one (kill between outputs and results, torn
last line, duplicate records), two writers at once are refused, report.md lists only errors still open."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ruwikibench.runner.execute import RunOptions, execute
from ruwikibench.storage.rundir import LOCK, RunDir, RunDirLocked, run_lock

from .test_execute import _answer, _context, _dataset  # type: ignore[import-not-found]

TITLES = ["Кошка", "Собака дом", "Рыба"]


def _options(tmp_path: Path) -> RunOptions:
    return RunOptions(stages=["toy"], out=tmp_path, run_id="r", progress=False, retries=0)


def _metrics(rundir: RunDir) -> dict:
    return json.loads(rundir.file("metrics.json").read_text())["toy"]


def _lines(rundir: RunDir, name: str) -> list[dict]:
    return [json.loads(x) for x in rundir.file(name).read_text().splitlines()]


async def _uninterrupted(tmp_path: Path) -> dict:
    context, _ = _context(_dataset(TITLES), _answer)
    return _metrics(
        await execute(context, "mem", RunOptions(stages=["toy"], out=tmp_path / "whole", progress=False))
    )


async def test_killed_between_outputs_and_results_is_scored_on_resume(tmp_path: Path) -> None:
    context, _ = _context(_dataset(TITLES), _answer)
    rundir = await execute(context, "mem", _options(tmp_path))
    # the state a kill -9 leaves between the two appends: the last unit's output, no score, no text
    rundir.rewrite("results.jsonl", _lines(rundir, "results.jsonl")[:-1])
    rundir.rewrite("generated.jsonl", _lines(rundir, "generated.jsonl")[:-1])

    context2, chat2 = _context(_dataset(TITLES), _answer)
    await execute(context2, "mem", _options(tmp_path))
    assert chat2.calls == []  # nothing is run again, the output is scored
    assert len(_lines(rundir, "results.jsonl")) == 3 and len(_lines(rundir, "generated.jsonl")) == 3
    assert rundir.read_json("spec.json")["units"]["scored_on_resume"] == 1
    assert _metrics(rundir) == await _uninterrupted(tmp_path)


async def test_torn_last_output_line_then_reruns_score_each_unit_once(tmp_path: Path) -> None:
    context, _ = _context(_dataset(TITLES), _answer)
    rundir = await execute(context, "mem", _options(tmp_path))
    # killed while writing the last output: half a line, its score never written
    outputs = rundir.file("outputs.jsonl").read_bytes().splitlines(keepends=True)
    rundir.file("outputs.jsonl").write_bytes(b"".join(outputs[:-1]) + outputs[-1][:40])
    rundir.rewrite("results.jsonl", _lines(rundir, "results.jsonl")[:-1])
    for _ in range(3):
        context, _ = _context(_dataset(TITLES), _answer)
        await execute(context, "mem", _options(tmp_path))
    assert len(_lines(rundir, "outputs.jsonl")) == 3  # every line whole, each unit once
    assert len(_lines(rundir, "results.jsonl")) == 3
    assert _metrics(rundir)["counts"]["evaluated"] == 3
    assert _metrics(rundir) == await _uninterrupted(tmp_path)


async def test_duplicate_records_count_once_latest_wins(tmp_path: Path) -> None:
    context, _ = _context(_dataset(TITLES), _answer)
    rundir = await execute(context, "mem", _options(tmp_path))
    first = _lines(rundir, "results.jsonl")[0]
    rundir.append("results.jsonl", first | {"metrics": {"overlap": 0.0}})  # the same item scored again
    rundir.append("outputs.jsonl", _lines(rundir, "outputs.jsonl")[0])
    context2, chat2 = _context(_dataset(TITLES), _answer)
    await execute(context2, "mem", _options(tmp_path))
    metrics = _metrics(rundir)
    assert chat2.calls == [] and metrics["counts"]["evaluated"] == 3
    assert abs(metrics["metrics"]["overlap"]["failures_excluded"]["mean"] - 2 / 3) < 1e-9


async def test_report_lists_only_errors_a_resume_did_not_fix(tmp_path: Path) -> None:
    failing = {"Рыба"}

    def flaky(messages) -> str:
        title = messages[-1]["content"].split(": ", 1)[1]
        return "" if title in failing else f"{title} это статья"

    context, _ = _context(_dataset(TITLES), flaky)
    rundir = await execute(context, "mem", _options(tmp_path))
    report = rundir.file("report.md").read_text()
    assert "## Errors" in report and "toy / Рыба / article: EmptyAnswer: model" in report
    assert _metrics(rundir)["counts"]["failed_units"] == 1

    failing.clear()
    context2, _ = _context(_dataset(TITLES), flaky)
    await execute(context2, "mem", _options(tmp_path))
    assert "## Errors" not in rundir.file("report.md").read_text()
    assert len(_lines(rundir, "errors.jsonl")) == 1  # the history stays in errors.jsonl
    assert _metrics(rundir)["counts"]["failed_units"] == 0


HOLD = """
import sys, time
from ruwikibench.storage.rundir import run_lock
with run_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


async def test_second_writer_is_refused_naming_the_holder_pid(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    holder = subprocess.Popen(  # noqa: ASYNC220 - a second process holding the lock
        [sys.executable, "-c", HOLD, str(tmp_path / "r")], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        context, chat = _context(_dataset(TITLES), _answer)
        with pytest.raises(RunDirLocked, match=f"in use by process {holder.pid} \\(run.lock\\)"):
            await execute(context, "mem", _options(tmp_path))
        assert chat.calls == [] and not (tmp_path / "r" / "outputs.jsonl").exists()
    finally:
        holder.kill()
        holder.wait()
    # the holder died without releasing: its lock is taken over
    assert (tmp_path / "r" / LOCK).read_text().strip() == str(holder.pid)
    context, _ = _context(_dataset(TITLES), _answer)
    rundir = await execute(context, "mem", _options(tmp_path))
    assert _metrics(rundir)["counts"]["evaluated"] == 3


def test_lock_within_one_process_and_release(tmp_path: Path) -> None:
    with run_lock(tmp_path), pytest.raises(RunDirLocked, match=str(os.getpid())), run_lock(tmp_path):
        pass
    started = time.perf_counter()
    with run_lock(tmp_path):
        pass
    assert time.perf_counter() - started < 1
