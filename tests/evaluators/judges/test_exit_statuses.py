"""Exit statuses of `judge criteria`, `judge pairwise` and `judge citations` through the CLI, against a fake
OpenAI-compatible judge on 127.0.0.1: 0 when every verdict was given, 3 when some requests failed (the server
answers 500 to the ones of one text), 1 when every request failed (nothing listens on the judge's port)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ruwikibench.cli import app
from tests.cli.test_input_errors import refused_url
from tests.evaluators.judges.helpers import section, write_run
from tests.evaluators.judges.test_citations_run import make_run as citations_run
from tests.evaluators.judges.test_citations_run import responder as support
from tests.fake_openai import fake_openai_server

runner = CliRunner()
FAILING = "Текст номер 1"  # the requests about this text fail in the partial runs
CITED = "1991"  # the support checks naming it (source [2] shows it) fail in the partial run


def verdict(messages: list[dict[str, str]]) -> str:
    prompt = messages[-1]["content"]
    return "[RESULT] 2 [END]" if "### Критерий оценки:" in prompt else "[[6 5]]"


def mentions(text: str) -> Callable[[list[dict[str, str]]], bool]:
    return lambda messages: text in messages[-1]["content"]


@contextmanager
def judge_url(case: str, responder: Callable, failing: str) -> Iterator[str]:  # type: ignore[type-arg]
    """The judge's base URL: a server answering everything (ok), failing the requests naming ``failing``
    (partial), or a port nothing listens on (refused)."""
    if case == "refused":
        yield refused_url()
        return
    with fake_openai_server(responder, fail_if=mentions(failing) if case == "partial" else None) as url:
        yield url


def judge_config(tmp: Path, url: str, role: str = "judge") -> dict:
    return {
        "name": "j",
        "cache_dir": str(tmp / f"cache-{url.rsplit(':', 1)[1].split('/')[0]}"),
        "models": {role: {"name": "served-judge", "endpoints": [url], "max_retries": 0, "timeout": 5}},
    }


def texts(word: str) -> list:  # type: ignore[type-arg]
    return [section(f"s{i}", f"{word} Текст номер {i}.") for i in range(3)]


EXPECTED = {"ok": 0, "partial": 3, "refused": 1}


def check(result, case: str, failed: str) -> None:  # type: ignore[no-untyped-def]
    assert result.exit_code == EXPECTED[case], result.output + repr(result.exception)
    assert "Traceback" not in result.output
    if case == "ok":
        assert "verdicts failed" not in result.output
    else:
        assert f"error: {failed} verdicts failed" in " ".join(result.output.split()), result.output


@pytest.mark.parametrize("case", ["ok", "partial", "refused"])
def test_judge_criteria_exit_status(tmp_path: Path, case: str) -> None:
    with judge_url(case, verdict, FAILING) as url:
        run = write_run(tmp_path / "run", "run", texts("Раздел."), config=judge_config(tmp_path, url))
        result = runner.invoke(app, ["judge", "criteria", str(run), "--only", "literacy"])
    check(result, case, {"ok": "", "partial": "1 of 3", "refused": "3 of 3"}[case])
    statuses = [
        json.loads(line)["status"] for line in (run / "judge_criteria.jsonl").read_text().splitlines()
    ]
    assert statuses.count("error") == {"ok": 0, "partial": 1, "refused": 3}[case]


@pytest.mark.parametrize("case", ["ok", "partial", "refused"])
def test_judge_pairwise_exit_status(tmp_path: Path, case: str) -> None:
    with judge_url(case, verdict, FAILING) as url:
        run_a = write_run(tmp_path / "a", "run-a", texts("Коротко."), config=judge_config(tmp_path, url))
        run_b = write_run(tmp_path / "b", "run-b", texts("Длинно и подробно."), config=None)
        result = runner.invoke(app, ["judge", "pairwise", str(run_a), str(run_b)])
    check(result, case, {"ok": "", "partial": "1 of 3", "refused": "3 of 3"}[case])


@pytest.mark.parametrize("case", ["ok", "partial", "refused"])
def test_judge_citations_exit_status(tmp_path: Path, case: str) -> None:
    """The article of test_citations_run: three support requests (one per claim and source); in the partial
    run the two that show source [2] fail."""
    with judge_url(case, support, CITED) as url:
        run = citations_run(tmp_path, url)
        result = runner.invoke(app, ["judge", "citations", str(run)])
    check(result, case, {"ok": "", "partial": "2 of 3", "refused": "3 of 3"}[case])
