"""An external system in one `ruwikibench report` table with a native run (fake OpenAI-compatible model)."""

from __future__ import annotations

import csv

import pytest
import yaml
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.corpus_builder.store import save_dataset
from ruwikibench.reporting.tables import BASELINE_PREFIX
from tests.cli.small_runs import BenchModel
from tests.external.conftest import write_jsonl
from tests.external.storm_fixture import make_storm_dir
from tests.fake_openai import fake_openai_server
from tests.graphs.writer_fixture import HashEmbedder, make_dataset

runner = CliRunner()


@pytest.fixture()
def native(tmp_path, monkeypatch):
    monkeypatch.setattr("ruwikibench.runner.setup.make_embedder", lambda config, *_: HashEmbedder())
    save_dataset(make_dataset(), tmp_path / "data")
    with fake_openai_server(BenchModel()) as url:
        endpoint = {"name": "fake", "endpoints": [url], "max_retries": 0, "timeout": 20}
        config = {
            "name": "native",
            "models": {"writer": endpoint},
            "cache_dir": str(tmp_path / "cache"),
            "stages": ["outline", "sections"],
            "max_concurrency": 2,
        }
        path = tmp_path / "native.yaml"
        path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
        result = runner.invoke(
            app,
            [
                "run",
                "all",
                "--dataset",
                str(tmp_path / "data"),
                "--config",
                str(path),
                "--out",
                str(tmp_path / "runs"),
            ],
        )
    assert result.exit_code == 0, result.output + repr(result.exception)
    return tmp_path, path, result.output.split("run directory: ")[1].split()[0]


def test_external_runs_beside_native_in_one_report(native) -> None:
    tmp, config, native_dir = native
    outline = write_jsonl(
        tmp / "outline.jsonl", [{"article": "Москва", "outline": "## История\n## Экономика"}]
    )
    common = ["--dataset", str(tmp / "data"), "--out", str(tmp / "runs"), "--config", str(config)]
    first = runner.invoke(
        app,
        [
            "score-outputs",
            "--stage",
            "outline",
            "--outputs",
            str(outline),
            "--name",
            "other-outline",
            *common,
        ],
    )
    assert first.exit_code == 3, first.output + repr(first.exception)  # partial: 2 articles have no row
    storm = make_storm_dir(tmp / "storm")
    (storm / "Инновационный_центр_Сколково").rename(storm / "Сколково")  # the plain dataset's title
    second = runner.invoke(
        app, ["score-outputs", "--stage", "writer", "--storm", str(storm), "--name", "storm", *common]
    )
    assert second.exit_code == 3, second.output + repr(
        second.exception
    )  # partial: no STORM folder for 2 articles

    runs = [native_dir, str(tmp / "runs" / "other-outline"), str(tmp / "runs" / "storm")]
    report = runner.invoke(app, ["report", *runs, "--out", str(tmp / "cmp"), "--view", "failures_as_zero"])
    assert report.exit_code == 0, report.output + repr(report.exception)
    table = list(csv.reader((tmp / "cmp" / "outline.csv").open(encoding="utf-8")))
    rows = [table[0]] + [r for r in table[1:] if not r[0].startswith(BASELINE_PREFIX)]
    # the native run and the outline rows have their 3 baselines; STORM's writer outline the writer's one
    assert len(table) - len(rows) == 3 * 2 + 1
    assert [r[0] for r in table[1:]].count(f"{BASELINE_PREFIX}extractive") == 1
    assert [r[0] for r in rows[1:]] == [native_dir.rstrip("/").split("/")[-1], "other-outline", "storm"]
    assert all(r[1] != "—" for r in rows[1:])  # every run has an outline F1
    failed = {r[0]: r[-1] for r in rows[1:]}
    assert failed["other-outline"] == "2" and failed["storm"] == "1"  # articles without output are counted
    sections = list(csv.reader((tmp / "cmp" / "sections.csv").open(encoding="utf-8")))
    assert [r[0] for r in sections[1:] if not r[0].startswith(BASELINE_PREFIX)][1:] == ["storm"]
    md = (tmp / "cmp" / "report.md").read_text(encoding="utf-8")
    assert "| storm |" in md and "| other-outline |" in md
    page = (tmp / "cmp" / "report.html").read_text(encoding="utf-8")
    assert (
        'writer <span class="note">(whole article, not in the paper)</span></h2>' in page
    )  # the HTML labels it too


def test_score_command_rescores_an_external_run_the_same_way(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("ruwikibench.runner.setup.make_embedder", lambda config, *_: HashEmbedder())
    save_dataset(make_dataset(), tmp_path / "data")
    moscow = [f"Москва/src{s}#{k}" for s in range(3) for k in range(2)]
    rows = write_jsonl(tmp_path / "r.jsonl", [{"article": "Москва", "ranking": moscow[::-1]}])
    first = runner.invoke(
        app,
        [
            "score-outputs",
            "--stage",
            "ranking",
            "--outputs",
            str(rows),
            "--dataset",
            str(tmp_path / "data"),
            "--out",
            str(tmp_path / "runs"),
            "--name",
            "ext",
        ],
    )
    assert first.exit_code == 3, first.output + repr(first.exception)  # partial: 2 articles have no row
    run = tmp_path / "runs" / "ext"
    before = (run / "results.jsonl").read_text(encoding="utf-8")
    rows.unlink()  # the run holds its own copy of what it scored
    again = runner.invoke(app, ["score", str(run)])
    assert again.exit_code == 0, again.output + repr(again.exception)
    assert (run / "results.jsonl").read_text(encoding="utf-8") == before
    assert "bm25_ndcg" not in before and '"rerank_ndcg": 1.0' in before
