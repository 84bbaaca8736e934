"""Exit statuses: 0 no unit failed, 1 nothing that needed the endpoint succeeded, 3 a partial run."""

from __future__ import annotations

from pathlib import Path

from ruwikibench.runner.status import combined, exit_status, run_status
from ruwikibench.storage.rundir import RunDir


def test_exit_status_and_combined() -> None:
    assert exit_status(0, 0) == 0 and exit_status(0, 5) == 0
    assert exit_status(3, 0) == 1 and exit_status(3, 1) == 3
    assert combined([0, 0]) == 0 and combined([1, 1]) == 1 and combined([1, 0]) == 3 and combined([3]) == 3


def _unit(rundir: RunDir, unit: str, calls: int) -> None:
    rundir.append(
        "nodes.jsonl",
        {"stage": "sections", "article": "A", "unit": unit, "node": "write", "llm_calls": calls},
    )
    rundir.append(
        "outputs.jsonl", {"stage": "sections", "article": "A", "unit": unit, "input": {}, "output": {}}
    )


def test_units_that_made_no_llm_call_do_not_make_a_failed_run_partial(tmp_path: Path) -> None:
    """The endpoint refused every request: the sections without snippets (no LLM call) succeeded anyway; that
    is exit 1, not 0 or 3. Once one unit that asked the endpoint succeeded, it is a partial run (3)."""
    rundir = RunDir(tmp_path / "r")
    rundir.create()
    _unit(rundir, "no-snippets", 0)
    rundir.append(
        "errors.jsonl",
        {"stage": "sections", "article": "A", "unit": "s1", "reason": "refused", "attempts": 1},
    )
    assert run_status(rundir) == 1
    _unit(rundir, "s2", 2)
    assert run_status(rundir) == 3
    _unit(rundir, "s1", 1)  # the failed unit ran again and succeeded
    assert run_status(rundir) == 0


def test_units_whose_scoring_failed_did_not_succeed(tmp_path: Path) -> None:
    """A unit that asked the endpoint and has an output but whose score() failed is a failed unit: when every
    unit is such, the status is 1, not 3; once one of them is scored, the run is partial."""
    rundir = RunDir(tmp_path / "r")
    rundir.create()
    for unit in ("s1", "s2"):
        _unit(rundir, unit, 2)
        rundir.append(
            "errors.jsonl",
            {"stage": "sections", "article": "A", "unit": unit, "reason": "score: broke", "attempts": 0},
        )
    assert run_status(rundir) == 1
    rundir.append(
        "results.jsonl", {"stage": "sections", "article": "A", "unit": "s2", "item": "s2", "metrics": {}}
    )
    assert run_status(rundir) == 3
