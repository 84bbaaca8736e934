"""End to end through the CLI with a fake OpenAI-compatible model on 127.0.0.1: `run all` (three stages) for
two configs that differ in one setting, `score` (no LLM call), then `report` comparing them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ruwikibench.cli import app
from tests.cli.small_runs import fake_setup, run_all
from tests.graphs.writer_fixture import TITLE

runner = CliRunner()


@pytest.fixture()
def setup(tmp_path, monkeypatch):
    with fake_setup(tmp_path, monkeypatch) as made:
        yield made


def test_run_all_score_and_report(setup) -> None:
    tmp, (base, direct), model = setup
    base_dir, direct_dir = run_all(tmp, base), run_all(tmp, direct)
    metrics = json.loads((Path(base_dir) / "metrics.json").read_text(encoding="utf-8"))
    assert set(metrics) >= {"ranking", "outline", "sections"}
    assert (
        metrics["ranking"]["counts"]["evaluated"] == 3 and metrics["sections"]["counts"]["failed_units"] == 0
    )
    results = [json.loads(x) for x in (Path(base_dir) / "results.jsonl").open(encoding="utf-8")]
    moscow = next(r for r in results if r["stage"] == "ranking" and r["article"] == TITLE)
    assert moscow["metrics"]["rerank_ndcg"] == pytest.approx(1.0)  # the fake judge knows only this article

    sent = model.requests
    rescored = runner.invoke(app, ["score", base_dir])
    assert rescored.exit_code == 0, rescored.output
    skipped = "outline: baseline frequent headings: not built for 3 of 3 items: needs at least 5 other"
    assert skipped in rescored.output  # the console says why the baseline has no numbers
    assert model.requests == sent  # re-scoring sends nothing
    again = runner.invoke(
        app, ["run", "all", "--dataset", str(tmp / "data"), "--config", str(base), "--out", str(tmp / "runs")]
    )
    assert again.exit_code == 0 and model.requests == sent  # a finished run resumes to nothing

    report = runner.invoke(app, ["report", base_dir, direct_dir, "--out", str(tmp / "cmp")])
    assert report.exit_code == 0, report.output + repr(report.exception)
    assert "sections: paired differences vs" in report.output and "Δ vs" in report.output
    md = (tmp / "cmp" / "report.md").read_text(encoding="utf-8")
    for heading in ("## ranking (Tables 3/4)", "## outline (Table 5)", "## sections (Table 7)"):
        assert heading in md
    assert "| `outline.mode` | description | direct |" in md  # what the runs differ in, one row per setting
    rows = list(csv.reader((tmp / "cmp" / "outline.csv").open(encoding="utf-8")))
    assert rows[0][:4] == ["run", "Mean F1", "Mean F1 floor", "Mean F1 rescaled"]
    labels = [row[0] for row in rows[1:]]  # each run followed by its three no-LLM outline baselines
    assert labels == [
        Path(base_dir).name,
        "↳ baseline: frequent headings",
        "↳ baseline: template",
        "↳ baseline: title template",
        Path(direct_dir).name,
        "↳ baseline: frequent headings",
        "↳ baseline: template",
        "↳ baseline: title template",
    ]
    # the test dataset is too small for frequent headings: skipped on every item, the reason said per run
    frequent = [row for row in rows[1:] if row[0] == "↳ baseline: frequent headings"]
    assert all(cell == "—" for row in frequent for cell in row[1:4])
    assert all(cell != "—" for row in rows[1:] if row not in frequent for cell in row[1:4])
    assert md.count("- baseline frequent headings: not built for 3 of 3 items: needs at least 5 other") == 2
    assert md.count("best baseline (") >= 2 * (2 + 2 + 4)  # ranking 2, outline 2, sections 4 metrics per run
    sections = list(csv.reader((tmp / "cmp" / "sections.csv").open(encoding="utf-8")))
    assert sections[0][1:4] == ["Mean F1", "Mean F1 floor", "Mean F1 rescaled"]
    assert all(cell != "—" for row in sections[1:] for cell in row[1:4])
    run_report = (Path(base_dir) / "report.md").read_text(encoding="utf-8")
    assert run_report.count("Floor: the metric of each output") == 2  # outline and sections
    floors = [json.loads(x) for x in (Path(base_dir) / "floors.jsonl").open(encoding="utf-8")]
    assert {f["stage"] for f in floors} == {"outline", "sections"}
    page = (tmp / "cmp" / "report.html").read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == 3  # the three stage charts, inlined
    assert page.count('<table class="sortable stage-table">') == 3
    assert 'href="articles/a0002.html"' in page and "Per-article deltas" in page
    assert page.count('<table class="sortable paired-table">') == 3  # a paired table after each stage's table
    article = (tmp / "cmp" / "articles" / "a0002.html").read_text(encoding="utf-8")  # Москва: 2nd by name
    assert "ЗОЛОТО" in article and "Node trace" in article  # reference texts beside generated ones, the trace
