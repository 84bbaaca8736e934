"""The Python API (ruwikibench.run / score / report -> Run) on the writer fixture's corpus against the fake
OpenAI-compatible server on 127.0.0.1 (tests/cli/small_runs.py): the same run directory, run id and metrics as
the CLI, flat rows, baselines, re-scoring, a report of two runs, a call inside a running event loop, and bad
input raised as the CLI's one-line errors."""

from __future__ import annotations

import asyncio
import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import ruwikibench
from ruwikibench.conf.config import ConfigError, RunInputError
from tests.cli.small_runs import fake_setup, runner

STAGES = ["ranking", "outline"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The API run (config as a dict), the CLI run of the same config file (another --out), both over two
    stages; the fake endpoint stays up while the module's tests run."""
    from ruwikibench.cli import app

    tmp = tmp_path_factory.mktemp("api")
    with pytest.MonkeyPatch.context() as monkeypatch, fake_setup(tmp, monkeypatch) as (_, configs, _model):
        path = configs[0]
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        data["stages"] = STAGES
        path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
        api_run = ruwikibench.run(data, tmp / "data", out=tmp / "api")
        result = runner.invoke(
            app,
            ["run", "all", "--dataset", str(tmp / "data"), "--config", str(path), "--out", str(tmp / "cli")],
        )
        assert result.exit_code == 0, result.output + repr(result.exception)
        yield {
            "tmp": tmp,
            "config": path,
            "data": data,
            "api": api_run,
            "cli": Path(result.output.split("run directory: ")[1].split()[0]),
        }


def test_run_matches_the_cli(runs: dict[str, Any]) -> None:
    run, cli = runs["api"], runs["cli"]
    assert isinstance(run, ruwikibench.Run)
    assert run.run_id == cli.name and run.path == runs["tmp"] / "api" / cli.name
    written = json.loads((cli / "metrics.json").read_text(encoding="utf-8"))
    assert written.pop("format_version") == 1 and run.metrics == written  # the stages, validated
    assert set(run.metrics) == set(STAGES)
    assert run.exit_status == 0


def test_rows_are_the_metrics_csv(runs: dict[str, Any]) -> None:
    run = runs["api"]
    rows = run.rows()
    assert rows and all(
        set(r) == {"run", "stage", "metric", "view", "mean", "low", "high", "n"} for r in rows
    )
    assert {r["stage"] for r in rows} == set(STAGES)
    with open(run.path / "metrics.csv", newline="", encoding="utf-8") as handle:
        written = list(csv.DictReader(handle))
    assert [(r["stage"], r["metric"], r["view"]) for r in written] == [
        (r["stage"], r["metric"], r["view"]) for r in rows
    ]
    pandas = pytest.importorskip("pandas")
    assert len(pandas.DataFrame(rows)) == len(rows)


def test_baselines_beside_the_run(runs: dict[str, Any]) -> None:
    run = runs["api"]
    rows = run.baselines()
    stages_with = {s for s, d in run.metrics.items() if d.get("baselines")}
    assert stages_with and {r["stage"] for r in rows} == stages_with
    assert all(r["baseline"] in run.metrics[r["stage"]]["baselines"] for r in rows)
    compared = [r for r in rows if r["verdict"] is not None]
    expected = sum(len(run.metrics[s].get("vs_baseline") or {}) for s in stages_with)
    assert len(compared) == expected > 0
    for row in compared:
        versus = run.metrics[row["stage"]]["vs_baseline"][row["metric"]]
        assert (row["baseline"], row["difference"], row["verdict"]) == (
            versus["baseline"],
            versus["difference"]["mean"],
            versus["verdict"],
        )


def test_score_gives_the_same_metrics(runs: dict[str, Any]) -> None:
    run = runs["api"]
    again = ruwikibench.score(run)
    assert again.path == run.path and again.metrics == run.metrics


def test_shards_merge_into_the_run(runs: dict[str, Any]) -> None:
    tmp = runs["tmp"]
    shards = [
        ruwikibench.run(runs["data"], tmp / "data", out=tmp / f"machine{i}", shard=f"{i}/2") for i in (1, 2)
    ]
    assert [s.path.name for s in shards] == [f"{runs['api'].run_id}.shard-{i}-of-2" for i in (1, 2)]
    merged = ruwikibench.merge(shards, into=tmp / "merged")
    assert merged.path == tmp / "merged" / runs["api"].run_id and merged.metrics == runs["api"].metrics
    with pytest.raises(RunInputError, match="shard 1/2 missing"):
        ruwikibench.merge(shards[1:], into=tmp / "merged")


def test_run_inside_a_running_event_loop(runs: dict[str, Any]) -> None:
    """As in Jupyter: run() called from a coroutine on a running loop (here it resumes the finished run)."""

    async def notebook_cell() -> ruwikibench.Run:
        return ruwikibench.run(runs["config"], runs["tmp"] / "data", out=runs["tmp"] / "api")

    run = asyncio.run(notebook_cell())
    assert run.run_id == runs["api"].run_id and run.metrics == runs["api"].metrics


def test_report_of_two_runs(runs: dict[str, Any]) -> None:
    tmp = runs["tmp"]
    config = ruwikibench.load_config(runs["config"])
    other = ruwikibench.run(config, tmp / "data", stages=["ranking"], articles=1, out=tmp / "api")
    assert other.run_id != runs["api"].run_id and set(other.metrics) == {"ranking"}
    path = ruwikibench.report([runs["api"], other.path], tmp / "report")
    assert path == tmp / "report" / "report.md"
    text = path.read_text(encoding="utf-8")
    assert runs["api"].run_id in text and other.run_id in text
    assert (tmp / "report" / "report.html").exists()


@pytest.mark.parametrize(
    ("change", "key"),
    [({"outline": {"mode": "sideways"}}, "outline.mode"), ({"no_such_setting": 1}, "no_such_setting")],
)
def test_a_bad_config_raises_naming_the_key(runs: dict[str, Any], change: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        ruwikibench.run({**runs["data"], **change}, runs["tmp"] / "data", out=runs["tmp"] / "bad")
    assert not (runs["tmp"] / "bad").exists()


def test_bad_input_raises_not_exits(runs: dict[str, Any], tmp_path: Path) -> None:
    tmp = runs["tmp"]
    with pytest.raises(RunInputError, match="stages"):
        ruwikibench.run(runs["data"], tmp / "data", stages=["no_such_stage"], out=tmp_path)
    with pytest.raises(RunInputError, match="no_such_article"):
        ruwikibench.run(runs["data"], tmp / "data", article_names=["no_such_article"], out=tmp_path)
    with pytest.raises(RunInputError):
        ruwikibench.run(runs["data"], tmp_path / "missing", out=tmp_path)
    with pytest.raises(RunInputError):
        ruwikibench.score(tmp_path)
