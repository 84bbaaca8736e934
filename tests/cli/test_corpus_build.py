"""`ruwikibench corpus build` against the local test server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.corpus_builder.store import load_dataset, read_manifest
from tests.corpus_builder.web._server import article_html, running_server
from tests.corpus_builder.web._site import serve_article
from tests.sample import shared_data

runner = CliRunner()
RUWIKI = shared_data("ruwiki")
FAST = ["--timeout", "0.5", "--retries", "1", "--host-delay", "0", "--per-host", "8"]


def test_build_is_listed() -> None:
    result = runner.invoke(app, ["corpus", "--help"])
    assert result.exit_code == 0 and "build" in result.output


def test_bad_options_exit_2(tmp_path: Path) -> None:
    titles = tmp_path / "t.txt"
    titles.write_text("Python\n", encoding="utf-8")
    for args, message in (
        (["--site", "example.org"], "--site"),
        (["--extractors", "goose"], "unknown extractor"),
        (["--lists", "maybe"], "--lists"),
    ):
        result = runner.invoke(
            app, ["corpus", "build", "--titles", str(titles), "--out", str(tmp_path / "o"), *args]
        )
        assert result.exit_code == 2 and message in result.output, result.output
    result = runner.invoke(
        app, ["corpus", "build", "--titles", str(tmp_path / "no.txt"), "--out", str(tmp_path)]
    )
    assert result.exit_code == 2 and "titles file not found" in result.output


def test_build_without_flag_refuses_local_server(tmp_path: Path) -> None:
    titles = tmp_path / "t.txt"
    titles.write_text("Статья\n", encoding="utf-8")
    with running_server() as server:
        server.page("/wiki/Статья", article_html("Статья"))
        result = runner.invoke(
            app,
            [
                "corpus",
                "build",
                "--titles",
                str(titles),
                "--out",
                str(tmp_path / "o"),
                "--base-url",
                server.base,
                "--retries",
                "0",
            ],
        )
        assert server.total == 0
    assert result.exit_code == 1
    assert "blocked_address" in result.output and "loopback" in result.output


@pytest.mark.skipif(RUWIKI is None, reason="../shared/data/ruwiki (real Ruwiki sample) not found")
def test_build_command_end_to_end(tmp_path: Path) -> None:
    assert RUWIKI is not None
    record = next(
        r
        for r in json.loads((RUWIKI / "ruwikibench_articles.json").read_text(encoding="utf-8"))
        if r["article_name"] == "Присоединение Крыма к Российской Федерации"
    )
    titles = tmp_path / "titles.txt"
    titles.write_text(f"{record['article_name']}\nНесуществующая статья\n", encoding="utf-8")
    out = tmp_path / "out"
    with running_server() as server:
        serve_article(server, record, shared_data("web"))
        args = [
            "corpus",
            "build",
            "--titles",
            str(titles),
            "--site",
            "ru.ruwiki.ru",
            "--out",
            str(out),
            "--base-url",
            server.base,
            "--allow-net",
            "127.0.0.0/8",
            "--user-agent",
            "ruwikibench-test/1 (ops@example.org)",
            *FAST,
        ]
        result = runner.invoke(app, args)
        assert set(server.user_agents) == {"ruwikibench-test/1 (ops@example.org)"}
    print(result.output)
    assert result.exit_code == 1  # one title has no page: reported, the other article is still written
    assert "Несуществующая статья" in result.output and "http_404" in result.output
    for row in (
        "articles built",
        "kept sources",
        "excluded: blocked_address",
        "excluded: timeout",
        "excluded: content_type",
        "excluded: redirect_loop",
        "excluded: too_short",
    ):
        assert row in result.output, row
    assert {p.name for p in out.iterdir()} >= {
        "manifest.jsonl",
        "ruwikibench_articles.json",
        "build_summary.json",
        "manifest.json",
        "articles.jsonl",
        "cache",
    }
    summary = json.loads((out / "build_summary.json").read_text(encoding="utf-8"))
    assert load_dataset(out).dataset_id == summary["dataset_id"]
    assert read_manifest(out)["build"]["summary"]["kept"] == summary["kept"] > 20
