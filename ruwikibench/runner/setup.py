"""Build the StageContext of a run from a config and a dataset."""

from __future__ import annotations

from pathlib import Path

from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Dataset
from ruwikibench.models.embeddings import make_embedder
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.stage.context import StageContext


def build_context(
    config: RunConfig, dataset: Dataset | None, dataset_dir: Path | None = None, *, with_llm: bool = True
) -> StageContext:
    """Live services for a run. ``with_llm=False`` gives an LLM with no backend (re-scoring makes no call).

    ``dataset_dir`` is the processed dataset directory: stored reference queries are read from it. The entity
    metrics' NER results are kept in the config's cache folder from now on (:func:`entities.use_cache_dir`).
    """
    from ruwikibench.evaluators import entities

    entities.use_cache_dir(config.cache_path)
    llm = LLM.from_config(config) if with_llm else LLM({}, config.max_concurrency)
    return StageContext(
        config=config,
        llm=llm,
        embedder=make_embedder(config.embedder, config.cache_path),
        prompts=PromptLibrary(config.prompts_dir),
        dataset=dataset,
        dataset_dir=dataset_dir,
    )
