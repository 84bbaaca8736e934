"""spec.json's ``prompts`` (name -> sha256 of every prompt the run served) through the CLI: a rerun with
nothing to do serves no prompt and keeps the prompts the first session wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.corpus_builder.store import save_dataset
from tests.cli.small_runs import BenchModel
from tests.cli.test_run_exit_statuses import config
from tests.fake_openai import fake_openai_server
from tests.graphs.writer_fixture import HashEmbedder, make_dataset

runner = CliRunner()


def run_ranking(tmp: Path, url: str) -> None:
    args = ["run", "ranking", "--dataset", str(tmp / "data"), "--config", str(config(tmp, url))]
    result = runner.invoke(app, [*args, "--out", str(tmp / "runs"), "--run-id", "r", "--score-in", "thread"])
    assert result.exit_code == 0, result.output + repr(result.exception)


def spec(tmp: Path) -> dict:
    return json.loads((tmp / "runs" / "r" / "spec.json").read_text(encoding="utf-8"))


def test_a_rerun_with_nothing_to_do_keeps_the_prompts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ruwikibench.runner.setup.make_embedder", lambda config, *_: HashEmbedder())
    save_dataset(make_dataset(), tmp_path / "data")
    model = BenchModel()
    with fake_openai_server(model) as url:
        run_ranking(tmp_path, url)
        first = spec(tmp_path)
        asked = model.requests
        run_ranking(tmp_path, url)
    assert model.requests == asked  # the rerun had nothing to do
    again = spec(tmp_path)
    assert first["prompts"] and all(len(sha) == 64 for sha in first["prompts"].values())
    assert again["prompts"] == first["prompts"]
    assert again["units"]["run_now"] == 0
