"""Shared fixtures: the writer fixture's small Russian dataset and a scoring context with a hash embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Dataset
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.stage.context import StageContext
from tests.graphs.writer_fixture import HashEmbedder, make_dataset


@pytest.fixture()
def dataset() -> Dataset:
    return make_dataset()


@pytest.fixture()
def context(dataset: Dataset) -> StageContext:
    config = RunConfig(name="external", models={})
    return StageContext(
        config=config, llm=LLM({}, 2), embedder=HashEmbedder(), prompts=PromptLibrary(), dataset=dataset
    )


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
        encoding="utf-8",
    )
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
