"""The finish of a run on its own: what ``run`` does after the last LLM answer, timed step by step.

Copies a finished run directory (``bench/scale.py --work DIR`` keeps them) and, in a fresh process with a
scoring context (no LLM) built from the run's spec, runs the steps the end of ``run`` runs — floors,
baselines, metrics and report — printing per step the wall and CPU seconds, the peak RSS of the process, and
how many texts the NER model read. ``--profile FILE`` writes a cProfile of the whole finish
(``python -m pstats FILE``); ``--runs 2`` runs it twice, in two processes, on the same copy (the second sees
the first's disk caches).

    python bench/finish.py RUNDIR [--dataset DATA] [--profile finish.prof] [--runs 2]
"""

from __future__ import annotations

import argparse
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


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _context(rundir: Path, dataset: str | None) -> Any:
    from ruwikibench.conf.config import RunConfig
    from ruwikibench.corpus_builder.dataset_files import resolve_dataset
    from ruwikibench.runner.setup import build_context

    spec = json.loads((rundir / "spec.json").read_text(encoding="utf-8"))
    data, path = resolve_dataset(dataset or spec["dataset"]["path"])
    return build_context(RunConfig.model_validate(spec["config"]), data, path, with_llm=False)


def _steps() -> list[tuple[str, Any]]:
    """The finish of ``run`` after the last unit (runner/execute.py), and the exit status the command
    reads."""
    from ruwikibench.runner.execute import finalize

    try:
        from ruwikibench.aggregation.derived import compute_floors_and_baselines
    except (
        ImportError
    ):  # the code before aggregation/derived.py (measuring the earlier finish from an export of it)
        from ruwikibench.aggregation.baselines import compute_floors_and_baselines  # type: ignore[attr-defined,no-redef]

    return [
        ("floors and baselines", compute_floors_and_baselines),
        ("metrics and report", lambda rundir, context: finalize(rundir)),
        ("open errors", lambda rundir, context: rundir.open_errors()),
    ]


def measure(rundir: Path, dataset: str | None, profile: str | None) -> dict[str, Any]:
    """The finish's steps on ``rundir`` in this process: {step: [wall s, CPU s, peak RSS MB after it]}."""
    from ruwikibench.evaluators import entities
    from ruwikibench.storage.rundir import RunDir

    figures: dict[str, Any] = {}
    mark = (time.perf_counter(), _cpu())
    context = _context(rundir, dataset)
    figures["setup"] = [time.perf_counter() - mark[0], _cpu() - mark[1], _rss_mb()]
    run = RunDir(rundir)
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    for name, step in _steps():
        mark = (time.perf_counter(), _cpu())
        step(run, context)
        figures[name] = [time.perf_counter() - mark[0], _cpu() - mark[1], _rss_mb()]
    if profiler is not None and profile:
        profiler.disable()
        profiler.dump_stats(profile)
    figures["ner_texts"] = entities.ner_texts() if hasattr(entities, "ner_texts") else None
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rundir", type=Path)
    parser.add_argument(
        "--dataset", default=None, help="the run's dataset, when its recorded path is not valid"
    )
    parser.add_argument("--profile", default=None, help="write a cProfile of the finish here")
    parser.add_argument(
        "--runs", type=int, default=1, help="finish the same copy this many times (fresh processes)"
    )
    parser.add_argument("--in-place", action="store_true", help="finish RUNDIR itself, not a copy")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # the measured child process
    args = parser.parse_args()
    if args.one:
        print("FIGURES " + json.dumps(measure(args.rundir, args.dataset, args.profile)), flush=True)
        return
    work = None if args.in_place else Path(tempfile.mkdtemp(prefix="ruwikibench-finish-"))
    target = args.rundir if work is None else work / args.rundir.name
    if work is not None:
        shutil.copytree(args.rundir, target)
    try:
        for run in range(1, args.runs + 1):
            command = [sys.executable, __file__, str(target), "--one"]
            command += ["--dataset", args.dataset] if args.dataset else []
            command += ["--profile", args.profile] if args.profile and run == 1 else []
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                check=False,
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            lines = [line for line in done.stdout.splitlines() if line.startswith("FIGURES ")]
            if done.returncode != 0 or not lines:
                raise SystemExit(f"finish failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
            figures = json.loads(lines[-1].removeprefix("FIGURES "))
            print(
                f"run {run} (load average {os.getloadavg()[0]:.1f}): "
                f"NER read {figures.pop('ner_texts')} texts"
            )
            print("| step | wall | CPU | peak RSS after |\n|---|---|---|---|")
            for name, (wall, cpu, rss) in figures.items():
                print(f"| {name} | {wall:.2f} s | {cpu:.2f} s | {rss:.0f} MB |")
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
