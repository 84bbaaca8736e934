"""Every atomic rename of a run file is followed by an fsync of its directory (the rename survives a power
cut)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ruwikibench.storage.jsonl import rewrite_jsonl
from ruwikibench.storage.rundir import RunDir


@pytest.fixture()
def events(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            seen.append(("fsync_dir", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: str | Path, dst: str | Path) -> None:
        real_replace(src, dst)
        seen.append(("replace", str(dst)))

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return seen


def test_rewrite_and_write_json_fsync_the_directory_after_the_rename(tmp_path: Path, events) -> None:  # type: ignore[no-untyped-def]
    rundir = RunDir(tmp_path / "r")
    rundir.create()
    rewrite_jsonl(rundir.file("floors.jsonl"), [{"a": 1}])
    rundir.write_json("metrics.json", {"m": 1})
    directory = str(rundir.path.resolve())
    for name in ("floors.jsonl", "metrics.json"):
        at = events.index(("replace", str(rundir.file(name))))
        assert ("fsync_dir", directory) in events[at + 1 :], events
    assert rundir.read_json("metrics.json") == {"m": 1} and not list(rundir.path.glob("*.tmp"))
