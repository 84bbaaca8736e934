"""Run the toy stage against an OpenAI-compatible endpoint (used as a subprocess by the resume test)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Article, Dataset, Section
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.execute import RunOptions, execute
from ruwikibench.stage.context import StageContext
from tests.runner.toy_stage import install

TITLES = [f"Статья номер {i}" for i in range(6)]


def dataset() -> Dataset:
    articles = [Article(title=t, name=t, root=Section(id="s0", level=1, title=t)) for t in TITLES]
    return Dataset(articles=articles, sources=[], snippets=[])


async def main(base_url: str, out: str, cache: str) -> None:
    install()
    config = RunConfig(
        name="resume",
        models={"writer": {"name": "stub", "endpoints": [base_url], "max_retries": 0}},
        max_concurrency=1,
        cache_dir=cache,
    )
    llm = LLM.from_config(config)
    context = StageContext(config=config, llm=llm, embedder=None, prompts=PromptLibrary(), dataset=dataset())  # type: ignore[arg-type]
    try:
        await execute(context, "toy", RunOptions(stages=["toy"], out=Path(out), run_id="r", progress=False))
    finally:
        llm.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
