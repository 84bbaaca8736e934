"""The LangGraph context every stage graph receives (``context_schema``), read in nodes via ``Runtime``."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Dataset
from ruwikibench.models.embeddings import Embedder
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.retrieval.bm25 import IndexShelf
from ruwikibench.stage.registry import stage_options


@dataclass
class StageContext:
    """Run config plus live services. Built once per run by the runner (or by a test with a fake LLM)."""

    config: RunConfig
    llm: LLM
    embedder: Embedder
    prompts: PromptLibrary
    dataset: Dataset | None = None
    dataset_dir: Path | None = None  # where the dataset (and its stored reference queries) lives
    indexes: IndexShelf = field(default_factory=IndexShelf)  # BM25 indexes loaded by this run

    def with_profile(self, profile: str) -> StageContext:
        """The same services with the config under ``profile`` (see :meth:`RunConfig.with_profile`)."""
        config = self.config.with_profile(profile)
        return self if config is self.config else replace(self, config=config)

    def stage_options(self, stage: str) -> Any:
        """The options of a stage that declares an ``options_model``: the run config's
        ``stage_options.<stage>`` validated by it (defaults where the config is silent); None for a stage
        without options."""
        return stage_options(self.config, stage)
