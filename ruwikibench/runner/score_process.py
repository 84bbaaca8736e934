"""Scoring in a process of its own: the units' scores, their baselines and the run's floors computed beside
the LLM phase, on another core.

A run is two kinds of CPU work: the request path (graph steps, building requests, reading answers) on the
event loop, and scoring (embedding generated texts, NER, ROUGE/BLEU, the no-LLM baselines scored like the
run). In one process they share one GIL: at 64 articles scoring and baselines took ~45 % of the process's CPU,
and at 285 articles the scores of the last units were still being computed minutes after the last answer. Here
they run in a child process (``spawn``: nothing of the parent's threads or locks is inherited) that builds its
own services from the run's config and dataset — the same :func:`~ruwikibench.runner.setup.build_context`
without an LLM, the same registered stages — and returns each unit's
:class:`~ruwikibench.stage.contract.StageScore` and baseline record; the parent writes them, so the run
directory has one writer. Vectors and entities are shared through the on-disk caches (SQLite, WAL).

While the units run, the child is idle much of the time (at 64 articles, the first minute: no section has been
written yet), and at the end the units finish together: the scores of the last ones were ~15 s of the finish
at 285 articles, half of them their baselines. So when the child has nothing queued it scores ahead, in the
run's order, the baselines of the units still to score that never read the run's output
(``Baseline.reads_output=False``: the sections' lead and random sentences, the outline templates), keeps them
in a temporary file (not in memory: a whole run's are ~50 MB at 285 articles), and the unit's scoring takes
them as they are (:func:`~ruwikibench.aggregation.baselines.unit_baselines`). The child runs at a lower CPU
priority than the run (``nice`` +:data:`CHILD_NICENESS`): on a busy machine the requests go first.

The process is used when :func:`wanted` says so (``--score-in auto``: at least two cores and
:data:`AUTO_MIN_UNITS` units to run). A stage the child cannot build (a plug-in registered at run time, not by
import) is scored in the parent as before; if the child dies, the parent scores the rest itself.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pickle
import signal
import tempfile
import threading
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Literal

from ruwikibench.conf.config import RunConfig
from ruwikibench.stage.contract import Stage, StageScore, Unit, score_failure

log = logging.getLogger(__name__)

ScoreIn = Literal["auto", "thread", "process"]
AUTO_MIN_UNITS = 200
"""Units a run must have to run for ``auto`` to start the scoring process: it costs a process start (~3 s of
CPU on the other core) and the memory of a second embedding model, which a small run does not earn back."""


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
    ahead: int = 0  # baselines taken as scored ahead


@dataclass
class _Worker:
    context: Any = None
    stages: dict[str, Stage[Any]] = field(default_factory=dict)
    failure: str | None = None  # why the services could not be built: the parent scores everything
    ahead: AheadStore | None = None  # baselines scored ahead, by unit


_worker = _Worker()


CHILD_NICENESS = 5


def _start_worker(setup: WorkerSetup) -> None:
    """The child's initializer: Ctrl-C is the parent's to handle, the CPU the run's first; services and stages
    built once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        os.nice(CHILD_NICENESS)
    except (AttributeError, OSError):  # not POSIX, or not allowed: the same priority
        pass
    from ruwikibench.corpus_builder.dataset_files import resolve_dataset
    from ruwikibench.runner.setup import build_context
    from ruwikibench.stage.registry import StageRegistryError, get_stage

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


BLAS_THREADS_ENV = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _leave_a_core_to_the_run() -> None:
    """BLAS pools of one thread: the run's event loop keeps a core to itself. OpenBLAS's threads spin between
    the NER's many small products; with two of them the child took 113–127 % of a core through the second half
    of a 64-article run (a native thread beside its main one). threadpoolctl limits only the libraries already
    loaded, so numpy is loaded first, and the environment says one thread to any BLAS loaded later (scipy's
    own)."""
    for name in BLAS_THREADS_ENV:
        os.environ[name] = "1"
    try:
        import numpy  # noqa: F401 - loaded now: its BLAS is the pool limited below
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(1, user_api="blas")


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


