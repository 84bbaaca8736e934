"""The writer's session.json is replaced atomically: a write that dies half-way (here: the disk fills after
half the bytes) leaves the previous session readable by `write --resume`, never a torn file."""

from __future__ import annotations

import builtins
import io
from pathlib import Path
from typing import Any, Self

import pytest

from ruwikibench.writer.run import SESSION, Session, read_session, write_session


class HalfWriter:
    """A file that takes half of what it is given, then fails as a full disk does."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def write(self, data: Any) -> int:
        self.handle.write(data[: len(data) // 2])
        self.handle.flush()
        raise OSError(28, "No space left on device")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle, name)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()


def test_a_session_write_that_dies_half_way_leaves_the_previous_one(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    before = Session(title="Москва", thread_id="t1", status="awaiting_outline", llm_calls=12)
    write_session(tmp_path, before)
    real_open = builtins.open

    def failing_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(file, mode, *args, **kwargs)
        return HalfWriter(handle) if SESSION in str(file) and "w" in mode else handle

    monkeypatch.setattr(builtins, "open", failing_open)
    monkeypatch.setattr(io, "open", failing_open)
    with pytest.raises(OSError, match="No space left"):
        write_session(tmp_path, before.model_copy(update={"status": "done", "llm_calls": 40}))
    monkeypatch.undo()
    assert read_session(tmp_path) == before
    write_session(tmp_path, before.model_copy(update={"status": "done"}))
    assert read_session(tmp_path).status == "done"
