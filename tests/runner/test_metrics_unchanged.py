"""The figures of a run do not drift: a whole three-stage run on the fixture corpus (deterministic fake model
and embeddings) must reproduce the metrics stored in tests/fixtures/runner/sample_metrics.json, which were
written by the pipeline before the executor and embed-once changes. Regenerate the file only for a deliberate
change of a metric, and say why in the commit:

    python -m tests.runner.test_metrics_unchanged --write
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ruwikibench.storage.results import METRICS_FORMAT_VERSION, read_metrics, stage_dicts
from tests.runner.sample_run import run_sample

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "runner" / "sample_metrics.json"


def _differences(expected: Any, got: Any, path: str = "") -> list[str]:
    if isinstance(expected, dict) and isinstance(got, dict):
        out = [f"{path}/{k}: missing" for k in expected if k not in got]
        out += [f"{path}/{k}: new" for k in got if k not in expected]
        for key in expected.keys() & got.keys():
            out += _differences(expected[key], got[key], f"{path}/{key}")
        return out
    if isinstance(expected, float) and isinstance(got, (int, float)):
        return (
            []
            if math.isclose(expected, got, rel_tol=1e-9, abs_tol=1e-12)
            else [f"{path}: {expected} -> {got}"]
        )
    return [] if expected == got else [f"{path}: {expected!r} -> {got!r}"]


async def test_sample_run_metrics_unchanged(tmp_path, monkeypatch) -> None:
    rundir = await run_sample(tmp_path, monkeypatch)
    written = json.loads(rundir.file("metrics.json").read_text(encoding="utf-8"))
    assert written["format_version"] == METRICS_FORMAT_VERSION
    metrics = stage_dicts(read_metrics(rundir))
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))  # written before metrics.json had a version
    assert set(expected) == {"ranking", "outline", "sections"}
    assert _differences(expected, metrics) == []


def test_differences_catch_a_changed_figure() -> None:
    expected = {"a": {"mean": 0.5, "n": 2}}
    assert _differences(expected, {"a": {"mean": 0.5000001, "n": 2}}) == ["/a/mean: 0.5 -> 0.5000001"]
    assert _differences(expected, {"a": {"mean": 0.5, "n": 3}}) == ["/a/n: 2 -> 3"]
    assert _differences(expected, {"a": {"mean": 0.5, "n": 2}}) == []


def _write() -> None:
    import asyncio
    import tempfile

    import pytest

    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        rundir = asyncio.run(run_sample(Path(tmp), patch))
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        FIXTURE.write_text(rundir.file("metrics.json").read_text(encoding="utf-8"), encoding="utf-8")
    print(f"wrote {FIXTURE}")


if __name__ == "__main__":
    import sys

    if "--write" in sys.argv:
        _write()