def score_unit_baselines(
    stage: Stage[Any], unit: Unit, output: dict[str, Any], context: Any, ahead: dict[str, Any] | None = None
) -> UnitScored:
    """The unit's baseline record, or why it failed: a failure costs nothing but time, the finish scores the
    baselines of a unit that has no record. ``ahead``: those scored before the unit ended (see the module)."""
    from ruwikibench.aggregation.baselines import unit_baselines

    try:
        return UnitScored(baselines=unit_baselines(stage, unit, output, context, ahead))
    except Exception as exc:  # noqa: BLE001 - see above
        return UnitScored(baselines_error=f"{type(exc).__name__}: {exc}")


def _score_in_child(stage_name: str, unit: Unit, output: dict[str, Any], with_baselines: bool) -> UnitScored:
    stage = _worker.stages[stage_name]
    ahead = _taken_ahead(unit)
    scored = score_unit(stage, unit, output, _worker.context)
    if with_baselines and scored.score is not None:
        baselines = score_unit_baselines(stage, unit, output, _worker.context, ahead)
        scored.baselines, scored.baselines_error = baselines.baselines, baselines.baselines_error
        scored.ahead = len(ahead or {})
    return scored


def _unit_key(unit: Unit) -> tuple[str, str, str]:
    return unit.stage, unit.article, unit.unit_id


def _input_digest(unit: Unit) -> str:
    from ruwikibench.models.cache import stable_hash

    return stable_hash(unit.input)


def _score_ahead_in_child(stage_name: str, unit: Unit) -> None:
    from ruwikibench.aggregation.baselines import baselines_ahead

    stage = _worker.stages.get(stage_name)
    if stage is None:
        return
    try:
        found = baselines_ahead(stage, unit, _worker.context)
    except Exception:  # noqa: BLE001 - scored with the unit then, as without scoring ahead
        return
    if found:
        if _worker.ahead is None:
            _worker.ahead = AheadStore()
        _worker.ahead.put(_unit_key(unit), _input_digest(unit), found)


def _taken_ahead(unit: Unit) -> dict[str, Any] | None:
    """The unit's baselines scored ahead (taken out), when they were scored for this very input."""
    key = _unit_key(unit)
    if _worker.ahead is None or key not in _worker.ahead:  # no input to hash (an outline's is ~0.4 MB)
        return None
    return _worker.ahead.take(key, _input_digest(unit))


def _compute_floors(rundir_path: str) -> bool:
    """The child's last job: the floors and baselines; then it lets go of its services and memory, so that its
    exit, beside the run's metrics, is quick and holds little (0.75 GB at 285 articles)."""
    from ruwikibench.aggregation.derived import compute_floors_and_baselines
    from ruwikibench.runtime.executors import give_back_free_memory
    from ruwikibench.storage.rundir import RunDir

    try:
        compute_floors_and_baselines(RunDir(Path(rundir_path)), _worker.context)
    finally:
        _worker.context, _worker.stages, _worker.ahead = None, {}, None
        _worker.failure = "the scoring process has finished the run's floors"
        give_back_free_memory()
    return True


class AheadStore:
    """Baselines scored ahead, pickled into an anonymous temporary file (gone with the process); in memory
    only where each unit's are."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="ruwikibench-ahead-")  # noqa: SIM115 - lives with the child
        self._where: dict[tuple[str, str, str], tuple[str, int, int]] = {}

    def put(self, key: tuple[str, str, str], digest: str, found: dict[str, Any]) -> None:
        data = pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL)
        offset = self._file.seek(0, os.SEEK_END)
        self._file.write(data)
        self._where[key] = (digest, offset, len(data))

    def take(self, key: tuple[str, str, str], digest: str) -> dict[str, Any] | None:
        """The unit's baselines, when kept for this input digest (taken out either way)."""
        where = self._where.pop(key, None)
        if where is None or where[0] != digest:
            return None
        self._file.seek(where[1])
        found: dict[str, Any] = pickle.loads(self._file.read(where[2]))  # our own file, written above
        return found

    def __contains__(self, key: object) -> bool:
        return key in self._where

    def __len__(self) -> int:
        return len(self._where)


