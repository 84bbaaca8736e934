"""`ruwikibench ranking reference-queries` against a fake OpenAI-compatible server on 127.0.0.1, then a
`run ranking --query-mode reference` that reads the stored queries from the dataset directory."""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.corpus_builder.store import save_dataset
from tests.fake_openai import fake_openai_server
from tests.graphs.writer_fixture import TITLE, FakeWriterModel, HashEmbedder, make_dataset

runner = CliRunner()


class Model(FakeWriterModel):
    """The writer fixture's answers, plus a reference description that names the prompt's article."""

    def __init__(self) -> None:
        super().__init__(make_dataset())
        self.reference_prompts: list[str] = []
        self.reference_answer: str | None = None  # None: a description naming the article

    def __call__(self, messages):
        prompt = messages[-1]["content"]
        if "Разделы статьи:" in prompt or "Sections of the article:" in prompt:
            self.reference_prompts.append(prompt)
            if self.reference_answer is not None:
                return self.reference_answer
            return f"Описание статьи по заголовкам. {prompt.splitlines()[0]}"
        return super().__call__(messages)


@pytest.fixture()
def setup(tmp_path, monkeypatch):
    monkeypatch.setattr("ruwikibench.runner.setup.make_embedder", lambda config, *_: HashEmbedder())
    save_dataset(make_dataset(), tmp_path / "data")
    model = Model()
    with fake_openai_server(model) as url:
        endpoint = {"name": "fake", "endpoints": [url], "max_retries": 0, "timeout": 20}
        config = {
            "name": "t",
            "models": {r: endpoint for r in ("query", "ranking", "reference")},
            "cache_dir": str(tmp_path / "cache"),
        }
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
        yield tmp_path, path, model


def test_reference_queries_are_stored_then_ranked_with(setup) -> None:
    tmp, config, model = setup
    data = str(tmp / "data")
    result = runner.invoke(app, ["ranking", "reference-queries", "--dataset", data, "--config", str(config)])
    assert result.exit_code == 0, result.output + repr(result.exception)
    stored = json.loads((tmp / "data" / "reference_queries.json").read_text(encoding="utf-8"))
    assert stored["model"] == "fake" and set(stored["queries"]) == {a.name for a in make_dataset().articles}
    assert any("ЗОЛОТО история" in p for p in model.reference_prompts)  # the H2 headings reach the prompt
    calls = len(model.reference_prompts)

    again = runner.invoke(app, ["ranking", "reference-queries", "--dataset", data, "--config", str(config)])
    assert again.exit_code == 0 and len(model.reference_prompts) == calls  # resumable: nothing regenerated

    run = runner.invoke(
        app,
        [
            "run",
            "ranking",
            "--dataset",
            data,
            "--config",
            str(config),
            "--article",
            TITLE,
            "--query-mode",
            "reference",
            "--out",
            str(tmp / "runs"),
        ],
    )
    assert run.exit_code == 0, run.output + repr(run.exception)
    rundir = next((tmp / "runs").iterdir())
    spec = json.loads((rundir / "spec.json").read_text(encoding="utf-8"))
    written = tmp / "data" / "reference_queries.json"
    assert spec["reference_queries"] == {
        "path": str(written),
        "model": "fake",
        "sha256": hashlib.sha256(written.read_bytes()).hexdigest(),
    }
    outputs = [
        json.loads(line) for line in (rundir / "outputs.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    queries = [o for o in outputs if o.get("node") == "expand_query" or "query_mode" in json.dumps(o)]
    assert queries and "reference" in json.dumps(queries[0], ensure_ascii=False)


def _run_reference(tmp, config):
    return runner.invoke(
        app,
        [
            "run",
            "ranking",
            "--dataset",
            str(tmp / "data"),
            "--config",
            str(config),
            "--article",
            TITLE,
            "--query-mode",
            "reference",
            "--out",
            str(tmp / "runs"),
        ],
    )


def test_reference_mode_without_stored_queries_writes_them_first(setup) -> None:
    """No reference_queries.json: the run writes the queries of its articles with the reference model (counted
    on the console and in spec.json), then ranks with them; the rerun resumes the same run directory."""
    tmp, config, model = setup
    run = _run_reference(tmp, config)
    assert run.exit_code == 0, run.output + repr(run.exception)
    assert "reference queries: 1 written, 0 failed" in run.output
    written = tmp / "data" / "reference_queries.json"
    stored = json.loads(written.read_text(encoding="utf-8"))
    assert list(stored["queries"]) == [a.name for a in make_dataset().articles if a.title == TITLE]
    assert len(model.reference_prompts) == 2  # the Russian and the English description of the one article
    rundir = next((tmp / "runs").iterdir())
    spec = json.loads((rundir / "spec.json").read_text(encoding="utf-8"))
    assert spec["reference_queries"]["sha256"] == hashlib.sha256(written.read_bytes()).hexdigest()
    assert spec["last_session"]["reference_queries"] == {
        "path": str(written),
        "written": 1,
        "failed": 0,
        "failed_articles": [],
    }
    assert not (rundir / "errors.jsonl").exists() or not (rundir / "errors.jsonl").read_text(encoding="utf-8")
    outputs = (rundir / "outputs.jsonl").read_text(encoding="utf-8")
    assert '"query_mode": "reference"' in outputs and stored["queries"][TITLE]["ru"] in outputs

    again = _run_reference(tmp, config)
    assert again.exit_code == 0 and "reference queries:" not in again.output
    assert len(model.reference_prompts) == 2 and [p.name for p in (tmp / "runs").iterdir()] == [rundir.name]


def test_reference_queries_that_fail_are_counted_and_name_the_fix(setup) -> None:
    tmp, config, model = setup
    model.reference_answer = ""  # the reference model answers nothing: no query for the article
    run = _run_reference(tmp, config)
    assert run.exit_code == 1, run.output
    assert "reference queries: 0 written, 1 failed" in run.output and "first failure: " in run.output
    rundir = next((tmp / "runs").iterdir())
    spec = json.loads((rundir / "spec.json").read_text(encoding="utf-8"))
    assert spec["last_session"]["reference_queries"]["failed_articles"] == [TITLE]
    errors = (rundir / "errors.jsonl").read_text(encoding="utf-8")
    assert "ruwikibench ranking reference-queries" in errors, run.output
