"""Exit statuses of `write --batch` through the CLI, against the fake OpenAI-compatible server on 127.0.0.1:
0 when both articles are written, 3 when one article's requests fail and the other's succeed, 1 when the
endpoint refuses every connection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.corpus_builder.store import save_dataset
from tests.cli.test_input_errors import refused_url
from tests.fake_openai import fake_openai_server
from tests.graphs.writer_fixture import TITLE, FakeWriterModel, HashEmbedder, kind, make_dataset

runner = CliRunner()
OTHER = "Python"  # its query-expansion requests fail in the partial run


def failing_query(messages: list[dict[str, str]]) -> bool:
    prompt = messages[-1]["content"]
    return kind(prompt).startswith("query") and OTHER in prompt


def write_batch(tmp: Path, url: str):  # type: ignore[no-untyped-def]
    model = {"name": "fake", "endpoints": [url], "max_retries": 0, "timeout": 10}
    config = {
        "name": "t",
        "models": {r: model for r in ("query", "ranking", "outline", "writer")},
        "writer": {"candidates": 12, "per_section": 3},
        "cache_dir": str(tmp / "cache"),
    }
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return runner.invoke(
        app,
        [
            "write",
            "--batch",
            "--dataset",
            str(tmp / "data"),
            "--config",
            str(path),
            "--article",
            TITLE,
            "--article",
            OTHER,
            "--out",
            str(tmp / "runs"),
            "--run-id",
            "w",
            "--no-citations",
        ],
    )


@pytest.fixture()
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr("ruwikibench.runner.setup.make_embedder", lambda config, *_: HashEmbedder())
    save_dataset(make_dataset(), tmp_path / "data")
    return tmp_path


def written(tmp: Path) -> set[str]:
    lines = (tmp / "runs" / "w" / "outputs.jsonl").read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["article"] for line in lines if json.loads(line)["stage"] == "writer"}


@pytest.mark.parametrize("case", ["ok", "partial"])
def test_write_batch_all_written_or_partial(tmp: Path, case: str) -> None:
    with fake_openai_server(
        FakeWriterModel(make_dataset()), fail_if=failing_query if case == "partial" else None
    ) as url:
        result = write_batch(tmp, url)
    output = " ".join(result.output.split())
    assert "Traceback" not in output
    if case == "ok":
        assert result.exit_code == 0, result.output + repr(result.exception)
        assert written(tmp) == {TITLE, OTHER} and "articles failed" not in output
    else:
        assert result.exit_code == 3, result.output + repr(result.exception)
        assert written(tmp) == {TITLE}
        assert f"error: 1 of 2 articles failed (first: {OTHER}:" in output


def test_write_batch_endpoint_refusing_every_connection(tmp: Path) -> None:
    result = write_batch(tmp, refused_url())
    assert result.exit_code == 1, result.output + repr(result.exception)
    output = " ".join(result.output.split())
    assert "Traceback" not in output and "error: 2 of 2 articles failed" in output
