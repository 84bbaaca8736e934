"""The run-directory lock (``run.lock``), below every layer that writes run directories (runner, writer,
judges): a second process on the same directory stops with :class:`RunDirLocked` naming the holder's pid. The
lock is an ``flock`` on the file, so the kernel releases it when its holder dies."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK = "run.lock"


class RunDirLocked(RuntimeError):
    """Another live process is writing this run directory."""

    def __init__(self, path: Path, pid: int | None) -> None:
        self.path, self.pid = path, pid
        holder = f"process {pid}" if pid else "another process"
        super().__init__(
            f"{path}: in use by {holder} ({LOCK}); wait for it to finish or choose another --run-id"
        )


@contextmanager
def run_lock(directory: str | Path) -> Iterator[None]:
    """Hold ``directory/run.lock`` for the duration (created with the directory if needed)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _pid_in(fd)
        os.close(fd)
        raise RunDirLocked(directory, holder) from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _pid_in(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip())
    except (OSError, ValueError):
        return None
