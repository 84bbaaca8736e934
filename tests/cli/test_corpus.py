from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.corpus_builder.store import load_dataset, read_manifest
from tests.corpus_builder.test_ruwikibench_json import record
from tests.sample import sample_dir

runner = CliRunner()


def _write(path: Path, records: object) -> Path:
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    return path


def test_corpus_is_listed_in_help() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0 and "corpus" in result.output
    result = runner.invoke(app, ["corpus", "--help"])
    assert "import" in result.output and "stats" in result.output


def test_import_then_stats(tmp_path: Path) -> None:
    src = _write(tmp_path / "in.json", [record("Один"), record("Два")])
    result = runner.invoke(app, ["corpus", "import", str(src), "--out", str(tmp_path / "d"), "-q"])
    assert result.exit_code == 0, result.output
    ds = load_dataset(tmp_path / "d")
    assert [a.name for a in ds.articles] == ["Один", "Два"]
    assert read_manifest(tmp_path / "d")["source_file"] == str(src)
    result = runner.invoke(app, ["corpus", "stats", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    for row in (
        "Number of articles",
        "Number of sources",
        "Total number of snippets",
        "Average outline size (headings)",
        "Average section size (words)",
    ):
        assert row in result.output
    result = runner.invoke(app, ["corpus", "stats", str(tmp_path / "d"), "--json"])
    figures = json.loads(result.output)
    assert (figures["articles"], figures["sources"], figures["mean_outline_headings"]) == (2, 8, 1.0)
    assert figures["dataset_id"] == ds.dataset_id


def test_import_options_reach_the_manifest(tmp_path: Path) -> None:
    src = _write(tmp_path / "in.json", [record()])
    args = [
        "corpus",
        "import",
        str(src),
        "--out",
        str(tmp_path / "d"),
        "-q",
        "--window",
        "100",
        "--overlap",
        "10",
        "--min-source-chars",
        "5",
        "--lists",
        "keep",
    ]
    assert runner.invoke(app, args).exit_code == 0
    assert read_manifest(tmp_path / "d")["params"] == {
        "min_source_chars": 5,
        "window": 100,
        "overlap": 10,
        "lists": "keep",
    }
    bad = runner.invoke(
        app, ["corpus", "import", str(src), "--out", str(tmp_path / "e"), "--window", "5", "--overlap", "5"]
    )
    assert bad.exit_code == 2 and not (tmp_path / "e").exists()


def test_missing_file_is_one_line_and_nonzero(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["corpus", "import", str(tmp_path / "nope.json"), "--out", str(tmp_path / "d")]
    )
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: {tmp_path / 'nope.json'}: file not found"
    assert not (tmp_path / "d").exists()


def test_invalid_json_is_one_line_and_nonzero(tmp_path: Path) -> None:
    src = tmp_path / "bad.json"
    src.write_text("[{]", encoding="utf-8")
    result = runner.invoke(app, ["corpus", "import", str(src), "--out", str(tmp_path / "d")])
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {src}: invalid JSON at line 1 column 3")


def test_bad_articles_are_named_and_good_ones_still_written(tmp_path: Path) -> None:
    no_html = record("Без HTML")
    del no_html["html"]
    no_body = record("Без тела", html="<html><body><p>страница ошибки</p></body></html>")
    src = _write(tmp_path / "in.json", [record("Хорошая"), no_html, no_body])
    result = runner.invoke(app, ["corpus", "import", str(src), "--out", str(tmp_path / "d"), "-q"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"error: {src}: article 'Без HTML': no 'html'",
        f"error: {src}: article 'Без тела': no article body (div.mw-parser-output) in the HTML",
    ]
    assert [a.name for a in load_dataset(tmp_path / "d").articles] == ["Хорошая"]
    assert len(read_manifest(tmp_path / "d")["errors"]) == 2


def test_stats_on_a_non_dataset_directory_fails_cleanly(tmp_path: Path) -> None:
    result = runner.invoke(app, ["corpus", "stats", str(tmp_path)])
    assert result.exit_code == 1
    assert "no manifest" in result.stderr and "Traceback" not in result.output


def test_export_command_writes_the_published_layout(tmp_path: Path) -> None:
    src = _write(tmp_path / "in.json", [record()])
    runner.invoke(app, ["corpus", "import", str(src), "--out", str(tmp_path / "d"), "-q"])
    result = runner.invoke(app, ["corpus", "export", str(tmp_path / "d"), "--out", str(tmp_path / "x.json")])
    assert result.exit_code == 0, result.output
    (exported,) = json.loads((tmp_path / "x.json").read_text(encoding="utf-8"))
    assert set(exported) == {"article_name", "article_cleared_name", "html", "sources"}


def test_real_sample_import_and_stats(tmp_path: Path) -> None:
    found = sample_dir()
    if found is None:
        pytest.skip(
            "real Ruwiki sample not found (set RUWIKIBENCH_SAMPLE "
            "or place shared/data/ruwiki beside the repo)"
        )
    result = runner.invoke(
        app, ["corpus", "import", str(found / "ruwikibench_articles.json"), "--out", str(tmp_path / "d")]
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["corpus", "stats", str(tmp_path / "d"), "--json"])
    figures = json.loads(result.output)
    assert figures["articles"] == 8
    assert figures["sources"] == sum(1 for _ in (tmp_path / "d" / "sources.jsonl").open(encoding="utf-8"))
