"""Fixtures for the judge tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ruwikibench.runner.stage import GeneratedText
from tests.evaluators.judges.helpers import write_run


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    def make(run_id: str, texts: list[GeneratedText], **kwargs: object) -> Path:
        return write_run(tmp_path / run_id, run_id, texts, **kwargs)  # type: ignore[arg-type]

    return make
