"""Scoring in a process of its own: the units' scores, their baselines and the run's floors computed beside the
LLM phase, on another core.

A run is two kinds of CPU work: the request path (graph steps, building requests, reading answers) on the event
loop, and scoring (embedding generated texts, NER, ROUGE/BLEU, the no-LLM baselines scored like the run). In one
process they share one GIL: at 64 articles scoring and baselines took ~45 % of the process's CPU, and at 285
articles the scores of the last units were still being computed minutes after the last answer. Here they run in a
child process (``spawn``: nothing of the parent's threads or locks is inherited) that builds its own services from
the run's config and dataset — the same :func:`~ruwikibench.runner.setup.build_context` without an LLM, the same
registered stages — and returns each unit's :class:`~ruwikibench.contract.StageScore` and baseline record; the
parent writes them, so the run directory has one writer. Vectors and entities are shared through the on-disk
caches (SQLite, WAL).

The process is used when :func:`wanted` says so (``--score-in auto``: at least two cores and
:data:`AUTO_MIN_UNITS` units to run). A stage the child cannot build (a plug-in registered at run time, not by
import) is scored in the parent as before; if the child dies, the parent scores the rest itself.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Literal

from ruwikibench.config import RunConfig
from ruwikibench.contract import Stage, StageScore, Unit, score_failure

log = logging.getLogger(__name__)

ScoreIn = Literal["auto", "thread", "process"]
AUTO_MIN_UNITS = 200
"""Units a run must have to run for ``auto`` to start the scoring process: it costs a process start (~3 s of CPU
on the other core) and the memory of a second embedding model, which a small run does not earn back."""


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def wanted(score_in: ScoreIn, units: int, dataset_dir: Path | None) -> bool:
    """Whether this run scores in a process of its own (never without a dataset folder to load it from)."""
    if dataset_dir is None or score_in == "thread":
        return False
    return score_in == "process" or (usable_cores() >= 2 and units >= AUTO_MIN_UNITS)


@dataclass(frozen=True)
class WorkerSetup:
    """What the child builds its services from: picklable, small."""

    config: RunConfig
    dataset_dir: str
    stages: list[str]


@dataclass
class UnitScored:
    """A unit scored (here or in the child): its StageScore or the reason scoring failed, and/or its baseline
    record or the reason that failed."""

    score: StageScore | None = None
    error: str | None = None
    baselines: dict[str, Any] | None = None
    baselines_error: str | None = None


@dataclass
class _Worker:
    context: Any = None
    stages: dict[str, Stage[Any]] = field(default_factory=dict)
    failure: str | None = None  # why the services could not be built: the parent scores everything


_worker = _Worker()


def _start_worker(setup: WorkerSetup) -> None:
    """The child's initializer: Ctrl-C is the parent's to handle; services and stages built once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from ruwikibench.dataset_files import resolve_dataset
    from ruwikibench.registry import StageRegistryError, get_stage
    from ruwikibench.runner.setup import build_context

    _leave_a_core_to_the_run()
    try:
        # the texts stay on disk: the units carry the snippet texts they use (~300 MB at the paper's size)
        dataset, path = resolve_dataset(setup.dataset_dir, source_texts=False, snippet_texts=False)
        _worker.context = build_context(_config_for_child(setup.config), dataset, path, with_llm=False)
    except Exception as exc:  # noqa: BLE001 - reported by the parent in one line, no traceback
        _worker.failure = f"{type(exc).__name__}: {exc}"
        return
    for name in setup.stages:
        try:
            _worker.stages[name] = get_stage(name)
        except StageRegistryError:
            continue  # registered in the parent at run time: the parent scores it