class ScoringProcess:
    """The child process and the calls the runner makes to it; ``None`` from a call means: do it here."""

    def __init__(self, setup: WorkerSetup) -> None:
        self.setup = setup
        self._pool: ProcessPoolExecutor | None = ProcessPoolExecutor(
            max_workers=1, mp_context=get_context("spawn"), initializer=_start_worker, initargs=(setup,)
        )
        self._stages: asyncio.Future[list[str]] | None = None
        self._waiting_ahead: OrderedDict[tuple[str, str, str], tuple[str, Unit]] = OrderedDict()
        self._busy = 0  # units being scored (the calls ahead wait while there are any)
        self._wake: asyncio.Event | None = None
        self._ahead: asyncio.Task[None] | None = None
        self.scored_ahead = 0  # baselines the child took as scored ahead
        self._exiting: threading.Thread | None = None  # shutting the child down, not yet waited for

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

    async def score(
        self, stage_name: str, unit: Unit, output: dict[str, Any], with_baselines: bool
    ) -> UnitScored | None:
        self._waiting_ahead.pop(_unit_key(unit), None)
        self._busy += 1
        try:
            scored = await self._call(_score_in_child, stage_name, unit, output, with_baselines)
        finally:
            self._busy -= 1
            if not self._busy and self._wake is not None:
                self._wake.set()
        if scored is not None:
            self.scored_ahead += scored.ahead
        return scored

    def score_ahead(self, stages: dict[str, Stage[Any]], units: list[Unit]) -> None:
        """The run's units, in order: the child scores their baselines that never read an output whenever it
        has nothing else to do (a unit scored meanwhile is dropped from the list)."""
        ahead = {
            name
            for name, stage in stages.items()
            if not all(baseline.reads_output for baseline in stage.baselines)
        }
        for unit in units:
            if unit.stage in ahead:
                self._waiting_ahead[_unit_key(unit)] = (unit.stage, unit)
        if self._pool is None or not self._waiting_ahead:
            return
        if self._ahead is None:
            self._wake = asyncio.Event()
            self._ahead = asyncio.ensure_future(self._score_ahead())
        if not self._busy:
            self._wake.set()  # type: ignore[union-attr]

    async def _score_ahead(self) -> None:
        wake = self._wake
        assert wake is not None
        while self._pool is not None:
            await wake.wait()
            if self._busy or not self._waiting_ahead:
                wake.clear()
                continue
            _, (stage_name, unit) = self._waiting_ahead.popitem(last=False)
            if await self.scores(stage_name):
                await self._call(_score_ahead_in_child, stage_name, unit)

    def _stop_ahead(self) -> None:
        """No more scoring ahead (safe from any thread: :meth:`close` runs on the CPU pool)."""
        self._waiting_ahead.clear()
        if self._ahead is not None and not self._ahead.done():
            self._ahead.get_loop().call_soon_threadsafe(self._ahead.cancel)

    async def floors(self, rundir_path: Path, stages: list[str]) -> bool:
        """Floors and baselines computed in the child (True), or not (False: it cannot build every stage)."""
        self._stop_ahead()
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

    def close(self, wait: bool = True) -> None:
        """Stop the child. ``wait=False`` only tells it to exit (it frees its ~0.7 GB at 285 articles for ~2
        s, while the run writes its metrics); a later :meth:`close` waits for it to be gone."""
        self._stop_ahead()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            self._exiting = threading.Thread(
                target=pool.shutdown,
                kwargs={"cancel_futures": True},
                name="scoring-process-exit",
                daemon=True,
            )
            self._exiting.start()
        if wait and self._exiting is not None:
            self._exiting.join()
            self._exiting = None
