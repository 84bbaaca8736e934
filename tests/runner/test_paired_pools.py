"""Paired comparison of ranking runs whose pools differ (query modes): NDCG and R-Precision, normalised
inside each pool, pair only items ranked on the same pool (the others are left out and counted), while
R-recall and pool recall are compared on every item; runs on the same pools keep every metric."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ruwikibench.aggregation.metrics import aggregate
from ruwikibench.reporting.compare import compare_runs, load_run, paired_comparison
from ruwikibench.storage.rundir import RunDir

ARTICLES = 10


def _ranking_run(path: Path, pool: str, metrics: dict[str, float]) -> Path:
    """A ranking run of ``ARTICLES`` articles with the same metrics each (a little noise so the CI is not a
    point), each item's pool digest ``pool``."""
    path.mkdir(parents=True)
    rundir = RunDir(path)
    results: list[dict[str, Any]] = [
        {
            "stage": "ranking",
            "article": f"art{i}",
            "item": "article",
            "metrics": {key: min(1.0, value + 0.001 * (i % 3)) for key, value in metrics.items()},
            "info": {"pool": f"{pool}{i}", "relevant_total": 16},
        }
        for i in range(ARTICLES)
    ]
    rundir.append_many("results.jsonl", results)
    rundir.write_json("metrics.json", aggregate(results, [], []))
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


def test_runs_on_different_pools_compare_on_recall_only(tmp_path: Path) -> None:
    title = _ranking_run(tmp_path / "title", "title-pool", TITLE)
    described = _ranking_run(tmp_path / "described", "description-pool", DESCRIPTION)
    rows = {r.key: r for r in paired_comparison([load_run(title), load_run(described)])["ranking"]}
    for key in ("bm25_ndcg", "bm25_r_precision", "rerank_ndcg", "rerank_r_precision"):
        assert rows[key].shared == 0 and rows[key].alignment.differ == ARTICLES, key
        assert rows[key].verdict() == "no shared item" and rows[key].alignment.left_out() == "10 another pool"
    recall = rows["rerank_recall_at_r"]
    assert recall.shared == ARTICLES and recall.alignment.left_out() == "0"
    assert recall.winner == "described" and recall.difference.mean == pytest.approx(3 / 16)
    assert rows["pool_recall"].winner == "described"
    text = compare_runs([title, described], tmp_path / "cmp").read_text(encoding="utf-8")
    assert "described beats title on ranking Rerank R-recall" in text
    assert "on ranking Rerank R-Pr:" not in text  # the within-pool verdict that would mislead
    assert "10 another pool" in text


def test_runs_on_the_same_pools_keep_the_within_pool_metrics(tmp_path: Path) -> None:
    a = _ranking_run(tmp_path / "a", "pool", TITLE)
    b = _ranking_run(tmp_path / "b", "pool", DESCRIPTION)
    rows = {r.key: r for r in paired_comparison([load_run(a), load_run(b)])["ranking"]}
    assert rows["rerank_r_precision"].shared == ARTICLES and rows["rerank_r_precision"].winner == "a"
    text = compare_runs([a, b], tmp_path / "cmp").read_text(encoding="utf-8")
    assert "another pool" not in text and "a beats b on ranking Rerank R-Pr" in text
