"""Benchmark runs through the CLI: `run all` against an endpoint that refuses every connection exits 1
although the sections without snippets succeed without it (they make no LLM call); `run sections` with
`sections.oracle_filter` over sections that have no reference text excludes them ('no reference text', counted
in metrics.json) and exits 0."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.corpus_builder.store import save_dataset
from ruwikibench.dataset import Dataset, Paragraph, Section
from tests.cli.small_runs import BenchModel
from tests.cli.test_input_errors import refused_url
from tests.fake_openai import fake_openai_server
from tests.graphs.writer_fixture import TITLE, HashEmbedder, make_dataset

runner = CliRunner()


def config(tmp: Path, url: str, **extra: object) -> Path:
    model = {"name": "fake", "endpoints": [url], "max_retries": 0, "timeout": 10}
    data = {
        "name": "t",
        "models": {"writer": model},
        "cache_dir": str(tmp / "cache"),
        "ranking": {"query_mode": "generated"},
        "max_concurrency": 2,
        **extra,
    }
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture()
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr("ruwikibench.runner.setup.make_embedder", lambda config, *_: HashEmbedder())
    return tmp_path


def test_run_all_endpoint_refusing_every_connection_exits_1(tmp: Path) -> None:
    """Every lead of the fixture cites no source: its sections unit succeeds with no LLM call. Those units do
    not make the run partial: nothing that needed the endpoint succeeded, so the status is 1, not 3 (nor
    0)."""
    save_dataset(make_dataset(), tmp / "data")
    result = runner.invoke(
        app,
        [
            "run",
            "all",
            "--dataset",
            str(tmp / "data"),
            "--config",
            str(config(tmp, refused_url())),
            "--out",
            str(tmp / "runs"),
            "--run-id",
            "r",
        ],
    )
    assert result.exit_code == 1, result.output + repr(result.exception)
    run = tmp / "runs" / "r"
    succeeded = {(o["stage"], o["article"], o["unit"]) for o in lines(run / "outputs.jsonl")}
    calls = {(n["stage"], n["article"], n["unit"]): n.get("llm_calls") for n in lines(run / "nodes.jsonl")}
    assert succeeded and all(o[0] == "sections" and not calls.get(o) for o in succeeded)  # the no-call units
    failed = len(lines(run / "errors.jsonl"))
    output = " ".join(result.output.split())
    assert f"error: {failed} of {failed + len(succeeded)} units failed" in output
    assert "no unit that needed the endpoint succeeded" in output and "Traceback" not in output
    assert gc.isenabled()  # the collector paused for the start-up is on again after the run


def test_bad_input_ends_the_startup_gc_pause(tmp: Path) -> None:
    """A run stopped by bad input before any request (no such dataset) leaves the garbage collector on."""
    result = runner.invoke(
        app,
        [
            "run",
            "all",
            "--dataset",
            str(tmp / "missing"),
            "--config",
            str(config(tmp, refused_url())),
            "--out",
            str(tmp / "runs"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert gc.isenabled()


def without_reference_text(dataset: Dataset) -> Dataset:
    """The target article with two more sections that have no reference text: an H2 whose only paragraph is
    empty but cites a source (so it has snippets for the oracle filter to weigh), and an H2 with no paragraph
    of its own above an H3 that has text."""
    article = next(a for a in dataset.articles if a.title == TITLE)
    footnote = article.references[0].id
    extra = [
        Section(
            id="s8", level=2, title="Пустой абзац", paragraphs=[Paragraph(text=" ", citations=[footnote])]
        ),
        Section(
            id="s9",
            level=2,
            title="Только подразделы",
            children=[
                Section(
                    id="s10",
                    level=3,
                    title="Подраздел",
                    paragraphs=[Paragraph(text="Москва стоит на реке.", citations=[footnote])],
                )
            ],
        ),
    ]
    root = article.root.model_copy(update={"children": [*article.root.children, *extra]})
    articles = [a.model_copy(update={"root": root}) if a is article else a for a in dataset.articles]
    return dataset.model_copy(update={"articles": articles})


def test_oracle_filter_excludes_sections_without_reference_text(tmp: Path) -> None:
    save_dataset(without_reference_text(make_dataset()), tmp / "data")
    with fake_openai_server(BenchModel()) as url:
        path = config(tmp, url, sections={"oracle_filter": 0.0})
        result = runner.invoke(
            app,
            [
                "run",
                "sections",
                "--dataset",
                str(tmp / "data"),
                "--config",
                str(path),
                "--out",
                str(tmp / "runs"),
                "--run-id",
                "r",
            ],
        )
    assert result.exit_code == 0, result.output + repr(result.exception)
    run = tmp / "runs" / "r"
    assert not (run / "errors.jsonl").exists() or not lines(run / "errors.jsonl")
    excluded = {
        r["item"]: r["excluded"]
        for r in lines(run / "results.jsonl")
        if r["article"] == TITLE and r.get("excluded")
    }
    assert excluded == {"s8": "no reference text", "s9": "no reference text", "s0": "no source snippet"}
    outputs = {o["unit"]: o["output"] for o in lines(run / "outputs.jsonl") if o["article"] == TITLE}
    statuses = {unit: [r["status"] for r in output["results"]] for unit, output in outputs.items()}
    assert statuses["s8"] == ["no_reference"] and statuses["s9"] == ["no_reference"]
    assert statuses["s10"] == ["ok"]  # the H3 under the empty H2 has text: filtered and written
    assert (
        outputs["s8"]["results"][0]["snippets_total"] > 0
        and outputs["s10"]["results"][0]["oracle_filter"] == 0.0
    )
    sections = json.loads((run / "metrics.json").read_text(encoding="utf-8"))["sections"]
    assert sections["excluded_reasons"]["no reference text"] == 2
    assert sections["counts"]["failed_units"] == 0


def run_ranking(tmp: Path, url: str, run_id: str) -> Any:
    return runner.invoke(
        app,
        [
            "run",
            "ranking",
            "--dataset",
            str(tmp / "data"),
            "--config",
            str(config(tmp, url)),
            "--out",
            str(tmp / "runs"),
            "--run-id",
            run_id,
            "--score-in",
            "thread",
        ],
    )


@pytest.mark.parametrize(("only_first", "status"), [(False, 1), (True, 3)])
def test_scoring_failures_of_every_unit_exit_1_of_some_units_3(
    tmp: Path, monkeypatch: pytest.MonkeyPatch, only_first: bool, status: int
) -> None:
    """Every unit asked the endpoint and has an output, but its score() raised: no unit succeeded, exit 1.
    When only the units of one article fail to score, the run is partial: exit 3."""
    from ruwikibench.graphs.ranking import RankingStage

    scored = RankingStage.score
    first = make_dataset().articles[0].name

    def score(self: RankingStage, unit: Any, output: Any, context: Any) -> Any:
        if not only_first or unit.article == first:
            raise ValueError("scoring broke")
        return scored(self, unit, output, context)

    monkeypatch.setattr(RankingStage, "score", score)
    save_dataset(make_dataset(), tmp / "data")
    with fake_openai_server(BenchModel()) as url:
        result = run_ranking(tmp, url, "r")
    assert result.exit_code == status, result.output + repr(result.exception)
    run = tmp / "runs" / "r"
    errors = lines(run / "errors.jsonl")
    outputs = lines(run / "outputs.jsonl")
    assert errors and all(e["reason"].startswith("score: ") for e in errors)
    assert len(outputs) == len(make_dataset().articles)  # every unit ran; only its scoring failed
    assert "Traceback" not in result.output
