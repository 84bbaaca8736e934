"""Bad input through the real CLI (a subprocess, as a user runs it): one line naming the file / field /
article, a non-zero exit status, no traceback; user text never goes through rich markup."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ruwikibench.corpus_builder.ruwikibench_json import export_records
from ruwikibench.corpus_builder.store import save_dataset
from tests.fake_openai import fake_openai_server
from tests.graphs.writer_fixture import make_dataset

REPO = Path(__file__).resolve().parents[2]


def cli(tmp: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "RUWIKIBENCH_CACHE": str(tmp / "cache"),
        "COLUMNS": "200",
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "ruwikibench", *args],
        check=False,
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
        cwd=tmp,
    )


def one_error(result: subprocess.CompletedProcess[str], *expected: str, status: int = 2) -> str:
    assert result.returncode == status, result.stdout + result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    for text in expected:
        assert text in errors[0], errors[0]
    return errors[0]


def refused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there any more


def write_config(tmp: Path, url: str, **extra: object) -> Path:
    model = {"name": "fake", "endpoints": [url], "max_retries": 0, "timeout": 10}
    config = {
        "name": "t",
        "models": {"writer": model},
        "cache_dir": str(tmp / "cache"),
        "ranking": {"query_mode": "title"},
        **extra,
    }
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture()
def tmp(tmp_path: Path) -> Path:
    save_dataset(make_dataset(), tmp_path / "data")
    return tmp_path


def run_ranking(
    tmp: Path, dataset: str, *extra: str, config: Path | None = None, **kw
) -> subprocess.CompletedProcess:
    config = config or write_config(tmp, refused_url())
    return cli(tmp, "run", "ranking", "--dataset", dataset, "--config", str(config), *extra, **kw)


def test_missing_dataset_path_with_markup_like_text(tmp: Path) -> None:
    one_error(run_ranking(tmp, "no/such[/FILE].json"), "no/such[/FILE].json: no such file or directory")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'[{"article_name": "x",', "invalid JSON at line 1"),
        (b"\xff\xfe[1, 2]", "not UTF-8 text"),
        (b'{"articles": []}', "expected a JSON list of articles, got dict"),
    ],
    ids=["corrupt", "not-utf8", "wrong-shape"],
)
def test_unusable_dataset_json(tmp: Path, content: bytes, expected: str) -> None:
    (tmp / "bad.json").write_bytes(content)
    one_error(run_ranking(tmp, str(tmp / "bad.json")), "bad.json", expected)


def test_directory_that_is_not_a_dataset(tmp: Path) -> None:
    (tmp / "empty").mkdir()
    one_error(run_ranking(tmp, str(tmp / "empty")), str(tmp / "empty"))


def _records() -> list:
    records = export_records(make_dataset())
    for record in records:
        for source in record["sources"]:
            source["source_text"] = (source["source_text"] + " ") * 40  # past the 1500-character filter
    return records


def test_run_reports_bad_articles_like_corpus_import(tmp: Path) -> None:
    bad = {"article_name": "Пустая", "html": "<html><body><p>нет статьи</p></body></html>", "sources": []}
    (tmp / "mixed.json").write_text(json.dumps([*_records(), "не объект", bad], ensure_ascii=False), "utf-8")
    imported = cli(tmp, "corpus", "import", str(tmp / "mixed.json"), "--out", str(tmp / "imported"), "-q")
    reported = sorted(line for line in imported.stderr.splitlines() if line.startswith("error:"))
    assert imported.returncode == 1 and len(reported) == 2 and any("'Пустая'" in line for line in reported)
    with fake_openai_server(lambda messages: "Да") as url:
        result = run_ranking(tmp, str(tmp / "mixed.json"), config=write_config(tmp, url))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert sorted(line for line in result.stderr.splitlines() if line.startswith("error:")) == reported
    assert "ranking" in result.stdout


def test_dataset_left_with_no_article_is_an_error(tmp: Path) -> None:
    (tmp / "none.json").write_text(json.dumps(["не объект", 5]), "utf-8")
    one_error(
        run_ranking(tmp, str(tmp / "none.json")),
        "none.json: the dataset holds no article",
        "2 failed to import",
    )


def test_absent_article_title(tmp: Path) -> None:
    one_error(
        run_ranking(tmp, str(tmp / "data"), "--article", "Нет такой [статьи]"),
        "--article 'Нет такой [статьи]': no such article",
    )


def test_api_key_variable_unset(tmp: Path) -> None:
    config = write_config(tmp, refused_url())
    data = yaml.safe_load(config.read_text("utf-8"))
    data["models"]["writer"]["api_key_env"] = "RWB_TEST_NO_SUCH_KEY"
    config.write_text(yaml.safe_dump(data), "utf-8")
    one_error(run_ranking(tmp, str(tmp / "data"), config=config), "RWB_TEST_NO_SUCH_KEY", "is not set")


def test_endpoint_refusing_connections_every_unit_failed(tmp: Path) -> None:
    result = run_ranking(tmp, str(tmp / "data"))
    line = one_error(result, "3 of 3 units failed", "errors.jsonl", status=1)
    assert "ranking" in line


@pytest.mark.parametrize("value", ["0", "-2"])
def test_max_concurrency_below_one(tmp: Path, value: str) -> None:
    config = write_config(tmp, refused_url(), max_concurrency=int(value))
    one_error(
        run_ranking(tmp, str(tmp / "data"), config=config),
        "config.yaml",
        "max_concurrency",
        "greater than or equal to 1",
    )


def test_query_mode_override_is_validated(tmp: Path) -> None:
    one_error(
        run_ranking(tmp, str(tmp / "data"), "--query-mode", "magic"),
        "command-line options",
        "ranking.query_mode",
    )
    assert not (tmp / "runs").exists()


def test_write_resume_with_binary_outline(tmp: Path) -> None:
    (tmp / "outline.md").write_bytes(b"\x89PNG\r\n\x1a\n\xff\x00")
    config = write_config(tmp, refused_url())
    result = cli(
        tmp,
        "write",
        "--resume",
        "--out",
        str(tmp / "out"),
        "--dataset",
        str(tmp / "data"),
        "--config",
        str(config),
        "--outline",
        str(tmp / "outline.md"),
    )
    one_error(result, "outline.md: not UTF-8 text")


def test_judge_meta_with_non_utf8_csv(tmp: Path) -> None:
    (tmp / "human.csv").write_bytes("item,criterion,score\nа,б,1\n".encode("cp1251"))
    (tmp / "verdicts.jsonl").write_text("", "utf-8")
    result = cli(tmp, "judge", "meta", str(tmp / "verdicts.jsonl"), str(tmp / "human.csv"))
    one_error(result, "human.csv: not UTF-8 text")


def test_run_directory_in_use(tmp: Path) -> None:
    from ruwikibench.storage.runlock import run_lock

    with run_lock(tmp / "runs" / "r"):
        result = run_ranking(tmp, str(tmp / "data"), "--run-id", "r", "--out", str(tmp / "runs"))
    one_error(result, "in use by process", str(os.getpid()), "run.lock")


def test_outline_all_modes_run_when_every_unit_of_one_fails(tmp: Path) -> None:
    """`run outline --mode all` runs the three modes although each fails entirely, then exits 1; each mode's
    failure line is one line, even when the exception text has several."""
    config = write_config(tmp, refused_url())
    result = cli(
        tmp, "run", "outline", "--dataset", str(tmp / "data"), "--config", str(config), "--out", "runs"
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 3 and all("units failed" in line for line in errors), result.stderr
    assert len({p.name for p in (tmp / "runs").iterdir()}) == 3
