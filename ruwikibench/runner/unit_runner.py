"""One run's units: which are left to run (:meth:`Runner.pending_units`), each run with its retries and
timeout, captured node by node, written, and scored (in the scoring process when the run has one)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from pydantic import BaseModel

from ruwikibench.aggregation.baselines import UNIT_BASELINES_FILE, baseline_names
from ruwikibench.dataset import Article
from ruwikibench.models.local_server import LocalServerDied
from ruwikibench.runner.call_capture import CallCapture, capturing_calls
from ruwikibench.runner.capture import NodeCapture
from ruwikibench.runner.options import RunOptions
from ruwikibench.runner.overrides import check_overrides, stage_graph
from ruwikibench.runner.score_process import ScoringProcess, UnitScored, score_unit, score_unit_baselines
from ruwikibench.runtime.executors import run_io, run_on_model_lane
from ruwikibench.runtime.faults import fault_point
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Stage, StageScore, Unit
from ruwikibench.stage.registry import get_stage
from ruwikibench.storage.call_log import MESSAGES_DIR, CallLog
from ruwikibench.storage.jsonl import unit_key
from ruwikibench.storage.results import versioned
from ruwikibench.storage.rundir import RunDir, scored_units

log = logging.getLogger(__name__)


class Runner:
    """Holds the run directory, the context and the compiled stage graphs for one run."""

    def __init__(self, context: StageContext, rundir: RunDir, options: RunOptions) -> None:
        self.context = context
        self.rundir = rundir
        self.options = options
        self.stages: dict[str, Stage[Any]] = {name: get_stage(name) for name in options.stages}
        overrides = check_overrides(context.config)
        self.graphs = {name: stage_graph(stage, overrides).compile() for name, stage in self.stages.items()}
        self.scoring: ScoringProcess | None = None  # set by the run when it scores in a process of its own
        self.call_log = CallLog(rundir.file(MESSAGES_DIR))  # every call's messages, written per attempt

    def pending_units(self, articles: list[Article]) -> tuple[list[Unit], int]:
        """The units to run, article by article (each article's stages in stage order), and how many units the
        articles have in all.

        Article by article, the units started at any moment mix the stages: the ranking units' relevance
        judgements (~2/3 of the requests, none waiting for another) fill the request slots that the outline
        and section units' chains of dependent calls leave free. Stage by stage, every ranking unit came first
        and the chains ran last, on their own, with ~190 of 256 slots in use (bench/scale.py at 285 articles:
        docs/performance.md, "Garbage collection, and the order units start in")."""
        rerun: dict[tuple[str, str, str], bool] = {}
        for saved in self.rundir.read("outputs.jsonl"):  # streamed: the latest output of a unit decides
            rerun[unit_key(saved)] = bool(self.retry_reason(saved))
        done = {key for key, again in rerun.items() if not again}
        units: list[Unit] = []
        total = 0
        assert self.context.dataset is not None
        for article in articles:
            for name, stage in self.stages.items():
                try:
                    article_units = stage.units(self.context.dataset, article, self.context.config)
                except Exception as exc:  # noqa: BLE001 - bad gold data must not stop the run
                    self.record_error(name, article.name, "*", f"input: {exc}", attempts=0)
                    continue
                total += len(article_units)
                units += [u for u in article_units if (u.stage, u.article, u.unit_id) not in done]
        return units, total

    def retry_reason(self, saved: dict[str, Any]) -> str | None:
        """Why a finished output is run again on resume (the stage's optional ``retry_reason(output)``)."""
        stage = self.stages.get(saved["stage"])
        return stage.retry_reason(saved["output"]) if stage is not None else None

    def unscored_outputs(self) -> list[tuple[Unit, dict[str, Any]]]:
        """Finished outputs of this run's stages that have no score records (cut off before scoring, or their
        scoring failed): scored again by :meth:`score_output` when the run resumes."""
        scored = scored_units(self.rundir.results())
        return [
            (
                Unit(stage=o["stage"], article=o["article"], unit_id=o["unit"], input=o.get("input", {})),
                o["output"],
            )
            for o in self.rundir.iter_outputs()
            if o["stage"] in self.stages and unit_key(o) not in scored
        ]

    def record_error(self, stage: str, article: str, unit: str, reason: str, attempts: int) -> None:
        self.rundir.append(
            "errors.jsonl",
            {"stage": stage, "article": article, "unit": unit, "reason": reason, "attempts": attempts},
        )

    async def run_unit(self, unit: Unit) -> dict[str, Any] | None:
        """Run the unit (retried, timed out) and write its output: the output as written, or None when every
        attempt failed (recorded in errors.jsonl). Scoring it is the caller's (:meth:`score_output`): outside
        the unit's slot, so the next unit starts while this one waits for the model lane."""
        last_error = ""
        for attempt in range(1, self.options.retries + 2):
            try:
                coro = self._attempt(unit)
                output = await asyncio.wait_for(coro, self.options.unit_timeout)
                return await self._write_output(unit, output)
            except LocalServerDied:
                raise  # no request can be answered any more: the run stops, resumable
            except TimeoutError:
                last_error = f"timeout: unit exceeded {self.options.unit_timeout} s"
            except Exception as exc:  # noqa: BLE001 - recorded with its reason, the run goes on
                last_error = f"{type(exc).__name__}: {exc}"
        self.record_error(
            unit.stage, unit.article, unit.unit_id, last_error, attempts=self.options.retries + 1
        )
        return None

    async def _attempt(self, unit: Unit) -> dict[str, Any]:
        graph = self.graphs[unit.stage]
        capture = NodeCapture(unit.stage, unit.article, unit.unit_id)
        self.context.llm.listeners.append(capture.on_completion)
        self.context.prompts.listeners.append(capture.on_prompt)
        channels = graph.output_channels
        output_keys = {channels} if isinstance(channels, str) else set(channels)
        final: dict[str, Any] = {}
        # the unit's node records, appended in one write (one fsync) when the attempt ends, however it ends:
        # one fsync per node on the event loop took ~4.5 ms each on a busy disk, ~100k nodes at the paper's
        # size
        nodes: list[dict[str, Any]] = []
        calls: CallCapture | None = None
        try:
            with capture.active(), capturing_calls(self.context, capture) as calls:
                async for namespace, mode, data in graph.astream(  # type: ignore[call-overload]  # no context type
                    unit.input, context=self.context, stream_mode=["tasks", "values"], subgraphs=True
                ):
                    if mode == "tasks":
                        record = capture.on_task(namespace, data)
                        if record:
                            nodes.append(record)
                    elif not namespace:
                        final = data
        finally:
            self.context.llm.listeners.remove(capture.on_completion)
            self.context.prompts.listeners.remove(capture.on_prompt)
            if calls is not None and calls.calls:
                await run_io(self.call_log.append, unit.stage, unit.article, calls.calls)
            if nodes:
                await run_io(self.rundir.append_many, "nodes.jsonl", nodes)
        return {k: v for k, v in final.items() if not output_keys or k in output_keys}

    async def _write_output(self, unit: Unit, output: dict[str, Any]) -> dict[str, Any]:
        """The output as written to outputs.jsonl (JSON types only), written on the writer thread."""
        output = await run_io(self._append_output, unit, output)
        fault_point("after_outputs")
        return output

    def _append_output(self, unit: Unit, output: dict[str, Any]) -> dict[str, Any]:
        output = json.loads(json.dumps(output, ensure_ascii=False, default=_jsonable))
        self.rundir.append(
            "outputs.jsonl",
            {
                "stage": unit.stage,
                "article": unit.article,
                "unit": unit.unit_id,
                "input": unit.input,
                "output": output,
            },
        )
        return output

    async def score_output(self, stage: Stage[Any], unit: Unit, output: dict[str, Any]) -> None:
        """Score in the scoring process when the run has one (and it can build the stage), else on the model
        lane (scoring embeds); the records are written here. Here the unit's baselines are a model-lane job of
        their own, after its scores (other units' embedding jobs queued meanwhile go first)."""
        with_baselines = bool(baseline_names(stage))
        if self.scoring is not None and await self.scoring.scores(unit.stage):
            elsewhere = await self.scoring.score(unit.stage, unit, output, with_baselines)
            if elsewhere is not None:
                await self._write_scored(unit, elsewhere)
                return
        scored = await run_on_model_lane(score_unit, stage, unit, output, self.context)
        await self._write_scored(unit, scored)
        if with_baselines and scored.score is not None:
            await self._write_scored(
                unit, await run_on_model_lane(score_unit_baselines, stage, unit, output, self.context)
            )

    async def _write_scored(self, unit: Unit, scored: UnitScored) -> None:
        """A unit's scores or its scoring error; its baseline record or why it failed (a warning)."""
        if scored.error is not None:
            self.record_error(unit.stage, unit.article, unit.unit_id, f"score: {scored.error}", 0)
            return
        if scored.score is not None:
            await run_io(self._append_scores, unit, scored.score)
        if scored.baselines is not None:
            await run_io(self.rundir.append, UNIT_BASELINES_FILE, scored.baselines)
        elif scored.baselines_error is not None:
            log.warning(
                "baselines of %s/%s/%s not scored: %s",
                unit.stage,
                unit.article,
                unit.unit_id,
                scored.baselines_error,
            )

    def _append_scores(self, unit: Unit, scored: StageScore) -> None:
        tag = {"unit": unit.unit_id}
        self.rundir.append_many(
            "generated.jsonl", [text.model_dump(mode="json") | tag for text in scored.texts]
        )
        self.rundir.append_many(
            "results.jsonl", [versioned(record.model_dump(mode="json") | tag) for record in scored.records]
        )


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    return str(obj)
