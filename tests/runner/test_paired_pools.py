"""Paired comparison of ranking runs whose pools differ (query modes): the within-pool NDCG and R-Precision
are left out, R-recall and pool recall compared, and report.md says why; runs of one query mode keep every
metric."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ruwikibench.aggregation.metrics import aggregate
from ruwikibench.reporting.compare import compare_runs, load_run, paired_comparison
from ruwikibench.storage.rundir import RunDir

ARTICLES = 10


def _ranking_run(path: Path, mode: str, metrics: dict[str, float]) -> Path:
    """A ranking run of ``ARTICLES`` articles with the same metrics each (a little noise so the CI is not a
    point), recorded as run in query mode ``mode``."""
    path.mkdir(parents=True)
    rundir = RunDir(path)
    results: list[dict[str, Any]] = [
        {
            "stage": "ranking",
            "article": f"art{i}",
            "item": "article",
            "metrics": {key: min(1.0, value + 0.001 * (i % 3)) for key, value in metrics.items()},
        }
        for i in range(ARTICLES)
    ]
    rundir.append_many("results.jsonl", results)
    rundir.write_json("metrics.json", aggregate(results, [], []))
    (path / "spec.json").write_text(
        json.dumps({"config": {"ranking": {"query_mode": mode}}}), encoding="utf-8"
    )
    return path


# A title query's pool: 10 of the article's 16 snippets, all ranked first (R-Precision 1.0, R-recall 10/16).
TITLE = {
    "bm25_ndcg": 1.0,
    "bm25_r_precision": 1.0,
    "rerank_ndcg": 1.0,
    "rerank_r_precision": 1.0,
    "pool_recall": 10 / 16,
    "bm25_recall_at_r": 10 / 16,
    "rerank_recall_at_r": 10 / 16,
}
# A description's pool: all 16, 13 of them in the first 16.
DESCRIPTION = {
    "bm25_ndcg": 0.9,
    "bm25_r_precision": 13 / 16,
    "rerank_ndcg": 0.9,
    "rerank_r_precision": 13 / 16,
    "pool_recall": 1.0,
    "bm25_recall_at_r": 13 / 16,
    "rerank_recall_at_r": 13 / 16,
}


def test_runs_of_different_query_modes_compare_on_recall_only(tmp_path: Path) -> None:
    title = _ranking_run(tmp_path / "title", "title", TITLE)
    described = _ranking_run(tmp_path / "described", "reference", DESCRIPTION)
    rows = paired_comparison([load_run(title), load_run(described)])["ranking"]
    assert {r.key for r in rows} == {"pool_recall", "bm25_recall_at_r", "rerank_recall_at_r"}
    recall = next(r for r in rows if r.key == "rerank_recall_at_r")
    assert recall.winner == "described" and recall.difference.mean == pytest.approx(3 / 16)
    report = compare_runs([title, described], tmp_path / "cmp")
    text = report.read_text(encoding="utf-8")
    assert "**Different pools.**" in text and "title: title, described: reference" in text
    assert "described beats title on ranking Rerank R-recall" in text
    assert "on ranking Rerank R-Pr:" not in text  # the within-pool verdict that would mislead


def test_runs_of_one_query_mode_keep_the_within_pool_metrics(tmp_path: Path) -> None:
    a = _ranking_run(tmp_path / "a", "reference", TITLE)
    b = _ranking_run(tmp_path / "b", "reference", DESCRIPTION)
    rows = paired_comparison([load_run(a), load_run(b)])["ranking"]
    assert {"rerank_ndcg", "rerank_r_precision", "rerank_recall_at_r"} <= {r.key for r in rows}
    text = compare_runs([a, b], tmp_path / "cmp").read_text(encoding="utf-8")
    assert "Different pools" not in text and "a beats b on ranking Rerank R-Pr" in text
