"""`ruwikibench write` end to end against a fake OpenAI-compatible server on 127.0.0.1: stop after the
outline, edit the outline file, resume; a user outline; the batch mode; argument errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.corpus_builder.store import save_dataset
from tests.fake_openai import fake_openai_server
from tests.graphs.writer_fixture import TITLE, FakeWriterModel, HashEmbedder, kind, make_dataset

runner = CliRunner()


class Recorder:
    def __init__(self) -> None:
        self.model = FakeWriterModel(make_dataset())
        self.kinds: list[str] = []

    def __call__(self, messages):
        self.kinds.append(kind(messages[-1]["content"]))
        return self.model(messages)


@pytest.fixture()
def setup(tmp_path, monkeypatch):
    """A processed dataset, a config pointing every role at the fake server, a hash embedder (fast)."""
    monkeypatch.setattr("ruwikibench.runner.setup.make_embedder", lambda config, *_: HashEmbedder())
    save_dataset(make_dataset(), tmp_path / "data")
    recorder = Recorder()
    with fake_openai_server(recorder) as url:
        model = {"name": "fake", "endpoints": [url], "max_retries": 0, "timeout": 20}
        config = {
            "name": "t",
            "models": {r: model for r in ("query", "ranking", "outline", "writer")},
            "writer": {"candidates": 12, "per_section": 3},
            "cache_dir": str(tmp_path / "cache"),
        }
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
        yield tmp_path, path, recorder


def invoke(*args: str):
    result = runner.invoke(app, ["write", *args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def test_stop_edit_resume(setup) -> None:
    tmp, config, recorder = setup
    out = tmp / "moscow"
    common = ["--dataset", str(tmp / "data"), "--config", str(config), "--out", str(out)]
    result = invoke(TITLE, *common, "--stop-after-outline")
    assert "outline written to" in result.output and "write_section" not in recorder.kinds
    outline = out / "outline.md"
    assert "## История" in outline.read_text(encoding="utf-8")
    edited = tmp / "edited.md"
    edited.write_text("# Москва\n## Экономика города\n## История\n", encoding="utf-8")
    before = len(recorder.kinds)
    result = invoke("--resume", *common, "--outline", str(edited))
    assert "2 sections with text" in result.output
    new = recorder.kinds[before:]
    assert new.count("write_section") == 2 and "relevance" not in new and "merge" not in new
    md = (out / "article.md").read_text(encoding="utf-8")
    assert md.startswith("# Москва\n") and "## Экономика города" in md and "## Источники" in md
    data = json.loads((out / "article.json").read_text(encoding="utf-8"))
    session = data["session"]
    assert session["status"] == "done" and session["llm_calls"] - session["cache_hits"] == len(recorder.kinds)
    assert any(r["node"] == "rerank" for r in data["trace"])


def test_user_outline(setup) -> None:
    tmp, config, recorder = setup
    mine = tmp / "mine.md"
    mine.write_text("## География\n## Экономика\n", encoding="utf-8")
    invoke(
        TITLE,
        "--dataset",
        str(tmp / "data"),
        "--config",
        str(config),
        "--out",
        str(tmp / "o"),
        "--outline",
        str(mine),
    )
    assert "merge" not in recorder.kinds and recorder.kinds.count("write_section") == 2
    assert (tmp / "o" / "article.html").exists()


def test_batch(setup) -> None:
    tmp, config, _ = setup
    result = invoke(
        "--batch",
        "--dataset",
        str(tmp / "data"),
        "--config",
        str(config),
        "--article",
        TITLE,
        "--out",
        str(tmp / "runs"),
        "--run-id",
        "w",
    )
    assert "outline — writer mode" in result.output and "writer — whole article" in result.output
    # the writer's no-LLM baseline, with its verdicts in every table
    for line in ("outline: Mean F1", "sections: Mean ROUGE-L", "writer: Article ROUGE-L"):
        assert f"{line}: the run − best baseline (extractive)" in result.output
    metrics = json.loads((tmp / "runs" / "w" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["outline"]["counts"]["evaluated"] == 1 and metrics["writer"]["counts"]["failed_units"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch", "T"], "--batch takes no TITLE"),
        ([], "give a TITLE"),
        (["T", "--stop-after-outline", "--resume"], "--stop-after-outline starts a session"),
    ],
)
def test_argument_errors(setup, args: list[str], message: str) -> None:
    tmp, config, _ = setup
    result = runner.invoke(app, ["write", *args, "--dataset", str(tmp / "data"), "--config", str(config)])
    assert result.exit_code != 0 and message in result.output


def test_resume_without_session_is_a_clear_error(setup) -> None:
    tmp, config, _ = setup
    result = runner.invoke(
        app,
        [
            "write",
            "--resume",
            "--out",
            str(tmp / "nothing"),
            "--dataset",
            str(tmp / "data"),
            "--config",
            str(config),
        ],
    )
    assert result.exit_code == 2 and "no writer session here" in result.output


def test_missing_config_is_a_clear_error(tmp_path: Path) -> None:
    save_dataset(make_dataset(), tmp_path / "data")
    result = runner.invoke(
        app, ["write", "T", "--dataset", str(tmp_path / "data"), "--config", str(tmp_path / "none.yaml")]
    )
    assert result.exit_code == 2 and "config file not found" in result.output