def _leave_a_core_to_the_run() -> None:
    """BLAS and OpenMP pools of one thread: the run's event loop keeps a core to itself. OpenBLAS's threads
    spin between the NER's many small products, and with two of them the child took both cores."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(1)


def _config_for_child(config: RunConfig) -> RunConfig:
    """The run's config with the embedding model on one core fewer than the machine's (not in the embedder's
    identity: the same vectors)."""
    if config.embedder.threads is not None:
        return config
    embedder = config.embedder.model_copy(update={"threads": max(1, usable_cores() - 1)})
    return config.model_copy(update={"embedder": embedder})


def _child_stages() -> tuple[list[str], str | None]:
    return list(_worker.stages), _worker.failure


def score_unit(stage: Stage[Any], unit: Unit, output: dict[str, Any], context: Any) -> UnitScored:
    """The unit's scores, or why scoring failed (CPU-bound, scoring embeds: the model lane or the child)."""
    try:
        return UnitScored(score=stage.checked_score(unit, output, context))
    except Exception as exc:  # noqa: BLE001 - recorded as the unit's scoring error
        return UnitScored(error=score_failure(exc))


def score_unit_baselines(stage: Stage[Any], unit: Unit, output: dict[str, Any], context: Any) -> UnitScored:
    """The unit's baseline record, or why it failed: a failure costs nothing but time, the finish scores the
    baselines of a unit that has no record."""
    from ruwikibench.runner.baselines import unit_baselines

    try:
        return UnitScored(baselines=unit_baselines(stage, unit, output, context))
    except Exception as exc:  # noqa: BLE001 - see above
        return UnitScored(baselines_error=f"{type(exc).__name__}: {exc}")


def _score_in_child(stage_name: str, unit: Unit, output: dict[str, Any], with_baselines: bool) -> UnitScored:
    stage = _worker.stages[stage_name]
    scored = score_unit(stage, unit, output, _worker.context)
    if with_baselines and scored.score is not None:
        baselines = score_unit_baselines(stage, unit, output, _worker.context)
        scored.baselines, scored.baselines_error = baselines.baselines, baselines.baselines_error
    return scored


def _compute_floors(rundir_path: str) -> bool:
    from ruwikibench.rundir import RunDir
    from ruwikibench.runner.derived import compute_floors_and_baselines

    compute_floors_and_baselines(RunDir(Path(rundir_path)), _worker.context)
    return True


class ScoringProcess:
    """The child process and the calls the runner makes to it; ``None`` from a call means: do it here."""

    def __init__(self, setup: WorkerSetup) -> None:
        self.setup = setup
        self._pool: ProcessPoolExecutor | None = ProcessPoolExecutor(
            max_workers=1, mp_context=get_context("spawn"), initializer=_start_worker, initargs=(setup,))
        self._stages: asyncio.Future[list[str]] | None = None

    def start(self) -> None:
        """Start the child (it builds its services meanwhile); the first :meth:`scores` would otherwise."""
        if self._pool is not None and self._stages is None:
            self._stages = asyncio.ensure_future(self._stage_names())

    async def scores(self, stage_name: str) -> bool:
        """Whether the child scores this stage (False once it has died or could not start)."""
        self.start()
        if self._stages is None:
            return False
        names = await asyncio.shield(self._stages)
        return self._pool is not None and stage_name in names

    async def _stage_names(self) -> list[str]:
        answer = await self._call(_child_stages)
        if answer is None:
            return []
        names, failure = answer
        if failure is not None:
            log.warning("the scoring process could not start (%s); the run scores in this process", failure)
            await asyncio.get_running_loop().run_in_executor(None, self.close)
            return []
        return list(names)

    async def score(self, stage_name: str, unit: Unit, output: dict[str, Any],
                    with_baselines: bool) -> UnitScored | None:
        return await self._call(_score_in_child, stage_name, unit, output, with_baselines)

    async def floors(self, rundir_path: Path, stages: list[str]) -> bool:
        """Floors and baselines computed in the child (True), or not (False: it cannot build every stage)."""
        if not all([await self.scores(name) for name in stages]):
            return False
        return bool(await self._call(_compute_floors, str(rundir_path)))

    async def _call(self, fn: Any, *args: Any) -> Any:
        if self._pool is None:
            return None
        future = asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)
        try:
            return await asyncio.shield(future)
        except BrokenProcessPool:
            log.warning("the scoring process ended unexpectedly; the run scores in this process from now on")
            self.close()
            return None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
