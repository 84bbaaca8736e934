"""Run benchmark stages over a dataset: every unit on gold inputs, captured, scored, persisted, resumable.

Units of all stages and articles run concurrently; the only limit on LLM traffic is the LLM client's one
global semaphore (``RunConfig.max_concurrency``), so there are no batches and no barriers. A unit whose
output is already in ``outputs.jsonl`` is not run again; LLM requests of a unit cut off mid-way are answered
by the response cache when the unit is rerun. A finished output without score records (a run killed between
writing the two) is scored when the run resumes. The run directory is locked (``run.lock``) while a run writes it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ruwikibench.config import RunConfig, RunInputError
from ruwikibench.context import StageContext
from ruwikibench.contract import Stage, StageScore, Unit, current_stage_name
from ruwikibench.dataset import Article, Dataset
from ruwikibench.durable import write_atomic
from ruwikibench.executors import (
    freeze_heap,
    give_back_free_memory,
    resume_gc,
    run_cpu,
    run_gc_thresholds,
    run_io,
    run_on_model_lane,
)
from ruwikibench.faults import fault_point
from ruwikibench.jsonl import unit_key
from ruwikibench.nodes.queries import reference_queries_identity
from ruwikibench.registry import get_stage
from ruwikibench.rundir import FLOORS_FILE, RunDir, scored_units
from ruwikibench.runner.admission import FanOutSlots, fan_out_budget
from ruwikibench.runner.baselines import (
    BASELINES_FILE,
    UNIT_BASELINES_FILE,
    add_baselines,
    baseline_names,
    derived_current,
)
from ruwikibench.runner.capture import NodeCapture
from ruwikibench.runner.derived import compute_floors_and_baselines
from ruwikibench.runner.identity import stages_identity
from ruwikibench.runner.metrics import aggregate, metrics_rows
from ruwikibench.runner.open_run import OpenRun, RunKey, benchmark_key, open_run, run_id, run_path
from ruwikibench.runner.overrides import check_overrides, spec_records, stage_graph
from ruwikibench.runner.reference_queries import (
    reads_reference_queries,
    session_record,
    write_missing_queries,
)
from ruwikibench.runner.score_process import (
    ScoreIn,
    ScoringProcess,
    UnitScored,
    WorkerSetup,
    score_unit,
    score_unit_baselines,
    wanted,
)
from ruwikibench.runner.shard import Shard
from ruwikibench.runner.warmup import warm_up
from ruwikibench.runspec import (
    FORMAT_VERSION,
    RunMode,
    RunSpec,
    ShardRecord,
    UnitCounts,
    parse_spec,
    read_spec,
)
from ruwikibench.secrets import redact_data
from ruwikibench.version import __version__

log = logging.getLogger(__name__)


class RunOptions(BaseModel):
    stages: list[Annotated[str, AfterValidator(current_stage_name)]] = Field(
        default_factory=lambda: ["ranking", "outline", "sections"]
    )
    articles: int | None = Field(default=None, description="first N articles of the dataset")
    article_names: list[str] | None = None
    out: Path = Path("runs")
    run_id: str | None = None
    retries: int = Field(default=1, description="extra attempts for a failed unit")
    unit_timeout: float | None = Field(default=None, description="seconds per unit attempt")
    progress: bool = True
    shard: Shard | None = Field(
        default=None, description="run only this share of the articles (not in the run id)"
    )
    score_in: ScoreIn = Field(
        default="auto",
        description="where units are scored: 'process' (a process of its own, "
        "on another core), 'thread' (this process), 'auto' (a process when the run has "
        "enough units and the machine two cores; runner/score_process.py)",
    )


class UnknownArticle(RunInputError, KeyError):
    """--article names an article the dataset does not hold."""

    __str__ = BaseException.__str__  # one plain line, not KeyError's quoted repr


def select_articles(dataset: Dataset, options: RunOptions) -> list[Article]:
    """The articles a run covers (``--article`` names, then the first ``--articles`` N); bad values are
    :class:`RunInputError`."""
    if options.articles is not None and options.articles < 1:
        raise RunInputError(f"--articles {options.articles}: the number of articles must be at least 1")
    articles = dataset.articles
    if options.article_names:
        known = {a.name for a in articles} | {a.title for a in articles}
        for name in options.article_names:
            if name not in known:
                sample = ", ".join(repr(a.title) for a in articles[:5])
                raise UnknownArticle(
                    f"--article {name!r}: no such article (name or title) in the dataset "
                    f"({len(articles)} articles, e.g. {sample})"
                )
        articles = [dataset.article(name) for name in options.article_names]
    if options.articles is not None:
        articles = articles[: options.articles]
    if options.shard is not None:
        articles = [a for a in articles if options.shard.holds(a.name)]
    return articles


def run_inputs(config: RunConfig, options: RunOptions, dataset_dir: Path | None) -> dict[str, Any]:
    """Files besides the config and the dataset that change a run's answers: the stored reference queries
    (path, sha256, writing model) when the ranking stage runs with ``query_mode: reference``; else nothing."""
    if reads_reference_queries(config, options.stages):
        return {"reference_queries": reference_queries_identity(config, dataset_dir)}
    return {}


def run_id_for(
    config: RunConfig, dataset: Dataset, options: RunOptions, inputs: dict[str, Any] | None = None
) -> str:
    """Deterministic id (:func:`ruwikibench.runner.open_run.benchmark_key`): the same command on the same data
    resumes the same run directory, whatever endpoint, timeout or concurrency it uses. ``inputs``: :func:`run_inputs`."""
    return run_id(run_key(config, dataset, options, inputs))


def run_key(
    config: RunConfig, dataset: Dataset, options: RunOptions, inputs: dict[str, Any] | None = None
) -> RunKey:
    return benchmark_key(
        config,
        dataset,
        options.stages,
        options.articles,
        options.article_names,
        run_stages_identity(config, options),
        inputs,
    )


def run_stages_identity(config: RunConfig, options: RunOptions) -> dict[str, dict[str, Any]]:
    """:func:`ruwikibench.runner.identity.stages_identity` of the stages a run runs."""
    return stages_identity([get_stage(name) for name in options.stages], config)


def git_commit() -> str | None:
    try:
        root = Path(__file__).resolve().parents[2]
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            check=False,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def build_spec(
    run_id: str,
    config: RunConfig,
    dataset: Dataset,
    dataset_path: str,
    options: RunOptions,
    inputs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """spec.json as written (:meth:`RunSpec.record`) of :func:`new_spec`."""
    return new_spec(run_id, config, dataset, dataset_path, options, inputs).record()


def new_spec(
    run_id: str,
    config: RunConfig,
    dataset: Dataset,
    dataset_path: str,
    options: RunOptions,
    inputs: dict[str, Any] | None = None,
    mode: RunMode = "benchmark",
) -> RunSpec:
    """The :class:`RunSpec` of a run: versions, dataset, models, config, options, and the ``inputs``
    (:func:`run_inputs`) it read; secrets redacted (:mod:`ruwikibench.secrets`)."""
    return RunSpec.model_validate(
        redact_data(
            {
                "format_version": FORMAT_VERSION,
                "run_id": run_id,
                "mode": mode,
                "package_version": __version__,
                "git_commit": git_commit(),
                "dataset": {"id": dataset.dataset_id, "path": dataset_path, "params": dataset.params},
                "models": {role: m.identity() for role, m in config.models.items()},
                "embedder": config.embedder.id,
                "profile": config.profile,
                "overrides": spec_records(check_overrides(config)),
                **_stage_identity_block(config, options),
                "config": config.model_dump(mode="json"),
                "options": options.model_dump(
                    mode="json", exclude={"progress"} | ({"shard"} if options.shard is None else set())
                ),
                **(inputs or {}),
                "prompts": {},
                "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            }
        )
    )


def _stage_identity_block(config: RunConfig, options: RunOptions) -> dict[str, Any]:
    """spec.json's ``stage_identity`` (plug-in stages' code, prompt files): absent when there is none."""
    stages = run_stages_identity(config, options)
    return {"stage_identity": stages} if stages else {}


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

    def pending_units(self, articles: list[Article]) -> tuple[list[Unit], int]:
        """The units to run, article by article (each article's stages in stage order), and how many units the
        articles have in all.

        Article by article, the units started at any moment mix the stages: the ranking units' relevance
        judgements (~2/3 of the requests, none waiting for another) fill the request slots that the outline and
        section units' chains of dependent calls leave free. Stage by stage, every ranking unit came first and the
        chains ran last, on their own, with ~190 of 256 slots in use (bench/scale.py at 285 articles:
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
        # the unit's node records, appended in one write (one fsync) when the attempt ends, however it ends: one
        # fsync per node on the event loop took ~4.5 ms each on a busy disk, ~100k nodes at the paper's size
        nodes: list[dict[str, Any]] = []
        try:
            with capture.active():
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
        """Score in the scoring process when the run has one (and it can build the stage), else on the model lane
        (scoring embeds); the records are written here. Here the unit's baselines are a model-lane job of their
        own, after its scores (other units' embedding jobs queued meanwhile go first)."""
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
            "results.jsonl", [record.model_dump(mode="json") | tag for record in scored.records]
        )


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    return str(obj)


def _progress(enabled: bool) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[usage]}"),
        disable=not enabled,
    )


