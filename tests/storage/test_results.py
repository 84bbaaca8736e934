"""metrics.json typed and versioned (ruwikibench.storage.results): written with format_version, validated when
read (a bad file names the file and the field), and an old run directory (metrics.json without a version)
read, shown and reported with every file left byte-identical and the same metrics."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import ruwikibench
from ruwikibench.cli import app
from ruwikibench.storage.results import (
    METRICS_FORMAT_VERSION,
    ROWS_FORMAT_VERSION,
    BaselineRow,
    InvalidMetrics,
    ResultRow,
    parse_metrics,
    read_metrics,
    result_rows,
    stage_dicts,
)
from ruwikibench.storage.rundir import RunDir
from tests.cli.small_runs import fake_setup

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "runner" / "sample_metrics.json"


def _digests(path: Path) -> dict[str, str]:
    return {
        str(file.relative_to(path)): hashlib.sha256(file.read_bytes()).hexdigest()
        for file in sorted(path.rglob("*"))
        if file.is_file() and file.name != "run.lock"
    }


def test_a_metrics_file_written_before_versions_is_read_as_version_0() -> None:
    """tests/fixtures/runner/sample_metrics.json was written by the code before metrics.json had a version."""
    old = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert "format_version" not in old
    metrics = parse_metrics(old)
    assert metrics.format_version == METRICS_FORMAT_VERSION and set(metrics.stages) == set(old)
    assert stage_dicts(metrics) == old  # upgraded in memory: every block as the file holds it
    sections = metrics.stages["sections"]
    assert sections.estimate("f1_rescaled", "failures_as_zero") is not None
    assert sections.floor is not None and sections.vs_baseline["f1"].verdict


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], r"metrics\.json: expected a JSON object of stages, got list"),
        ({"format_version": 99}, r"metrics\.json: format_version 99 is not one this version reads"),
        ({"outline": {"counts": {"evaluated": "many"}}}, r"metrics\.json: outline\.counts\.evaluated: "),
        (
            {"outline": {"metrics": {"f1": {"failures_excluded": {"mean": 0.5}}}}},
            r"metrics\.json: outline\.metrics\.f1\.failures_excluded\.low: Field required",
        ),
    ],
)
def test_a_bad_metrics_file_names_the_file_and_the_field(data: Any, message: str) -> None:
    with pytest.raises(InvalidMetrics, match=message):
        parse_metrics(data)


def test_an_old_run_directory_is_read_shown_and_reported_untouched(tmp_path: Path, monkeypatch) -> None:
    with fake_setup(tmp_path, monkeypatch) as (_, configs, _model):
        run = ruwikibench.run(
            configs[0], tmp_path / "data", stages=["ranking", "outline"], out=tmp_path / "runs"
        )
    rundir = RunDir(run.path)
    for name in ("results.jsonl", "baselines.jsonl"):  # rows as runs wrote them before rows had a version
        rows = list(rundir.read(name))
        assert rows and all(row.pop("format_version") == ROWS_FORMAT_VERSION for row in rows)
        rundir.rewrite(name, rows)
    path = run.path / "metrics.json"
    written = json.loads(path.read_text(encoding="utf-8"))
    assert next(iter(written)) == "format_version" and written["format_version"] == METRICS_FORMAT_VERSION
    old = {stage: block for stage, block in written.items() if stage != "format_version"}
    path.write_text(
        json.dumps(old, ensure_ascii=False, indent=2), encoding="utf-8"
    )  # as runs wrote it before
    before = _digests(run.path)

    assert stage_dicts(read_metrics(RunDir(run.path))) == old
    assert ruwikibench.Run.open(run.path).metrics == old == run.metrics
    shown = CliRunner().invoke(app, ["report", str(run.path), "--out", str(tmp_path / "console")])
    assert shown.exit_code == 0, shown.output
    assert "what the columns mean" in shown.output and "Rerank NDCG ↑" in shown.output
    report = ruwikibench.report([run.path], out=tmp_path / "report")
    text = report.read_text(encoding="utf-8")
    assert run.run_id in text and "What the columns mean" in text and "| Mean F1 ↑ | ×100 |" in text
    html = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert '<details class="glossary" open>' in html and "<dt>Rerank NDCG ↑" in html
    assert _digests(run.path) == before  # read, shown and reported: no file of the run rewritten
    assert {row.format_version for row in result_rows(rundir.results(), "results.jsonl")} == {0}


def test_rows_carry_their_version_and_a_bad_row_names_its_item() -> None:
    old = {
        "stage": "sections",
        "article": "A",
        "item": "s1",
        "metrics": {"f1": 0.5, "bleu": None},
        "unit": "s1",
    }
    assert result_rows([old], "results.jsonl")[0] == ResultRow(**old, format_version=0)
    baseline = result_rows([{**old, "baseline": "lead", "format_version": 1}], "b", BaselineRow)[0]
    assert baseline.baseline == "lead" and baseline.format_version == 1
    with pytest.raises(InvalidMetrics, match=r"results\.jsonl: row sections/A/s1: metrics\.f1: "):
        result_rows([{**old, "metrics": {"f1": "high"}}], "results.jsonl")
    with pytest.raises(InvalidMetrics, match=r"b: row sections/A/s1: baseline: Field required"):
        result_rows([old], "b", BaselineRow)
    with pytest.raises(InvalidMetrics, match="newer than this version"):
        result_rows([{**old, "format_version": ROWS_FORMAT_VERSION + 1}], "results.jsonl")
