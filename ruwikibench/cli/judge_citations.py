"""The helpers of `ruwikibench judge citations` and `judge citations-meta` (cli/judge.py): the config naming
the support model, the dataset, the support checks of one run directory, the cosine measure."""

from __future__ import annotations

from pathlib import Path


def citations_config(run_dir: Path, judge_config: Path | None):
    """The config naming the support model: --judge-config, else the run's spec.json, else the article's."""
    import json

    from ruwikibench.conf.config import RunConfig
    from ruwikibench.conf.loader import load_config
    from ruwikibench.evaluators.judges.rundir import RunError
    from ruwikibench.storage.runspec import read_spec

    if judge_config is not None:
        return load_config(judge_config)
    spec = run_dir / "spec.json"
    if spec.is_file() and read_spec(spec).config is not None:
        return read_spec(spec).run_config(spec)
    article = run_dir / "article.json"
    if article.is_file():
        data = json.loads(article.read_text(encoding="utf-8"))
        if isinstance(data.get("config"), dict):
            return RunConfig.model_validate(data["config"])
    raise RunError(f"{run_dir}: no config recorded (spec.json or article.json); pass --judge-config CONFIG")


def dataset_of(spec: str | None):
    if spec is None:
        return None
    from ruwikibench.corpus_builder.dataset_files import resolve_dataset

    return resolve_dataset(spec)[0]


async def judge_citations(run_dir: Path, config, dataset):
    from ruwikibench.evaluators.judges.citations import support_llm
    from ruwikibench.prompts import PromptLibrary
    from ruwikibench.runtime.progress import progress_bar
    from ruwikibench.writer.citations import judge_and_mark

    llm, name = support_llm(config)
    try:
        with progress_bar(None, "support checks") as advance:
            return await judge_and_mark(
                run_dir,
                llm,
                judge=name,
                options=config.citations,
                prompts=PromptLibrary(config.prompts_dir),
                dataset=dataset,
                on_record=lambda _: advance(),
            )
    finally:
        await llm.aclose()


def measure_cosine(labelled, embedder_config, cache, threshold):
    from ruwikibench.evaluators.judges.citations_meta import agreement, cosine_probabilities
    from ruwikibench.models.embeddings import make_embedder

    probabilities = cosine_probabilities(labelled, make_embedder(embedder_config, cache))
    return agreement(f"cosine {embedder_config.id}", labelled, probabilities, threshold)