def _usage_line(context: StageContext) -> str:
    usage = context.llm.usage.as_dict()
    calls = sum(u["calls"] for u in usage.values())
    hits = sum(u["cache_hits"] for u in usage.values())
    tokens = sum(u["prompt_tokens"] + u["completion_tokens"] for u in usage.values())
    return f"calls {calls} · cache hits {hits} · tokens {tokens}"


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


FIRST_REQUEST_WAIT = (
    0.5  # seconds the warm-up waits for a first request (a run with every answer cached sends none)
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
    rundir = opened.rundir
    run_id = options.shard.run_id_of(opened.run_id) if options.shard is not None else opened.run_id
    spec = await run_cpu(new_spec, run_id, context.config, dataset, dataset_path, options, inputs)  # runs git
    opened.check_resume(spec, _check_same_specs)
    runner = await run_cpu(Runner, context, rundir, options)  # compiling graphs: CPU, off the loop
    articles = select_articles(dataset, options)
    if options.shard is not None:  # which share this directory holds: `ruwikibench merge` checks them
        spec.shard = ShardRecord(
            index=options.shard.index, count=options.shard.count, articles=[a.name for a in articles]
        )
    units, total = await run_cpu(runner.pending_units, articles)
    unscored = await run_cpu(runner.unscored_outputs)
    for unit, output in unscored:
        await runner.score_output(runner.stages[unit.stage], unit, output)
    if wanted(options.score_in, len(units), context.dataset_dir):
        runner.scoring = ScoringProcess(
            WorkerSetup(context.config, str(context.dataset_dir), list(runner.stages))
        )
    try:
        try:
            started = await _run_and_score(context, runner, units, options)
        finally:
            if runner.scoring is not None:
                session["scoring"] = {"in": "process", "baselines_scored_ahead": runner.scoring.scored_ahead}
                runner.scoring.close(wait=False)  # it exits while the metrics are written
        spec.prompts = context.prompts.hashes()
        spec.units = UnitCounts(total=total, run_now=len(units), scored_on_resume=len(unscored))
        spec.last_session = {
            "wall_time_s": round(time.perf_counter() - started, 2),
            "llm": context.llm.usage.as_dict(),
            **session,
        }
        fault_point("before_spec")
        opened.write_spec(spec)
        await run_cpu(finalize, rundir)
    finally:
        if runner.scoring is not None:
            await run_cpu(runner.scoring.close)
    return rundir


async def _run_and_score(
    context: StageContext, runner: Runner, units: list[Unit], options: RunOptions
) -> float:
    """The units run and scored, then the run's floors and baselines; returns when the units started."""
    rundir = runner.rundir
    await _prepare_first_client(
        context
    )  # one role's HTTP clients: before the first request, the others after
    warming = asyncio.create_task(_warm_up_after_first_request(context, runner))
    started = time.perf_counter()
    with _progress(options.progress) as progress, run_gc_thresholds():  # executors.RUN_GC_THRESHOLDS
        try:
            await _run_units(context, runner, units, progress)
        except BaseException:
            warming.cancel()
            raise
        finally:
            await run_io(
                lambda: None
            )  # appends handed over by units that were cancelled meanwhile are on disk
    await warming
    context.indexes.clear()  # BM25 serves the units only; the floors' memory (scoring process) comes on top of ours
    await run_cpu(give_back_free_memory)  # the floors' memory comes on top of what the LLM phase left
    if not await run_cpu(derived_current, rundir):  # a unit ran or was scored, or a kill cut the last finish
        scoring = runner.scoring
        if scoring is None or not await scoring.floors(rundir.path, list(runner.stages)):
            await run_on_model_lane(compute_floors_and_baselines, rundir, context)
    return started


HEAD_START = 0.2
"""Seconds the first unit runs alone at most, before its first request is out (:func:`_run_units`)."""


async def _run_units(context: StageContext, runner: Runner, units: list[Unit], progress: Progress) -> None:
    """Run the units, as many at once as requests may be in flight and as their fan-outs fit the budget
    (:mod:`ruwikibench.runner.admission`). Twice as many units at once started ~120 units in the first second of
    a whole-sample run, and their CPU steps (KMeans, embedding look-ups, graph set-up) delayed the
    handling of the first answers by ~1 s (bench/pipeline.py: max wait 1.04–1.14 s in 2 of 6 runs; now 0.55–0.90).

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

    async def one(unit: Unit) -> None:
        async with fan_out.slot(unit.fan_out), semaphore:
            output = await runner.run_unit(unit)
        if output is not None:  # scored after its slot is given back: scoring waits for the model lane
            await runner.score_output(runner.stages[unit.stage], unit, output)
        progress.update(bars[unit.stage], advance=1, usage=_usage_line(context))

    if runner.scoring is not None:  # the baselines that need no output, whenever the scoring process is idle
        runner.scoring.score_ahead(runner.stages, units)
    head = [asyncio.ensure_future(one(unit)) for unit in units[:1]]
    try:
        await _head_start(context, head)
        await context.llm.prepare()  # every role's HTTP clients, before the other units start
        await asyncio.gather(*head, *(one(unit) for unit in units[1:]))
    except BaseException:
        for task in head:
            task.cancel()
        raise


async def _prepare_first_client(context: StageContext) -> None:
    """The HTTP clients of the first role with a backend that builds them (``prepare``) — with them the client
    library is imported (langchain-openai, the openai SDK: most of the wait) — before the first unit starts; the
    other roles' clients are built once its first request is out (:func:`_run_units`), before the other units
    start. Building every role's clients first (``LLM.prepare``: a CA bundle loaded per client, ~20 ms of CPU each)
    delayed the first request by the clients it does not use; the first unit builds its own role's on its first
    request when it is another role (``OpenAIBackend._clients``)."""
    for backend in context.llm.backends.values():
        prepare = getattr(backend, "prepare", None)
        if prepare is not None:
            await prepare()
            return


async def _head_start(context: StageContext, head: Sequence[asyncio.Future[None]]) -> None:
    """Returns once the first request is out, the ``head`` units are done, or :data:`HEAD_START` seconds passed."""
    if not head:
        return
    sent = asyncio.ensure_future(context.llm.first_request_sent())
    try:
        await asyncio.wait({sent, *head}, timeout=HEAD_START, return_when=asyncio.FIRST_COMPLETED)
    finally:
        sent.cancel()


async def _warm_up_after_first_request(context: StageContext, runner: Runner) -> None:
    """The stages' lazy imports (sklearn, scipy, the NER model, …) and the heap freeze, once the first request is
    out (or after :data:`FIRST_REQUEST_WAIT` seconds, when every answer is cached): a run sends its first request
    a second or two sooner, and they load while the first answers are on their way, not mid-run. The garbage
    collector paused for the start-up (:func:`~ruwikibench.executors.pause_gc`) is on again from here."""
    first = asyncio.ensure_future(context.llm.first_request_sent())
    await asyncio.wait({first}, timeout=FIRST_REQUEST_WAIT)
    first.cancel()
    resume_gc()
    if runner.scoring is not None:
        runner.scoring.start()  # the child loads its services while the first answers are on their way
    await run_cpu(warm_up, list(runner.stages), context.config, scoring=runner.scoring is None)
    freeze_heap()


def _check_same_run(rundir: RunDir, spec: RunSpec | dict[str, Any]) -> None:
    """A run directory resumed only by the same run: :func:`_check_same_specs` against its spec.json."""
    _check_same_specs(rundir, read_spec(rundir.path), spec if isinstance(spec, RunSpec) else parse_spec(spec))


def _check_same_specs(rundir: RunDir, old: RunSpec, spec: RunSpec) -> None:
    """Same config identity and dataset, same plug-in/override code (:func:`_check_same_code`), same stored
    reference queries (when both runs could read them)."""
    if _identity(old.config) != _identity(spec.config) or old.dataset_id != spec.dataset_id:
        raise RunInputError(
            f"--run-id {rundir.path.name}: {rundir.path} holds a run with another config or "
            "dataset; choose another --run-id"
        )
    _check_same_code(rundir, old, spec)
    before, now = (s.reference_queries.sha256 if s.reference_queries else None for s in (old, spec))
    if before and now and before != now:
        raise RunInputError(
            f"{rundir.path}: holds a run ranked with other stored reference queries "
            f"(sha256 {before[:12]}…, now {now[:12]}…); choose another --run-id"
        )


def _code_hashes(spec: RunSpec) -> dict[str, Any]:
    """The code hashes a spec records: overrides' and plug-in stages' (file sha256, distribution version)."""
    hashes: dict[str, Any] = {
        f"override {key}": [record.get("sha256"), record.get("version")]
        for key, record in spec.overrides.items()
    }
    for name, record in (spec.stage_identity or {}).items():
        code = record.get("code") or {}
        hashes[f"stage {name}"] = [
            code.get("sha256"),
            code.get("version"),
            record.get("prompts"),
            record.get("options"),
        ]
    return hashes


def _check_same_code(rundir: RunDir, old: RunSpec, spec: RunSpec) -> None:
    """A named run (``--run-id``) does not resume over outputs of other plug-in or override code (or other options
    of a stage)."""
    before, now = _code_hashes(old), _code_hashes(spec)
    changed = sorted(key for key in before.keys() & now.keys() if before[key] != now[key])
    if changed:
        raise RunInputError(
            f"{rundir.path}: holds a run made with other code ({', '.join(changed)} changed since); "
            "choose another --run-id"
        )


def _identity(config: Any) -> Any:
    try:
        return RunConfig.model_validate(config).identity()
    except ValueError:  # a spec written by another version: compare as stored
        return config


def finalize(rundir: RunDir) -> dict[str, Any]:
    """Recompute metrics.json/.csv and report.md from the latest score records and the errors still open."""
    from ruwikibench.reporting.run_report import write_run_report
    from ruwikibench.stamps import stamp_metrics

    errors = rundir.open_errors()
    results, floors = rundir.results(), list(rundir.read(FLOORS_FILE))
    metrics = aggregate(results, errors, floors)
    add_baselines(metrics, results, floors, list(rundir.read(BASELINES_FILE)))
    fault_point("before_metrics")
    rundir.write_json("metrics.json", metrics)
    stamp_metrics(rundir)  # report tells a stale metrics.json from a current one (ruwikibench/stamps.py)
    fault_point("before_csv")
    _write_csv(rundir.file("metrics.csv"), metrics_rows(rundir.path.name, metrics))
    fault_point("before_report")
    write_run_report(rundir, metrics, errors)
    return metrics


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    import csv
    import io

    fields = ["run", "stage", "metric", "view", "mean", "low", "high", "n"]
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=fields)
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(path, buffer.getvalue())
