"""A first run as a user sees it: ``ruwikibench run all`` in a new process, nothing embedded, against an
endpoint of known latency — wall time and the time from process start to the endpoint's first request.

    python bench/cold_run.py --dataset ../shared/data/ruwiki/ruwikibench_articles.json \\
        --article Python --article "Квантовый компьютер" --latency 0.5 --embedder e5-int8:512

Starts ``bench/endpoint.py`` (see bench/pipeline.py), writes the bench config (paper settings, generated
queries, the given embedder: ``kind`` or ``e5-int8:<max tokens>``) with a fresh cache folder, then runs the
CLI as a subprocess three times and prints, per run, the wall time (process start to exit), the first request
(process start to the endpoint receiving it) and the CPU time the process had used by then (all threads,
sampled from /proc every 3 ms in 10 ms steps: less sensitive to other load than the wall time), and the run's
whole CPU time (user + system, its scoring process included), with the CPU model and the load average before
and after (``--port``: the fake endpoint's port, default a free one), and the CPU time per snippet of the
run's articles and per unit the run scored (its ``results.jsonl`` rows):

* **cold** — nothing embedded or indexed: the run embeds and indexes what it needs (a first run on new data);
* **embeddings cached, new model name** — the same data with another model name: every LLM call is new, the
  vectors and the BM25 index are on disk;
* ``--help`` — the CLI's own start-up (imports), for reference.

``--repeat N`` runs the second case N times (another model name each: every LLM call new), for several
first-request figures. The package's modules are compiled to bytecode first, as an installed package has them
(``--no-compile``: as the environment has them — this workplace sets ``PYTHONDONTWRITEBYTECODE``, so without
it every run compiles the project's modules from source, ~0.1–0.2 s more before the first request).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import children_cpu_seconds, machine_line
from bench.pipeline import start_endpoint, stats, write_config


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system, all threads) of a running process so far, from /proc (Linux; 10 ms steps)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuSampler(threading.Thread):
    """Samples a child's CPU time every few milliseconds: its CPU time up to any moment of its run."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[tuple[float, float]] = []  # (time.time(), CPU seconds)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            cpu = cpu_seconds(self.pid)
            if cpu is not None:
                self.samples.append((time.time(), cpu))
            self.done.wait(0.003)

    def at(self, moment: float) -> float | None:
        """CPU seconds at the last sample before ``moment``."""
        before = [cpu for when, cpu in self.samples if when <= moment]
        return before[-1] if before else None


