"""The LangGraph context every stage graph receives (``context_schema``), read in nodes via ``Runtime``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ruwikibench.config import RunConfig
from ruwikibench.dataset import Dataset
from ruwikibench.models.embeddings import Embedder
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary


@dataclass
class StageContext:
    """Run config plus live services. Built once per run by the runner (or by a test with a fake LLM)."""

    config: RunConfig
    llm: LLM
    embedder: Embedder
    prompts: PromptLibrary
    dataset: Dataset | None = None
    dataset_dir: Path | None = None  # where the dataset (and its stored reference queries) lives
