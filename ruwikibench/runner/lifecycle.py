"""The performance hooks around a run's steps (:func:`ruwikibench.runner.execute.execute` takes the steps in
order; :class:`RunLifecycle` holds what goes on around them). In the order they fire:

1. a scoring process of its own when the run wants one (:meth:`RunLifecycle.scoring_process`,
   runner/score_process.py), made before the units start;
2. one role's HTTP clients built before the first unit (:func:`_prepare_first_client`);
3. the first unit's head start (:func:`_head_start`, :data:`HEAD_START`), then every other role's clients,
   then the other units (:func:`_run_units`), with the scoring process scoring ahead the baselines that need
   no output;
4. once the first request is out (:func:`_warm_up_after_first_request`, :data:`FIRST_REQUEST_WAIT`): the
   garbage collector paused for the start-up on again, the scoring process started, the stages' lazy imports,
   the heap frozen;
5. the collector's thresholds raised while the units run (``executors.run_gc_thresholds``);
6. when the units are done: the BM25 indexes let go and the C heap's free pages given back (``malloc_trim``);
7. the floors and baselines in the scoring process, or on the model lane when it cannot compute them
   (:meth:`RunLifecycle.floors_and_baselines`);
8. the scoring process told to exit while the metrics are written, and waited for at the end
   (:meth:`RunLifecycle.close`).

What each one bought, measured: docs/performance.md.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from rich.progress import Progress

from ruwikibench.aggregation.baselines import derived_current
from ruwikibench.aggregation.derived import compute_floors_and_baselines
from ruwikibench.runner.admission import FanOutSlots, fan_out_budget
from ruwikibench.runner.options import RunOptions
from ruwikibench.runner.progress_lines import PlainProgress, StageUsage, run_progress
from ruwikibench.runner.score_process import ScoringProcess, WorkerSetup, wanted
from ruwikibench.runner.warmup import warm_up
from ruwikibench.runtime.executors import (
    freeze_heap,
    give_back_free_memory,
    resume_gc,
    run_cpu,
    run_gc_thresholds,
    run_io,
    run_on_model_lane,
)
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Unit

if TYPE_CHECKING:
    from ruwikibench.runner.unit_runner import Runner


class RunLifecycle:
    """The performance hooks of one run, around the steps that :func:`ruwikibench.runner.execute.execute`
    takes."""

    def __init__(self, context: StageContext, runner: Runner, options: RunOptions) -> None:
        self.context = context
        self.runner = runner
        self.options = options

    @asynccontextmanager
    async def scoring_process(self, units: list[Unit], session: dict[str, Any]) -> AsyncIterator[None]:
        """A scoring process of its own for the block when the run wants one (``score_process.wanted``),
        started by the warm-up; when the block ends, however it ends, it is recorded in ``session`` and told
        to exit — it exits while the metrics are written, and :meth:`close` waits for it."""
        context, runner = self.context, self.runner
        if wanted(self.options.score_in, len(units), context.dataset_dir):
            runner.scoring = ScoringProcess(
                WorkerSetup(context.config, str(context.dataset_dir), list(runner.stages))
            )
        try:
            yield
        finally:
            if runner.scoring is not None:
                session["scoring"] = {"in": "process", "baselines_scored_ahead": runner.scoring.scored_ahead}
                runner.scoring.close(wait=False)  # it exits while the metrics are written

    async def run_units(self, units: list[Unit]) -> float:
        """The units run and scored (:func:`_run_units`) with the hooks around them; returns when they
        started."""
        context, runner = self.context, self.runner
        # one role's HTTP clients: before the first request, the others after
        await _prepare_first_client(context)
        warming = asyncio.create_task(_warm_up_after_first_request(context, runner))
        started = time.perf_counter()
        with (
            run_progress(self.options.progress) as progress,
            run_gc_thresholds(),
        ):  # executors.RUN_GC_THRESHOLDS
            try:
                await _run_units(context, runner, units, progress)
            except BaseException:
                warming.cancel()
                raise
            finally:
                # appends handed over by units that were cancelled meanwhile are on disk
                await run_io(lambda: None)
        await warming
        # BM25 serves the units only; the floors' memory (scoring process) comes on top of ours
        context.indexes.clear()
        await run_cpu(give_back_free_memory)  # the floors' memory comes on top of what the LLM phase left
        return started

    async def floors_and_baselines(self) -> None:
        """The run's floors and baselines (aggregation/derived.py) unless they are current: in the scoring
        process when it can build every stage, else on the model lane."""
        runner, rundir = self.runner, self.runner.rundir
        # not current when a unit ran or was scored, or a kill cut the last finish
        if not await run_cpu(derived_current, rundir):
            scoring = runner.scoring
            if scoring is None or not await scoring.floors(rundir.path, list(runner.stages)):
                await run_on_model_lane(compute_floors_and_baselines, rundir, self.context)

    async def close(self) -> None:
        """The scoring process gone, waited for (when the run had one)."""
        if self.runner.scoring is not None:
            await run_cpu(self.runner.scoring.close)


FIRST_REQUEST_WAIT = 0.5
"""Seconds the warm-up waits for a first request (a run with every answer cached sends none)."""

HEAD_START = 0.2
"""Seconds the first unit runs alone at most, before its first request is out (:func:`_run_units`)."""


async def _run_units(
    context: StageContext, runner: Runner, units: list[Unit], progress: Progress | PlainProgress
) -> None:
    """Run the units, as many at once as requests may be in flight and as their fan-outs fit the budget
    (:mod:`ruwikibench.runner.admission`). Twice as many units at once started ~120 units in the first second
    of a whole-sample run, and their CPU steps (KMeans, embedding look-ups, graph set-up) delayed the
    handling of the first answers by ~1 s (bench/pipeline.py: max wait 1.04–1.14 s in 2 of 6 runs; now
    0.55–0.90).

    The first unit runs alone until the run's first request is out (:meth:`~ruwikibench.models.llm.LLM.
    first_request_sent`), until it ends, or for :data:`HEAD_START` seconds: started with it, the other units'
    first steps — a graph start each on the event loop, the embedding model loading on the model lane — ran
    between the hand-over of its request and its sending (~0.1 s of CPU in bench/cold_run.py's run). The other
    roles' HTTP clients are built then too (:func:`_prepare_first_client`), before the other units start."""
    semaphore = asyncio.Semaphore(max(2, context.config.max_concurrency))
    fan_out = FanOutSlots(fan_out_budget(context.config.max_concurrency))  # runner/admission.py
    bars = {
        name: progress.add_task(name, total=sum(1 for u in units if u.stage == name), usage="")
        for name in runner.stages
    }
    stage_usage = StageUsage()  # each bar shows its own stage's calls and tokens

    async def one(unit: Unit) -> None:
        async with fan_out.slot(unit.fan_out), semaphore:
            output = await runner.run_unit(unit)
        if output is not None:  # scored after its slot is given back: scoring waits for the model lane
            await runner.score_output(runner.stages[unit.stage], unit, output)
        progress.update(bars[unit.stage], advance=1, usage=stage_usage.line(unit.stage))

    if runner.scoring is not None:  # the baselines that need no output, whenever the scoring process is idle
        runner.scoring.score_ahead(runner.stages, units)
    context.llm.listeners.append(stage_usage.on_completion)
    head = [asyncio.ensure_future(one(unit)) for unit in units[:1]]
    try:
        await _head_start(context, head)
        await context.llm.prepare()  # every role's HTTP clients, before the other units start
        await asyncio.gather(*head, *(one(unit) for unit in units[1:]))
    except BaseException:
        for task in head:
            task.cancel()
        raise
    finally:
        context.llm.listeners.remove(stage_usage.on_completion)


async def _prepare_first_client(context: StageContext) -> None:
    """The HTTP clients of the first role with a backend that builds them (``prepare``) — with them the client
    library is imported (langchain-openai, the openai SDK: most of the wait) — before the first unit starts;
    the other roles' clients are built once its first request is out (:func:`_run_units`), before the other
    units start. Building every role's clients first (``LLM.prepare``: a CA bundle loaded per client, ~20 ms
    of CPU each) delayed the first request by the clients it does not use; the first unit builds its own
    role's on its first request when it is another role (``OpenAIBackend._clients``)."""
    for backend in context.llm.backends.values():
        prepare = getattr(backend, "prepare", None)
        if prepare is not None:
            await prepare()
            return


async def _head_start(context: StageContext, head: Sequence[asyncio.Future[None]]) -> None:
    """Returns once the first request is out, the ``head`` units are done, or :data:`HEAD_START` seconds
    passed."""
    if not head:
        return
    sent = asyncio.ensure_future(context.llm.first_request_sent())
    try:
        await asyncio.wait({sent, *head}, timeout=HEAD_START, return_when=asyncio.FIRST_COMPLETED)
    finally:
        sent.cancel()


async def _warm_up_after_first_request(context: StageContext, runner: Runner) -> None:
    """The stages' lazy imports (sklearn, scipy, the NER model, …) and the heap freeze, once the first request
    is out (or after :data:`FIRST_REQUEST_WAIT` seconds, when every answer is cached): a run sends its first
    request a second or two sooner, and they load while the first answers are on their way, not mid-run. The
    garbage collector paused for the start-up (:func:`~ruwikibench.runtime.executors.pause_gc`) is on again
    from here."""
    first = asyncio.ensure_future(context.llm.first_request_sent())
    await asyncio.wait({first}, timeout=FIRST_REQUEST_WAIT)
    first.cancel()
    resume_gc()
    if runner.scoring is not None:
        runner.scoring.start()  # the child loads its services while the first answers are on their way
    await run_cpu(warm_up, list(runner.stages), context.config, scoring=runner.scoring is None)
    freeze_heap()
