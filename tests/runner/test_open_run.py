"""The one way a command opens a run directory (runner/open_run.py): id from a RunKey, lock held, spec checked
and written, a directory created for a command that then failed removed again."""

from __future__ import annotations

from pathlib import Path

import pytest

from ruwikibench.runner.open_run import RunKey, open_run, run_id, run_path
from ruwikibench.storage.rundir import RunDir, RunDirLocked, run_lock
from ruwikibench.storage.runspec import RunSpec, read_spec


def test_run_id_is_the_prefix_and_the_hash_of_the_parts() -> None:
    key = RunKey("cfg", [{"b": 1, "a": [2, None]}, "d"])
    assert run_id(key) == run_id(RunKey("cfg", [{"a": [2, None], "b": 1}, "d"]))  # key order does not matter
    assert run_id(key).startswith("cfg-") and len(run_id(key)) == len("cfg-") + 8
    assert run_id(RunKey("cfg", ["d"])) != run_id(key)
    assert run_path(Path("out"), "named", key) == Path("out/named") and run_path(
        Path("out"), None, key
    ).name == run_id(key)


def test_open_run_holds_the_lock_and_writes_the_spec(tmp_path) -> None:
    path = tmp_path / "r-1"
    with open_run(path) as opened:
        assert opened.previous_spec() is None
        with pytest.raises(RunDirLocked), run_lock(path):
            pass
        opened.write_spec(RunSpec(run_id="r-1", options={"stages": ["outline"]}))  # type: ignore[arg-type]
    spec = read_spec(path)
    assert spec.run_id == "r-1" and spec.stages == ["outline"] and spec.format_version == 1


def test_a_refused_resume_keeps_the_run_and_a_failed_fresh_one_leaves_nothing(tmp_path) -> None:
    def refuse(rundir: RunDir, old: RunSpec, new: RunSpec) -> None:
        raise ValueError(f"{rundir.path.name}: {old.run_id} is not {new.run_id}")

    with open_run(tmp_path / "kept") as opened:
        opened.write_spec(RunSpec(run_id="old"))
    with pytest.raises(ValueError, match="kept: old is not new"), open_run(tmp_path / "kept") as opened:
        opened.check_resume(RunSpec(run_id="new"), refuse)
    assert read_spec(tmp_path / "kept").run_id == "old"
    with pytest.raises(RuntimeError), open_run(tmp_path / "fresh"):
        raise RuntimeError("bad input")
    assert not (tmp_path / "fresh").exists()
