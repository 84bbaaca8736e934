"""Atomic, durable file replacement: write a temporary file, fsync it, rename it over the target, fsync the
directory (so the rename itself survives a crash of the machine, not only of the process)."""

from __future__ import annotations

import os
from pathlib import Path

from ruwikibench.conf.secrets import redact


def fsync_dir(path: str | Path) -> None:
    """fsync a directory: makes the renames and creations inside it durable (a no-op where directories cannot
    be opened, as on Windows)."""
    try:
        fd = os.open(str(path), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a directory; the rename stands
        pass
    finally:
        os.close(fd)


def replace_durably(tmp: str | Path, target: str | Path) -> None:
    """Rename ``tmp`` over ``target`` and fsync the directory holding it."""
    target = Path(target)
    os.replace(tmp, target)
    fsync_dir(target.parent)


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` (text as UTF-8, secrets redacted) atomically and durably."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    raw = redact(data).encode("utf-8") if isinstance(data, str) else data
    with open(tmp, "wb") as handle:
        handle.write(raw)
        handle.flush()
        os.fsync(handle.fileno())
    replace_durably(tmp, path)
