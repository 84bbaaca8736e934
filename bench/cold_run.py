"""A first run as a user sees it: ``ruwikibench run all`` in a new process, nothing embedded, against an endpoint
of known latency — wall time and the time from process start to the endpoint's first request.

    python bench/cold_run.py --dataset ../shared/data/ruwiki/ruwikibench_articles.json \\
        --article Python --article "Квантовый компьютер" --latency 0.5 --embedder e5-int8:512

Starts ``bench/endpoint.py`` (see bench/pipeline.py), writes the bench config (paper settings, generated queries,
the given embedder: ``kind`` or ``e5-int8:<max tokens>``) with a fresh cache folder, then runs the CLI as a
subprocess three times and prints, per run, the wall time (process start to exit) and the first request (process
start to the endpoint receiving it):

* **cold** — nothing embedded or indexed: the run embeds and indexes what it needs (a first run on new data);
* **embeddings cached, new model name** — the same data with another model name: every LLM call is new, the
  vectors and the BM25 index are on disk;
* ``--help`` — the CLI's own start-up (imports), for reference.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.pipeline import start_endpoint, stats, write_config


def run_cli(args: list[str], url: str) -> tuple[float, float | None]:
    """Wall seconds of ``python -m ruwikibench ARGS`` and seconds from its start to the endpoint's next request."""
    before = stats(url)["requests"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.time()
    result = subprocess.run([sys.executable, "-m", "ruwikibench", *args], cwd=ROOT, env=env,
                            capture_output=True, text=True, check=False)
    wall = time.time() - started
    if result.returncode != 0:
        raise SystemExit(f"ruwikibench {' '.join(args)} failed:\n{result.stderr[-3000:]}")
    arrivals = stats(url)["arrivals"][before:]
    return wall, (min(arrivals) - started if arrivals else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--article", action="append", default=None)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--embedder", default="e5-int8:512", help="kind, or e5-int8:<max tokens>")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    articles = [a for name in args.article or ["Python", "Квантовый компьютер"] for a in ("--article", name)]
    work = Path(tempfile.mkdtemp(prefix="ruwikibench-cold-"))
    endpoint, url = start_endpoint(args.dataset, args.latency)
    try:
        rows = []
        for label, model in (("cold (nothing embedded)", "bench"), ("embeddings cached, new model name", "other")):
            config = write_config(work / "bench.yaml", url, work / "cache", args.concurrency, args.embedder, model)
            run_args = ["run", "all", "--dataset", args.dataset, "--config", str(config),
                        "--out", str(work / "runs"), *articles]
            rows.append((label, *run_cli(run_args, url)))
        help_started = time.time()
        subprocess.run([sys.executable, "-m", "ruwikibench", "--help"], cwd=ROOT, capture_output=True, check=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
        help_wall = time.time() - help_started
    finally:
        endpoint.terminate()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"embedder {args.embedder} · {len(articles) // 2} articles · latency {args.latency} s · "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print("| run | wall | first request (from process start) |\n|---|---|---|")
    for label, wall, first in rows:
        print(f"| {label} | {wall:.1f} s | {'none' if first is None else f'{first:.2f} s'} |")
    print(f"`ruwikibench --help`: {help_wall:.2f} s")


if __name__ == "__main__":
    main()
