"""The files a piece of plug-in code is made of, each with its sha256: every file of the top-level package
that defines it (its modules, the helpers they import directly or through each other, its package data) and
every file its installed distribution put in place (the distribution's ``RECORD``, through
:mod:`importlib.metadata`).

Paths are relative to the folder holding the top-level package (``my_pkg/helpers.py``, as a ``RECORD``
names them), so moving a checkout or a virtual environment keeps them. Left out: ``__pycache__``, hidden files
and folders (VCS folders, tool caches), compiled ``.pyc``/``.pyo`` files, editor backups, a distribution's
metadata folder and the scripts it installs elsewhere. A file's hash is kept for the process, keyed by its
inode, size and change times; a file written in the last two seconds is hashed again on every call (two writes
within one tick of the file system's clock would otherwise look the same).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import time
from functools import lru_cache
from importlib.metadata import Distribution, PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

SKIPPED_DIRS = frozenset({"__pycache__"})
SKIPPED_SUFFIXES = (".pyc", ".pyo", ".swp", "~")
RECENT_NS = 2_000_000_000
"""A file changed this recently is not served from the hash cache."""

_hashes: dict[tuple[str, int, int, int, int], str] = {}


def file_digest(path: Path) -> str | None:
    """sha256 of the file's bytes (None when it cannot be read), from the process's cache when unchanged."""
    try:
        stat = path.stat()
    except OSError:
        return None
    key = (str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    if key in _hashes:
        return _hashes[key]
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
    if time.time_ns() - max(stat.st_mtime_ns, stat.st_ctime_ns) > RECENT_NS:
        _hashes[key] = digest
    return digest


def kept(name: str) -> bool:
    """A file or folder name that is part of the code (not a cache, VCS folder, hidden file or backup)."""
    return not name.startswith(".") and name not in SKIPPED_DIRS and not name.endswith(SKIPPED_SUFFIXES)


def folder_files(folder: Path, base: Path) -> dict[str, Path]:
    """Every kept file under ``folder``, by its path relative to ``base`` (POSIX separators), sorted: its
    Python modules, and its data files inside a regular package (a folder with ``__init__.py``, or below one),
    so a namespace package's folder contributes its modules, not whatever else lies there (run outputs)."""
    found: dict[str, Path] = {}
    packages: set[str] = set()
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if kept(d) and not d.endswith((".egg-info", ".dist-info")))
        if "__init__.py" in files or os.path.dirname(root) in packages:
            packages.add(root)
        for name in files:
            if kept(name) and (root in packages or name.endswith(".py")):
                path = Path(root) / name
                found[path.relative_to(base).as_posix()] = path
    return dict(sorted(found.items()))


def top_level_files(module: str, defining_file: str | None) -> dict[str, Path]:
    """The files of the top-level package of ``module``: the folder of a package that holds
    ``defining_file`` (of a namespace package, only that portion), or the one file of a top-level module."""
    top = module.split(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return {}
    locations = [Path(p) for p in spec.submodule_search_locations or []]
    if not locations:
        origin = Path(spec.origin) if spec.origin and spec.origin not in ("built-in", "frozen") else None
        return {origin.name: origin} if origin is not None and origin.is_file() else {}
    if defining_file is not None:
        defining = Path(defining_file).resolve()
        holding = [p for p in locations if p.resolve() in defining.parents]
        locations = holding or locations
    found: dict[str, Path] = {}
    for folder in locations:
        found |= folder_files(folder, folder.parent)
    return found


def distribution_files(dist: Distribution) -> dict[str, Path]:
    """The files the installed distribution put in place (its ``RECORD``), code and data: not its metadata
    folder, not scripts installed outside the site folder, not an editable install's finder or ``.pth``. A
    distribution without a ``RECORD`` (an old ``setup.py develop`` egg-info, whose ``SOURCES.txt`` lists
    source paths, not installed ones) gives none: its package folder is walked instead."""
    found: dict[str, Path] = {}
    if dist.read_text("RECORD") is None:
        return found
    for entry in dist.files or []:
        parts = entry.parts
        if not parts or parts[0] == ".." or parts[0].endswith((".dist-info", ".egg-info")):
            continue
        if parts[0].startswith("__editable__") or (len(parts) == 1 and entry.suffix == ".pth"):
            continue
        if not all(kept(part) for part in parts):
            continue
        found[entry.as_posix()] = Path(str(dist.locate_file(entry)))
    return found


@lru_cache(maxsize=8)
def _top_level_distributions(search_path: tuple[str, ...]) -> dict[str, list[str]]:
    return dict(packages_distributions())


def distributions_of(module: str) -> list[Distribution]:
    """The installed distributions that provide the top-level package of ``module`` (for the current
    ``sys.path``)."""
    found = []
    for name in _top_level_distributions(tuple(sys.path)).get(module.split(".")[0], []):
        try:
            found.append(distribution(name))
        except PackageNotFoundError:
            continue
    return found


def code_files(module: str, defining_file: str | None, dist: Distribution | None) -> dict[str, str]:
    """Relative path -> sha256 of every file of the top-level package of ``module`` and of ``dist`` (the
    installed distribution holding ``defining_file``, if any); files that cannot be read are left out."""
    paths = top_level_files(module, defining_file)
    if dist is not None:
        paths = distribution_files(dist) | paths
    hashed = {name: file_digest(path) for name, path in sorted(paths.items())}
    return {name: digest for name, digest in hashed.items() if digest is not None}
