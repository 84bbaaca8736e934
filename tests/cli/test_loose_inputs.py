"""Loose inputs are refused in one line, exit 2: `report --view bogus` (the allowed views named), `report
--out` pointing at a run directory (its own report.md would be overwritten), and a RuWikiBench JSON with two
entries of the same title (imported as "Title (2)" only with --rename-duplicates)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ruwikibench.corpus_builder.store import save_dataset
from tests.cli.test_input_errors import cli
from tests.corpus_builder.test_ruwikibench_json import record
from tests.fake_openai import StubServer, serving
from tests.graphs.writer_fixture import make_dataset


def _one_error(result) -> str:  # type: ignore[no-untyped-def]
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import yaml

    tmp = tmp_path_factory.mktemp("loose")
    save_dataset(make_dataset(), tmp / "data")
    stub = StubServer(answer=lambda body: "Да", synthetic_logprobs=False)
    with serving(stub):
        model = {"name": "fake", "endpoints": [stub.base_url], "max_retries": 0, "timeout": 10}
        config = {"name": "l", "models": {"writer": model}, "ranking": {"query_mode": "title"}}
        config["cache_dir"] = str(tmp / "cache")
        (tmp / "c.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        result = cli(tmp, "run", "ranking", "--dataset", "data", "--config", "c.yaml", "--run-id", "r")
    assert result.returncode == 0, result.stdout + result.stderr
    return tmp / "runs" / "r"


def test_report_view_must_be_a_view(run_dir: Path) -> None:
    line = _one_error(cli(run_dir.parent.parent, "report", "runs/r", "--view", "bogus", "--out", "cmp"))
    assert line == "error: --view bogus: not a view; the views are failures_excluded, failures_as_zero"
    assert not (run_dir.parent.parent / "cmp").exists()


@pytest.mark.parametrize("out", ["runs/r", "runs/r/cmp"])
def test_report_out_may_not_be_a_run_directory(run_dir: Path, out: str) -> None:
    report = (run_dir / "report.md").read_bytes()
    line = _one_error(cli(run_dir.parent.parent, "report", "runs/r", "--out", out))
    assert line == f"error: --out {out}: inside the run directory runs/r; write the report elsewhere"
    assert (run_dir / "report.md").read_bytes() == report and not (run_dir / "cmp").exists()


def test_report_out_may_not_be_another_run(run_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "spec.json").write_text("{}", encoding="utf-8")
    line = _one_error(cli(run_dir.parent.parent, "report", "runs/r", "--out", str(other)))
    assert line == f"error: --out {other}: a run directory (it has spec.json); write the report elsewhere"


def _duplicates(tmp: Path) -> Path:
    path = tmp / "dup.json"
    records = [record("Python"), record("Другая"), record("Python")]
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    return path


def test_duplicate_titles_are_refused_at_import_unless_renamed(tmp_path: Path) -> None:
    _duplicates(tmp_path)
    line = _one_error(cli(tmp_path, "corpus", "import", "dup.json", "--out", "ds", "-q"))
    assert line == (
        "error: dup.json: article 'Python': entries #0 and #2 have this title; remove one, or import with "
        "--rename-duplicates (the later one becomes 'Python (2)')"
    )
    assert not (tmp_path / "ds").exists()
    renamed = cli(tmp_path, "corpus", "import", "dup.json", "--out", "ds", "-q", "--rename-duplicates")
    assert renamed.returncode == 0, renamed.stderr
    names = [json.loads(line)["name"] for line in (tmp_path / "ds" / "articles.jsonl").open(encoding="utf-8")]
    assert names == ["Python", "Другая", "Python (2)"]


def test_a_run_on_a_json_with_duplicate_titles_stops_in_one_line(tmp_path: Path) -> None:
    from tests.cli.test_input_errors import refused_url, write_config

    _duplicates(tmp_path)
    config = write_config(tmp_path, refused_url())
    line = _one_error(cli(tmp_path, "run", "ranking", "--dataset", "dup.json", "--config", str(config)))
    assert line.startswith("error: dup.json: article 'Python': entries #0 and #2 have this title"), line
