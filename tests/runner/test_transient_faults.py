"""A fault of the machine (a full disk, an I/O error of the cache) while baselines or floors are computed is
never kept as a result: no "baseline failed: OperationalError" row, no stamp saying the floors are current;
the next run computes them again and ends with the files of an undisturbed run."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from ruwikibench.aggregation import derived
from ruwikibench.aggregation.baselines import (
    BASELINES_FILE,
    STAMP_FILE,
    UNIT_BASELINES_FILE,
    derived_current,
    score_baseline,
)
from ruwikibench.runner.stage import get_stage
from ruwikibench.stage.contract import Unit
from tests.runner.sample_run import run_sample
from tests.runner.test_baselines_run import _context


class Failing:
    name, reads_output = "failing", False

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def build(self, unit: Unit, output: dict[str, Any], context: Any) -> dict[str, Any]:
        raise self.exc


def test_a_transient_fault_is_raised_and_any_other_failure_is_an_excluded_row() -> None:
    stage, unit = get_stage("outline"), Unit(stage="outline", article="a", unit_id="u", input={})
    for fault in (sqlite3.OperationalError("disk I/O error"), OSError(28, "No space left on device")):
        with pytest.raises(type(fault)):
            score_baseline(stage, Failing(fault), unit, {}, None)  # type: ignore[arg-type]
    rows, made = score_baseline(stage, Failing(ValueError("no heading")), unit, {}, None)  # type: ignore[arg-type]
    assert made is None and rows[0]["excluded"] == "baseline failed: ValueError: no heading"


async def test_faults_in_the_finish_leave_no_result_and_the_next_finish_recomputes(
    tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    rundir = await run_sample(tmp_path, monkeypatch)
    context = _context(rundir)
    clean = {name: rundir.file(name).read_bytes() for name in (BASELINES_FILE, "floors.jsonl")}
    assert derived_current(rundir)

    rundir.file(UNIT_BASELINES_FILE).unlink()  # every unit's baselines scored by the finish
    outline = type(get_stage("outline"))  # each stage declares its baselines (Stage.baselines)
    real = outline.baselines
    monkeypatch.setattr(outline, "baselines", (Failing(sqlite3.OperationalError("disk I/O error")), *real))
    with pytest.raises(sqlite3.OperationalError):
        derived.compute_floors_and_baselines(rundir, context)
    stored = rundir.file(UNIT_BASELINES_FILE)
    assert not stored.exists() or "OperationalError" not in stored.read_text(encoding="utf-8")
    monkeypatch.setattr(outline, "baselines", real)

    def floors_fail(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(derived, "floors_of_sides", floors_fail)
    derived.compute_floors_and_baselines(rundir, context)  # a floor that fails is a warning, not a stamp
    assert json.loads(rundir.file(STAMP_FILE).read_text(encoding="utf-8"))["inputs_sha256"] is None
    assert not derived_current(rundir)

    monkeypatch.undo()
    derived.compute_floors_and_baselines(rundir, context)
    assert derived_current(rundir)
    assert {name: rundir.file(name).read_bytes() for name in clean} == clean
