"""Fixtures for the corpus builder tests: the real Ruwiki sample (skipped when absent) and a tiny synthetic
page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.sample import sample_json_or_skip


@pytest.fixture(scope="session")
def sample_json() -> Path:
    return sample_json_or_skip()


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
