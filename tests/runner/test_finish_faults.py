"""A run killed (SIGKILL, through the RUWIKIBENCH_FAULT hook) at each write of its finish phase and run again
ends with the metrics.json of an uninterrupted run, byte for byte: floors.jsonl, baselines.jsonl and the
metrics always match the results on disk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ruwikibench.corpus_builder.store import save_dataset
from ruwikibench.runtime.faults import FAULT_ENV
from tests.cli.small_runs import BenchModel
from tests.fake_openai import StubServer, serving
from tests.graphs.writer_fixture import make_dataset

REPO = Path(__file__).resolve().parents[2]
JOB = Path(__file__).with_name("finish_job.py")
FLAKY = "Сколково"  # while the flag file exists, every request about this article fails (HTTP 503)

POINTS = [
    "after_outputs@4",
    "before_floors",
    "before_baselines",
    "before_stamp",
    "before_spec",
    "before_metrics",
    "before_csv",
    "before_report",
]


class FlakyServer(StubServer):
    """The benchmark's fake model; requests naming :data:`FLAKY` fail while ``flag`` exists."""

    def __init__(self, flag: Path) -> None:
        model = BenchModel()
        super().__init__(answer=lambda body: model(body["messages"]), synthetic_logprobs=False)
        self.flag = flag

    def respond(self, body: dict) -> tuple[int, dict[str, str], dict, float]:
        if self.flag.exists() and FLAKY in body["messages"][-1]["content"]:
            return 503, {}, {"error": {"message": "scripted 503", "type": "server_error"}}, 0.0
        return super().respond(body)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("finish")
    save_dataset(make_dataset(), tmp / "data")
    server = FlakyServer(tmp / "flaky")
    with serving(server):
        endpoint = {"name": "fake", "endpoints": [server.base_url], "max_retries": 0, "timeout": 20}

        def run(out: str, fault: str | None = None, cache: str = "cache") -> subprocess.CompletedProcess[str]:
            config = {
                "name": "finish",
                "models": {"writer": endpoint},
                "cache_dir": str(tmp / cache),
                "ranking": {"query_mode": "generated"},
                "max_concurrency": 2,
            }
            (tmp / f"{cache}.yaml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
            env = {k: v for k, v in os.environ.items() if k != FAULT_ENV}
            env |= {"PYTHONPATH": str(REPO), "RUWIKIBENCH_CACHE": str(tmp / cache)}
            if fault:
                env[FAULT_ENV] = fault
            args = [
                "run",
                "all",
                "--dataset",
                str(tmp / "data"),
                "--config",
                str(tmp / f"{cache}.yaml"),
                "--out",
                str(tmp / out),
                "--run-id",
                "r",
            ]
            return subprocess.run(
                [sys.executable, str(JOB), *args],
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
                check=False,
            )

        clean = run("clean")
        assert clean.returncode == 0, clean.stdout + clean.stderr
        yield tmp, run, (tmp / "clean" / "r" / "metrics.json").read_bytes()


def _killed(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == -signal.SIGKILL, result.stdout + result.stderr


@pytest.mark.parametrize("point", POINTS)
def test_kill_at_a_finish_write_then_resume_gives_the_uninterrupted_metrics(job, point: str) -> None:  # type: ignore[no-untyped-def]
    tmp, run, expected = job
    out = "killed-" + point.replace("@", "-")
    _killed(run(out, point))
    resumed = run(out)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (tmp / out / "r" / "metrics.json").read_bytes() == expected


@pytest.mark.parametrize("point", ["before_floors", "before_baselines", "before_stamp"])
def test_kill_before_floors_of_a_resumed_session_leaves_no_stale_floors(job, point: str) -> None:  # type: ignore[no-untyped-def]
    """A first session finishes with some units failed (floors over part of the items); the second runs the
    rest and is killed before its floors or baselines are rewritten; the third runs no unit and must still
    recompute them."""
    tmp, run, expected = job
    out = "partial-" + point
    (tmp / "flaky").touch()
    try:
        partial = run(
            out, cache=out
        )  # a cache of its own: the clean run's answers must not hide the failures
    finally:
        (tmp / "flaky").unlink()
    assert partial.returncode == 3, partial.stdout + partial.stderr
    assert (tmp / out / "r" / "metrics.json").read_bytes() != expected
    _killed(run(out, point, cache=out))
    resumed = run(out, cache=out)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (tmp / out / "r" / "metrics.json").read_bytes() == expected


def test_report_says_when_metrics_are_stale_for_the_results(job) -> None:  # type: ignore[no-untyped-def]
    """A resumed session killed just before metrics.json is written leaves the previous session's metrics.json
    (fewer items) beside the new results: `report` says so (console and report.md) instead of showing it as
    current; once the run is resumed, it does not."""
    from tests.cli.test_input_errors import cli

    tmp, run, expected = job
    out = "stale-metrics"
    (tmp / "flaky").touch()
    try:
        partial = run(out, cache=out)
    finally:
        (tmp / "flaky").unlink()
    assert partial.returncode == 3, partial.stdout + partial.stderr
    current = cli(tmp, "report", f"{out}/r", "--out", f"{out}-report-partial")
    assert current.returncode == 0 and "warning" not in current.stderr, current.stderr
    _killed(run(out, "before_metrics", cache=out))
    stale = cli(tmp, "report", f"{out}/r", "--out", f"{out}-report")
    assert stale.returncode == 0, stale.stderr
    line = (
        f"warning: {out}/r: metrics.json is not current (the last session stopped before writing metrics.json"
    )
    assert stale.stderr.startswith(line), stale.stderr
    assert "**Stale metrics.**" in (tmp / f"{out}-report" / "report.md").read_text(encoding="utf-8")
    resumed = run(out, cache=out)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (tmp / out / "r" / "metrics.json").read_bytes() == expected
    fresh = cli(tmp, "report", f"{out}/r", "--out", f"{out}-report")
    assert fresh.returncode == 0 and "warning" not in fresh.stderr, fresh.stderr
    assert "Stale" not in (tmp / f"{out}-report" / "report.md").read_text(encoding="utf-8")
    with open(tmp / out / "r" / "results.jsonl", "a", encoding="utf-8") as handle:  # edited after the finish
        handle.write('{"stage": "outline", "article": "x", "item": "x", "metrics": {}}\n')
    edited = cli(tmp, "report", f"{out}/r", "--out", f"{out}-report")
    assert "results.jsonl or outputs.jsonl changed after metrics.json was written" in edited.stderr
