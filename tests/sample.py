"""Where the shared sample data lives, for every test that reads it (skipped when it is absent).

``$RUWIKIBENCH_SAMPLE`` names the Ruwiki sample (its folder or its JSON file); the other shared folders
(``web`` …) are looked up beside it. Without it, ``shared/data/<name>`` beside the repository or one of its
parents (worktrees) is used.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE_FILE = "ruwikibench_articles.json"
MISSING = "real Ruwiki sample not found (set RUWIKIBENCH_SAMPLE or place shared/data/ruwiki beside the repo)"


def shared_data(name: str = "ruwiki") -> Path | None:
    """The folder ``shared/data/<name>``, or None."""
    env = os.environ.get("RUWIKIBENCH_SAMPLE")
    if env:
        ruwiki = Path(env).parent if Path(env).is_file() else Path(env)
        folder = ruwiki if name == "ruwiki" else ruwiki.parent / name
        return folder if folder.is_dir() else None
    for ancestor in REPO.parents:
        candidate = ancestor / "shared" / "data" / name
        if candidate.is_dir():
            return candidate
    return None


def sample_dir() -> Path | None:
    """The Ruwiki sample folder (holding :data:`SAMPLE_FILE`), or None."""
    found = shared_data("ruwiki")
    return found if found is not None and (found / SAMPLE_FILE).is_file() else None


def sample_json_or_skip() -> Path:
    """The sample's JSON file; skips the calling test when it is absent."""
    found = sample_dir()
    if found is None:
        pytest.skip(MISSING)
    return found / SAMPLE_FILE


@lru_cache(maxsize=1)
def _sample_dataset(path: Path):  # -> Dataset
    from ruwikibench.corpus_builder import import_ruwikibench_json

    return import_ruwikibench_json(path).dataset


def sample_dataset_or_skip():  # -> Dataset
    """The imported sample (imported once per test process); skips when absent."""
    return _sample_dataset(sample_json_or_skip())
