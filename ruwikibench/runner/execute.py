"""Run benchmark stages over a dataset: every unit on gold inputs, captured, scored, persisted, resumable.

Units of all stages and articles run concurrently; the only limit on LLM traffic is the LLM client's one
global semaphore (``RunConfig.max_concurrency``), so there are no batches and no barriers. A unit whose
output is already in ``outputs.jsonl`` is not run again; LLM requests of a unit cut off mid-way are answered
by the response cache when the unit is rerun. A finished output without score records (a run killed between
writing the two) is scored when the run resumes. The run directory is locked (``run.lock``) while a run writes
it.

:func:`execute` takes the run's steps in order (:func:`_execute_locked`); the performance hooks around them
(head start, warm-up, garbage collector, scoring process, memory given back) are :class:`RunLifecycle`'s
(runner/lifecycle.py). The run's options, id and spec, its units and its metrics are modules of their own;
their names used by the CLI and the API are importable from here too (``__all__``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ruwikibench.dataset import Dataset
from ruwikibench.runner.finalize import finalize
from ruwikibench.runner.lifecycle import RunLifecycle
from ruwikibench.runner.open_run import OpenRun, open_run, run_path
from ruwikibench.runner.options import RunOptions, select_articles
from ruwikibench.runner.reference_queries import session_record, write_missing_queries
from ruwikibench.runner.run_spec import build_spec, new_spec, run_id_for, run_inputs, run_key
from ruwikibench.runner.same_run import check_same_specs
from ruwikibench.runner.unit_runner import Runner
from ruwikibench.runtime.executors import run_cpu
from ruwikibench.runtime.faults import fault_point
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Unit
from ruwikibench.storage.rundir import RunDir
from ruwikibench.storage.runspec import RunSpec, ShardRecord, UnitCounts

__all__ = [
    "RunOptions",
    "Runner",
    "build_spec",
    "execute",
    "finalize",
    "new_spec",
    "run_id_for",
    "run_inputs",
    "select_articles",
]


async def execute(context: StageContext, dataset_path: str, options: RunOptions) -> RunDir:
    """Run (or resume) the selected stages; writes the whole run directory and returns it."""
    dataset = context.dataset
    assert dataset is not None, "StageContext.dataset must be set for a benchmark run"
    articles = select_articles(
        dataset, options
    )  # an unknown --article stops here, before a run directory exists
    written = await write_missing_queries(
        context, options.stages, articles, options.progress
    )  # before the id
    inputs = await run_cpu(run_inputs, context.config, options, context.dataset_dir)  # hashes a file
    key = await run_cpu(run_key, context.config, dataset, options, inputs)
    path = run_path(options.out, options.run_id, key)
    if options.shard is not None:  # <run id>.shard-I-of-N: the run id stays the same for every shard
        path = path.with_name(options.shard.directory(path.name))
    with open_run(path) as opened:
        return await _execute_locked(
            context, opened, dataset, dataset_path, options, inputs, session_record(written)
        )


async def _execute_locked(
    context: StageContext,
    opened: OpenRun,
    dataset: Dataset,
    dataset_path: str,
    options: RunOptions,
    inputs: dict[str, Any],
    session: dict[str, Any],
) -> RunDir:
    """The run's steps in order: open (spec, resume check), plan the units, score the outputs a cut-off
    session left unscored, run the units (each scored as it ends), floors and baselines, spec.json, metrics
    and report."""
    spec = await _open(context, opened, dataset, dataset_path, options, inputs)
    runner = await run_cpu(Runner, context, opened.rundir, options)  # compiling graphs: CPU, off the loop
    plan = await _plan_units(runner, dataset, options, spec)
    await _score_unscored(runner, plan)
    lifecycle = RunLifecycle(context, runner, options)
    try:
        async with lifecycle.scoring_process(plan.units, session):
            started = await lifecycle.run_units(plan.units)
            await lifecycle.floors_and_baselines()
        _record_session(spec, context, plan, started, session)
        fault_point("before_spec")
        opened.write_spec(spec)
        await run_cpu(finalize, opened.rundir)  # metrics.json, metrics.csv, report.md
    finally:
        await lifecycle.close()
    return opened.rundir


@dataclass
class UnitPlan:
    """The units a session runs, how many units its articles have in all, and the outputs it scores first."""

    units: list[Unit]
    total: int
    unscored: list[tuple[Unit, dict[str, Any]]]


async def _open(
    context: StageContext,
    opened: OpenRun,
    dataset: Dataset,
    dataset_path: str,
    options: RunOptions,
    inputs: dict[str, Any],
) -> RunSpec:
    """The run's spec, checked against the one in the directory when the run resumes."""
    run_id = options.shard.run_id_of(opened.run_id) if options.shard is not None else opened.run_id
    spec = await run_cpu(new_spec, run_id, context.config, dataset, dataset_path, options, inputs)  # runs git
    opened.check_resume(spec, check_same_specs)
    previous = opened.previous_spec()
    if previous is not None:  # a rerun keeps the prompts earlier sessions served: this one may serve none
        spec.prompts = previous.prompts
        spec.scored_with = previous.scored_with  # scores a `ruwikibench score` wrote are still in the run
    return spec


async def _plan_units(runner: Runner, dataset: Dataset, options: RunOptions, spec: RunSpec) -> UnitPlan:
    articles = select_articles(dataset, options)
    if options.shard is not None:  # which share this directory holds: `ruwikibench merge` checks them
        spec.shard = ShardRecord(
            index=options.shard.index, count=options.shard.count, articles=[a.name for a in articles]
        )
    units, total = await run_cpu(runner.pending_units, articles)
    unscored = await run_cpu(runner.unscored_outputs)
    return UnitPlan(units, total, unscored)


async def _score_unscored(runner: Runner, plan: UnitPlan) -> None:
    for unit, output in plan.unscored:
        await runner.score_output(runner.stages[unit.stage], unit, output)


def _record_session(
    spec: RunSpec, context: StageContext, plan: UnitPlan, started: float, session: dict[str, Any]
) -> None:
    """spec.json's prompts (earlier sessions' and this one's), unit counts and last session (wall time since
    the units started, LLM usage)."""
    spec.prompts = dict(sorted({**spec.prompts, **context.prompts.hashes()}.items()))
    spec.units = UnitCounts(total=plan.total, run_now=len(plan.units), scored_on_resume=len(plan.unscored))
    spec.last_session = {
        "wall_time_s": round(time.perf_counter() - started, 2),
        "llm": context.llm.usage.as_dict(),
        **session,
    }