def run_cli(args: list[str], url: str) -> tuple[float, float, float | None, float | None]:
    """Wall seconds of ``python -m ruwikibench ARGS``, its CPU seconds (user + system, its scoring process
    included), seconds from its start to the endpoint's next request, and the CPU seconds the process had used
    by then."""
    before = stats(url)["requests"]
    cpu_before = children_cpu_seconds()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.time()
    process = subprocess.Popen(
        [sys.executable, "-m", "ruwikibench", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    sampler = CpuSampler(process.pid)
    sampler.start()
    _, stderr = process.communicate()
    wall = time.time() - started
    cpu = children_cpu_seconds() - cpu_before
    sampler.done.set()
    if process.returncode != 0:
        raise SystemExit(f"ruwikibench {' '.join(args)} failed:\n{stderr[-3000:]}")
    arrivals = stats(url)["arrivals"][before:]
    if not arrivals:
        return wall, cpu, None, None
    return wall, cpu, min(arrivals) - started, sampler.at(min(arrivals))


def units_of(runs: Path, before: set[Path]) -> int:
    """Units (``results.jsonl`` rows) of the run directory that appeared under ``runs`` since ``before``;
    0 when the run reused one."""
    fresh = [d for d in runs.iterdir() if d not in before] if runs.is_dir() else []
    results = [d / "results.jsonl" for d in fresh if (d / "results.jsonl").is_file()]
    return sum(
        1 for path in results for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    )


def snippets_of(dataset: str, articles: list[str]) -> int:
    """Snippets of the given articles in the dataset (as the runs resolved it)."""
    from ruwikibench.corpus_builder.dataset_files import resolve_dataset

    data, _ = resolve_dataset(dataset, source_texts=False, snippet_texts=False)
    return sum(len(data.snippets_of(name)) for name in articles)


def bytecode_note(compile_package: bool) -> str:
    """Compile the package's modules to bytecode (``python -m compileall``), as an installed package has them;
    a line saying what the runs load. Without it, where ``PYTHONDONTWRITEBYTECODE`` is set (this workplace
    sets it) no ``__pycache__`` is ever written for the package: every run compiles the ~90 modules it imports
    from source."""
    if compile_package:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "ruwikibench")], check=True)
        return "the package's modules compiled beforehand (python -m compileall), as pip installs them"
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return (
            "as the environment has it: PYTHONDONTWRITEBYTECODE is set, "
            "modules without bytecode compile each run"
        )
    return "as the environment has it (bytecode written on first import)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--article", action="append", default=None)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--embedder", default="e5-int8:512", help="kind, or e5-int8:<max tokens>")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument(
        "--port", type=int, default=None, help="the fake endpoint's port (default: a free one)"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run the 'embeddings cached, new model name' case this many times (another name each)",
    )
    parser.add_argument(
        "--no-compile",
        action="store_true",
        help="leave the package's bytecode as the environment has it (see bytecode_note)",
    )
    args = parser.parse_args()
    articles = [a for name in args.article or ["Python", "Квантовый компьютер"] for a in ("--article", name)]
    work = Path(tempfile.mkdtemp(prefix="ruwikibench-cold-"))
    bytecode = bytecode_note(compile_package=not args.no_compile)
    machine_before = machine_line()
    endpoint, url = start_endpoint(args.dataset, args.latency, args.port)
    try:
        rows = []
        cases = [("cold (nothing embedded)", "bench")] + [
            ("embeddings cached, new model name", f"other-{i}") for i in range(max(1, args.repeat))
        ]
        for label, model in cases:
            config = write_config(
                work / "bench.yaml", url, work / "cache", args.concurrency, args.embedder, model
            )
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
            before = set((work / "runs").iterdir()) if (work / "runs").is_dir() else set()
            rows.append((label, *run_cli(run_args, url), units_of(work / "runs", before)))
        help_started = time.time()
        subprocess.run(
            [sys.executable, "-m", "ruwikibench", "--help"],
            cwd=ROOT,
            capture_output=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        help_wall = time.time() - help_started
        snippets = snippets_of(args.dataset, articles[1::2])
    finally:
        endpoint.terminate()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(
        f"embedder {args.embedder} · {len(articles) // 2} "
        f"articles · latency {args.latency} s · endpoint {url}"
    )
    print(f"before: {machine_before}")
    print(f"after:  {machine_line()}")
    print(f"bytecode: {bytecode}")
    print(
        "| run | wall | CPU (user + system, all its processes) | CPU / wall | CPU per snippet | CPU per unit "
        "| first request (from process start) | CPU time by then |\n|---|---|---|---|---|---|---|---|"
    )
    for label, wall, cpu, first, cpu_first, units in rows:
        print(
            f"| {label} | {wall:.1f} s | {cpu:.1f} CPU-s | {cpu / wall:.2f} | "
            f"{1000 * cpu / max(1, snippets):.0f} ms ({snippets} snippets) | "
            f"{f'{cpu / units:.2f} s ({units} units)' if units else '?'} | "
            f"{'none' if first is None else f'{first:.2f} s'} | "
            f"{'?' if cpu_first is None else f'{cpu_first:.2f} s'} |"
        )
    print(f"`ruwikibench --help`: {help_wall:.2f} s")


if __name__ == "__main__":
    main()
