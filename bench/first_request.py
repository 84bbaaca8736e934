"""What a run's first request waits for: ``ruwikibench run all`` in a new process, stopped when it connects to
the endpoint to send its first request, with ``python -X importtime``.

    python bench/first_request.py --dataset ../shared/data/ruwiki/ruwikibench_articles.json \\
        --article Python --article "Квантовый компьютер" --runs 5

Starts ``bench/endpoint.py``, writes the bench config of ``bench/pipeline.py`` (e5-int8, 512 tokens, a new
model name per run: nothing answered from the cache) and runs the CLI ``--runs`` times, as
``python -m ruwikibench`` does, with an audit hook that ends the process at its first connection to the
endpoint. Prints, per run but the last, the wall time from process start and the CPU time of the process (all
threads) at that moment, and for the last run, made with ``-X importtime``, the import time up to then by
top-level package (``-X importtime``'s own times: inflated by its bookkeeping, and by the load of a shared
machine — compare packages, not absolute figures). The package is compiled to bytecode first, as in
``bench/cold_run.py``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.cold_run import bytecode_note
from bench.pipeline import start_endpoint, write_config

PROBE = """
import os, resource, runpy, sys, time

PORT = int(os.environ["PROBE_PORT"])


def first_request(event, args):
    if event == "socket.connect" and isinstance(args[1], tuple) and args[1][1:2] == (PORT,):
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(f"FIRST {time.time() - float(os.environ['PROBE_START']):.3f} {usage.ru_utime + \
usage.ru_stime:.3f} "
              f"{len(sys.modules)}", file=sys.stderr, flush=True)
        os._exit(0)


sys.addaudithook(first_request)
sys.argv[0] = "ruwikibench"
runpy.run_module("ruwikibench", run_name="__main__")
"""

_IMPORT = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)")


def by_package(stderr: str) -> Counter[str]:
    """Self import time (µs) per top-level package (the project's per subpackage)."""
    times: Counter[str] = Counter()
    for match in _IMPORT.finditer(stderr):
        name = match.group(2)
        parts = name.split(".")
        times[".".join(parts[:2]) if parts[0] == "ruwikibench" else parts[0]] += int(match.group(1))
    return times


def probe(args: list[str], port: str, importtime: bool) -> tuple[float, float, int, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PROBE_PORT": port, "PROBE_START": repr(time.time())}
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", PROBE, *args]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    found = [line.split() for line in result.stderr.splitlines() if line.startswith("FIRST ")]
    if not found:
        raise SystemExit(f"no request was sent:\n{result.stderr[-3000:]}")
    _, wall, cpu, modules = found[0]
    return float(wall), float(cpu), int(modules), result.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--article", action="append", default=None)
    parser.add_argument("--runs", type=int, default=5, help="runs; the last one with -X importtime")
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--embedder", default="e5-int8:512", help="kind, or e5-int8:<max tokens>")
    parser.add_argument("--top", type=int, default=15, help="packages listed")
    args = parser.parse_args()
    articles = [a for name in args.article or ["Python", "Квантовый компьютер"] for a in ("--article", name)]
    bytecode = bytecode_note(compile_package=True)
    load_before = os.getloadavg()[0]
    endpoint, url = start_endpoint(args.dataset, args.latency)
    port = url.split(":")[-1].split("/")[0]
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="ruwikibench-first-") as work:
            for run in range(args.runs):
                config = write_config(
                    Path(work) / "bench.yaml", url, Path(work) / "cache", 64, args.embedder, f"first-{run}"
                )
                run_args = [
                    "run",
                    "all",
                    "--dataset",
                    args.dataset,
                    "--config",
                    str(config),
                    "--out",
                    str(Path(work) / "runs"),
                    *articles,
                ]
                rows.append(probe(run_args, port, importtime=run == args.runs - 1))
    finally:
        endpoint.terminate()
    print(
        f"{os.cpu_count()} cores, load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after; "
        f"bytecode: {bytecode}"
    )
    timed = rows[:-1] or rows  # the last run is slowed by -X importtime
    for wall, cpu, modules, _ in timed:
        print(f"first request {wall:.2f} s after process start, {cpu:.2f} CPU-s, {modules} modules loaded")
    print(
        f"median: {statistics.median(r[0] for r in timed):.2f} "
        f"s, {statistics.median(r[1] for r in timed):.2f} CPU-s"
    )
    packages = by_package(rows[-1][3])
    print(
        "import time before the first request (-X importtime, "
        f"last run): {sum(packages.values()) / 1e6:.2f} s"
    )
    for name, micros in packages.most_common(args.top):
        print(f"  {micros / 1000:7.1f} ms  {name}")


if __name__ == "__main__":
    main()
