"""Fixtures for the corpus builder tests: the real Ruwiki sample (skipped when absent) and a tiny synthetic page."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE_FILE = "ruwikibench_articles.json"


def sample_dir() -> Path | None:
    """RUWIKIBENCH_SAMPLE, else the first ``shared/data/ruwiki`` beside the repository or one of its parents."""
    env = os.environ.get("RUWIKIBENCH_SAMPLE")
    if env:
        path = Path(env)
        path = path.parent if path.is_file() else path
        return path if (path / SAMPLE_FILE).is_file() else None
    for parent in REPO.parents:
        candidate = parent / "shared" / "data" / "ruwiki"
        if (candidate / SAMPLE_FILE).is_file():
            return candidate
    return None


@pytest.fixture(scope="session")
def sample_json() -> Path:
    found = sample_dir()
    if found is None:
        pytest.skip("real Ruwiki sample not found (set RUWIKIBENCH_SAMPLE or place shared/data/ruwiki beside the repo)")
    return found / SAMPLE_FILE


@pytest.fixture(scope="session")
def sample_records(sample_json: Path) -> list[dict[str, Any]]:
    return json.loads(sample_json.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def sample_html(sample_records: list[dict[str, Any]]) -> dict[str, str]:
    return {r["article_name"]: r["html"] for r in sample_records}


@pytest.fixture(scope="session")
def imported(sample_json: Path):  # type: ignore[no-untyped-def]
    from ruwikibench.corpus_builder.ruwikibench_json import import_ruwikibench_json

    return import_ruwikibench_json(sample_json)
