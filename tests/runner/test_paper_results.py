"""The paper's published results (ruwikibench/reporting/paper_results.yaml): figures checked by hand against
the paper's Tables 3, 4, 5 and 7, and the reference rows in a report, where a run with configs/paper.yaml's
settings is marked comparable and a configs/local.yaml run is not, naming the settings that differ."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ruwikibench import api
from ruwikibench.conf.loader import load_config
from ruwikibench.reporting.paper import (
    PaperResultsError,
    load_paper_results,
    paper_block,
    paper_results,
    stage_variants,
)
from ruwikibench.storage.rundir import RunDir

ROOT = Path(__file__).resolve().parents[2]
STAGES = (("ranking", "rerank_ndcg"), ("outline", "f1_authors"), ("sections", "f1"))


def _figure(table: int, model: str, column: str) -> float:
    found = next(t for t in paper_results().tables if t.table == table)
    return next(r for r in found.rows if r.model == model).figures[column]


def test_figures_are_the_papers() -> None:  # read off the paper's tables by hand
    assert _figure(3, "DeepSeek V3", "NDCG") == 95.42
    assert _figure(3, "baseline (bm25)", "R-Pr") == 62.51
    assert _figure(4, "tpro", "Rerank R-Pr") == 83.37
    assert _figure(4, "RuadaptQwen3-32B-Instruct-v2", "BM25 NDCG") == 85.39
    assert _figure(5, "RuadaptQwen3-32B-Instruct-v2", "Description") == 62.91
    assert _figure(5, "yagpt5lite", "Direct, one neighbor") == 60.07
    assert _figure(7, "Qwen3-235B-A22B", "Mean F1") == 53.74
    assert _figure(7, "yagpt5lite", "Mean BLEU") == 3.16
    assert {t.table for t in paper_results().tables} == {3, 4, 5, 7}
    assert all(len(t.rows) == (7 if t.table == 3 else 6) for t in paper_results().tables)


def test_paper_columns_map_onto_our_metric_keys() -> None:
    table3, table4 = stage_variants("ranking")
    rows = dict(table3.rows())
    assert rows["paper Table 3: baseline (bm25)"] == {"bm25_ndcg": 88.81, "bm25_r_precision": 62.51}
    assert rows["paper Table 3: DeepSeek V3"] == {"rerank_ndcg": 95.42, "rerank_r_precision": 83.86}
    assert table4.settings["ranking.query_mode"] == "generated"
    outline = stage_variants("outline")
    assert [v.name for v in outline] == [
        "Table 5 (Direct, no neighbors)",
        "Table 5 (Direct, one neighbor)",
        "Table 5 (Description)",
    ]
    assert dict(outline[1].rows())["paper Table 5 (Direct, one neighbor): tpro"] == {"f1_authors": 59.09}
    assert stage_variants("writer") == []


def test_a_malformed_file_names_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "paper.yaml"
    bad.write_text(
        "paper: x\nsettings: {}\ntables:\n- {table: 3, stage: ranking, caption: c, columns: [], "
        "rows: [{model: m, figures: {NDCG: 1.0}}]}\n",
        encoding="utf-8",
    )
    with pytest.raises(PaperResultsError, match=r"paper.yaml: tables.0: Value error, Table 3, m: no column"):
        load_paper_results(bad)


def _run(tmp: Path, name: str, config: str, articles: int) -> Path:
    """A run directory with the config's spec, ``articles`` ranking and outline results, and their metrics."""
    path = tmp / name
    path.mkdir()
    spec = {"dataset": {"id": "d"}, "config": load_config(ROOT / "configs" / config).model_dump(mode="json")}
    (path / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    with open(path / "results.jsonl", "w", encoding="utf-8") as handle:
        for stage, key in STAGES:
            for i in range(articles):
                record = {"stage": stage, "article": f"a{i}", "item": "article", "metrics": {key: 0.9}}
                handle.write(json.dumps(record) + "\n")
    views = {"mean": 0.9, "low": 0.9, "high": 0.9, "n": articles}
    estimate = {"failures_excluded": views, "failures_as_zero": views}
    metrics = {
        stage: {"metrics": {key: estimate}, "counts": {"evaluated": articles}} for stage, key in STAGES
    }
    (path / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    return path


@pytest.fixture()
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    monkeypatch.setenv("RUWIKIBENCH_MODEL", "DeepSeek-V3")
    return [_run(tmp_path, "paper-run", "paper.yaml", 285), _run(tmp_path, "local-run", "local.yaml", 2)]


def test_paper_settings_are_comparable_local_ones_are_not(runs: list[Path]) -> None:
    block = paper_block("outline", [(p.name, RunDir(p)) for p in runs])
    assert block is not None
    paper_run, local_run = block.comparisons
    assert paper_run.comparable and paper_run.variant.name == "Table 5 (Description)"
    assert not local_run.comparable and local_run.variant.name == "Table 5 (Description)"
    assert set(local_run.differing) == {
        "embedder.kind = e5-int8 (paper: sentence-transformers)",
        "embedder.name = null (paper: sergeyzh/BERTA)",
        "articles = 2 (paper: 285)",
        "embedder.authors_prompt = null (paper: Classification)",
    }
    ranking = paper_block("ranking", [(p.name, RunDir(p)) for p in runs])
    assert ranking is not None
    assert [(c.variant.name, c.comparable) for c in ranking.comparisons] == [
        ("Table 3", True),
        ("Table 4", False),
    ]
    assert "ranking.max_candidates = 12 (paper: null)" in ranking.comparisons[1].differing
    sections = paper_block("sections", [(p.name, RunDir(p)) for p in runs])
    assert sections is not None and [c.comparable for c in sections.comparisons] == [True, False]
    assert "sections.max_snippets = 6 (paper: null)" in sections.comparisons[1].differing


def test_report_shows_the_paper_rows_when_asked(runs: list[Path], tmp_path: Path) -> None:
    md = api.report(runs, tmp_path / "cmp", paper=True).read_text(encoding="utf-8")
    assert "| paper Table 3: DeepSeek V3 |  |  | 95.42 | 83.86 |" in md  # under Rerank NDCG, Rerank R-Pr
    assert "| paper Table 4: tpro | 90.61 | 65.07 | 96.06 | 83.37 |" in md  # the local run's query mode
    assert "paper Table 5 (Description): DeepSeek V3" in md and "Direct, no neighbors):" not in md
    assert "its columns here: Description → F1 (authors);" in md
    assert (
        "Table 4, BM25 query generation (each model writes the query from the title): figures ×100 as "
        "published, no CI; its columns here: the columns of the same name;" in md
    )
    assert "paper-run: **comparable** with the paper's Table 5 (Description)" in md
    assert "local-run: not comparable with the paper's Table 5 (Description): " in md
    page = (tmp_path / "cmp" / "report.html").read_text(encoding="utf-8")
    assert '<tr class="paper"><td>paper Table 3: DeepSeek V3</td>' in page
    assert "paper-run: comparable with the paper&#39;s Table 3" in page
    plain = api.report(runs, tmp_path / "plain").read_text(encoding="utf-8")
    assert "paper Table" not in plain  # only when asked


def test_the_cli_option_says_which_run_is_comparable(runs: list[Path], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ruwikibench.cli import app

    result = CliRunner().invoke(
        app, ["report", *map(str, runs), "--paper", "--out", str(tmp_path / "cli")], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 0, result.output
    assert "ranking: paper-run: comparable with the paper's Table 3 (its settings)" in result.output
    assert "ranking: local-run: not comparable with the paper's Table 4: " in result.output
    assert "paper Table 3: DeepSeek V3" in (tmp_path / "cli" / "report.md").read_text(encoding="utf-8")
