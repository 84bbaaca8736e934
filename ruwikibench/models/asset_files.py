"""Model files in the cache (``$RUWIKIBENCH_CACHE`` or ``~/.cache/ruwikibench``): where they live, their
sha256, and the small ``.sha256`` stamp (size, mtime, digest) that spares re-hashing a large file on every
start."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_CHUNK = 8 << 20


class LocalAssetError(RuntimeError):
    pass


def cache_root() -> Path:
    """``$RUWIKIBENCH_CACHE`` or ``~/.cache/ruwikibench``."""
    return Path(os.environ.get("RUWIKIBENCH_CACHE") or "~/.cache/ruwikibench").expanduser()


def stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def stamp(path: Path, digest: str) -> dict[str, object]:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
