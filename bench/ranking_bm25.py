"""Stage-1 figures on the real sample: the BM25 baseline (lemmas vs stems, title vs reference queries) and a
capped end-to-end rerank with a live OpenAI-compatible model.

    python bench/ranking_bm25.py baseline  # title (+ reference if stored) × lemma/stem
    python bench/ranking_bm25.py reference --endpoint http://127.0.0.1:8081/v1 --model qwen
    python bench/ranking_bm25.py rerank --endpoint http://127.0.0.1:8081/v1 --model qwen --articles 2 \\
        --max-candidates 20

The sample (../shared/data/ruwiki/ruwikibench_articles.json, or $RUWIKIBENCH_SAMPLE) is imported once into
--work (default ~/.cache/ruwikibench/sample-dataset); reference queries are stored there.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ruwikibench.conf.builtin_options import RankingConfig
from ruwikibench.conf.config import ModelConfig, RunConfig
from ruwikibench.corpus_builder import import_ruwikibench_json, load_dataset, save_dataset
from ruwikibench.dataset import Dataset
from ruwikibench.evaluators.ranking import ranking_metrics
from ruwikibench.evaluators.stats import Estimate, bootstrap_ci
from ruwikibench.graphs.ranking import STAGE, build_ranking_graph, pool_size
from ruwikibench.models.llm import LLM
from ruwikibench.nodes.queries import (
    REFERENCE_QUERIES_FILE,
    generate_reference_queries,
    read_reference_queries,
)
from ruwikibench.prompts import PromptLibrary
from ruwikibench.retrieval.bm25 import BM25Index
from ruwikibench.stage.context import StageContext


def summarize(records: list[dict[str, float]], **bootstrap: object) -> dict[str, Estimate]:
    """Mean and bootstrap 95% CI of every metric key over articles (an article lacking a key is skipped)."""
    values: dict[str, list[float]] = {}
    for record in records:
        for key, value in record.items():
            values.setdefault(key, []).append(float(value))
    return {key: bootstrap_ci(vals, **bootstrap) for key, vals in sorted(values.items())}  # type: ignore[arg-type]


def sample_json() -> Path:
    env = os.environ.get("RUWIKIBENCH_SAMPLE")
    if env:
        path = Path(env)
        return path / "ruwikibench_articles.json" if path.is_dir() else path
    for parent in ROOT.parents:  # shared/ beside the checkout or beside one of its parents
        candidate = parent / "shared" / "data" / "ruwiki" / "ruwikibench_articles.json"
        if candidate.exists():
            return candidate
    return ROOT.parent / "shared" / "data" / "ruwiki" / "ruwikibench_articles.json"


def dataset_dir(args: argparse.Namespace) -> Path:
    """The processed sample: imported once into --work."""
    work = Path(args.work).expanduser()
    if not (work / "manifest.json").exists():
        source = Path(args.json) if args.json else sample_json()
        if not source.exists():
            sys.exit(f"sample not found: {source} (set RUWIKIBENCH_SAMPLE)")
        result = import_ruwikibench_json(source)
        save_dataset(result.dataset, work, errors=result.errors)
    return work


def context_for(
    args: argparse.Namespace, dataset: Dataset, directory: Path, **ranking: object
) -> StageContext:
    model = ModelConfig(name=args.model, endpoints=[args.endpoint], max_tokens=args.max_tokens)
    config = RunConfig(
        models={"reference": model, "query": model, "ranking": model},
        ranking=RankingConfig(**ranking),
        max_concurrency=args.concurrency,
    )  # type: ignore[arg-type]
    return StageContext(
        config=config,
        llm=LLM.from_config(config),
        embedder=None,  # type: ignore[arg-type]
        prompts=PromptLibrary(),
        dataset=dataset,
        dataset_dir=directory,
    )


def baseline(args: argparse.Namespace) -> None:
    directory = dataset_dir(args)
    dataset = load_dataset(directory)
    modes: dict[str, dict[str, str]] = {"title": {a.name: a.title for a in dataset.articles}}
    stored = directory / REFERENCE_QUERIES_FILE
    if stored.exists():
        refs = read_reference_queries(stored)
        modes["reference"] = {name: record.query for name, record in refs.queries.items()}
        print(f"reference queries: {stored} (model {refs.model})")
    else:
        print(f"no {stored}: reference mode skipped (run the 'reference' command first)")
    print(
        f"dataset {dataset.dataset_id}: {len(dataset.articles)} articles, {len(dataset.snippets)} snippets; "
        f"pool k = 3 × the article's snippets, clamped to the corpus"
    )
    config = RunConfig(models={})
    header = (
        f"{'query':<10} {'norm':<6} {'NDCG':>18} {'NDCG@10':>18} "
        f"{'R-Pr':>18} {'pool recall':>18} {'R-recall':>18} {'build s':>8}"
    )
    print(header)
    print("-" * len(header))
    for kind in ("lemma", "stem"):
        start = time.perf_counter()
        index = BM25Index.build(dataset, kind)  # type: ignore[arg-type]
        built = time.perf_counter() - start
        for mode, queries in modes.items():
            records = []
            for article in dataset.articles:
                hits = index.search(queries[article.name], pool_size(dataset, article, config))
                labels = [int(dataset.snippet(h.snippet_id).article == article.name) for h in hits]
                metrics = ranking_metrics(labels, None, len(dataset.snippets_of(article.name)))
                records.append(metrics)
                if args.per_article:
                    print(
                        f"   {article.name[:40]:<40} pool {len(hits):>4} rel {sum(labels):>4} "
                        f"ndcg {metrics['bm25_ndcg']:.3f} rpr {metrics['bm25_r_precision']:.3f} "
                        f"r-recall {metrics['bm25_recall_at_r']:.3f}"
                    )
            s = summarize(records, resamples=2000)
            print(
                f"{mode:<10} {kind:<6} {s['bm25_ndcg'].fmt(100):>18} {s['bm25_ndcg@10'].fmt(100):>18} "
                f"{s['bm25_r_precision'].fmt(100):>18} {s['pool_recall'].fmt(100):>18} "
                f"{s['bm25_recall_at_r'].fmt(100):>18} {built:>8.1f}"
            )


async def reference(args: argparse.Namespace) -> None:
    directory = dataset_dir(args)
    dataset = load_dataset(directory)
    context = context_for(args, dataset, directory)
    start = time.perf_counter()
    path = await generate_reference_queries(directory, context, overwrite=args.overwrite)
    usage = context.llm.usage.as_dict()
    print(f"{path}: {time.perf_counter() - start:.0f} s, usage {usage}")


async def rerank(args: argparse.Namespace) -> None:
    directory = dataset_dir(args)
    dataset = load_dataset(directory)
    context = context_for(
        args,
        dataset,
        directory,
        query_mode=args.mode,
        max_candidates=args.max_candidates,
        top_logprobs=args.top_logprobs,
        snippet_chars=args.snippet_chars,
    )
    graph = build_ranking_graph().compile()
    articles = [a for a in dataset.articles if not args.only or a.name in args.only][: args.articles]
    start = time.perf_counter()
    records = []
    for article in articles:
        unit = STAGE.units(dataset, article, context.config)[0]
        t0 = time.perf_counter()
        output = await graph.ainvoke(unit.input, context=context)
        record = STAGE.score(unit, output, context)[0]
        records.append(record.metrics)
        m = record.metrics
        print(
            f"{article.name[:40]:<40} {time.perf_counter() - t0:6.0f} s  pool {record.info['candidates']:>3} "
            f"rel {record.info['relevant_in_pool']:>3}  BM25 ndcg {m['bm25_ndcg']:.3f} rpr "
            f"{m['bm25_r_precision']:.3f}  rerank ndcg {m['rerank_ndcg']:.3f} rpr "
            f"{m['rerank_r_precision']:.3f}  judged "
            f"{[record.info[k] for k in record.info if k.startswith('judged_')]}"
        )
    s = summarize(records)
    print(f"mean over {len(records)}: " + "  ".join(f"{k} {v.mean:.3f}" for k, v in s.items()))
    print(f"wall {time.perf_counter() - start:.0f} s; LLM usage {context.llm.usage.as_dict()}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=["baseline", "reference", "rerank"])
    parser.add_argument("--json", help="RuWikiBench JSON to import (default: the shared sample)")
    parser.add_argument("--work", default="~/.cache/ruwikibench/sample-dataset")
    parser.add_argument("--per-article", action="store_true")
    parser.add_argument("--endpoint", default="http://127.0.0.1:8081/v1")
    parser.add_argument("--model", default="local")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("--mode", default="title", choices=["title", "reference", "generated"])
    parser.add_argument("--articles", type=int, default=2)
    parser.add_argument("--only", nargs="*", help="article names")
    parser.add_argument("--max-candidates", type=int, default=20)
    parser.add_argument("--top-logprobs", type=int, default=10)
    parser.add_argument("--snippet-chars", type=int, default=2500)
    args = parser.parse_args()
    if args.command == "baseline":
        baseline(args)
    else:
        asyncio.run(reference(args) if args.command == "reference" else rerank(args))


if __name__ == "__main__":
    main()
