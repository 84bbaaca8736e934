"""Run benchmark stages over a dataset: every unit on gold inputs, captured, scored, persisted, resumable.

Units of all stages and articles run concurrently; the only limit on LLM traffic is the LLM client's one
global semaphore (``RunConfig.max_concurrency``), so there are no batches and no barriers. A unit whose
output is already in ``outputs.jsonl`` is not run again; LLM requests of a unit cut off mid-way are answered
by the response cache when the unit is rerun. A finished output without score records (a run killed between
writing the two) is scored when the run resumes. The run directory is locked (``run.lock``) while a run writes it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ruwikibench import __version__
from ruwikibench.config import RunConfig, RunInputError
from ruwikibench.context import StageContext
from ruwikibench.contract import current_stage_name
from ruwikibench.dataset import Article, Dataset
from ruwikibench.durable import write_atomic
from ruwikibench.executors import freeze_heap, run_cpu, run_on_model_lane
from ruwikibench.faults import fault_point
from ruwikibench.jsonl import unit_key
from ruwikibench.nodes.queries import reference_queries_identity
from ruwikibench.rundir import RunDir, scored_units
from ruwikibench.runner.baselines import (
    BASELINES_FILE,
    add_baselines,
    compute_floors_and_baselines,
    derived_current,
)
from ruwikibench.runner.capture import NodeCapture
from ruwikibench.runner.floors import FLOORS_FILE
from ruwikibench.runner.identity import identity_key, stages_identity
from ruwikibench.runner.metrics import aggregate, metrics_rows
from ruwikibench.runner.overrides import check_overrides, fingerprint, spec_records, stage_graph
from ruwikibench.runner.stage import Stage, Unit, get_stage
from ruwikibench.runner.warmup import warm_up
from ruwikibench.secrets import redact_data


class RunOptions(BaseModel):
    stages: list[Annotated[str, AfterValidator(current_stage_name)]] = Field(
        default_factory=lambda: ["ranking", "outline", "sections"])
    articles: int | None = Field(default=None, description="first N articles of the dataset")
    article_names: list[str] | None = None
    out: Path = Path("runs")
    run_id: str | None = None
    retries: int = Field(default=1, description="extra attempts for a failed unit")
    unit_timeout: float | None = Field(default=None, description="seconds per unit attempt")
    progress: bool = True


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
                raise UnknownArticle(f"--article {name!r}: no such article (name or title) in the dataset "
                                     f"({len(articles)} articles, e.g. {sample})")
        articles = [dataset.article(name) for name in options.article_names]
    if options.articles is not None:
        articles = articles[: options.articles]
    return articles


def run_inputs(config: RunConfig, options: RunOptions, dataset_dir: Path | None) -> dict[str, Any]:
    """Files besides the config and the dataset that change a run's answers: the stored reference queries
    (path, sha256, writing model) when the ranking stage runs with ``query_mode: reference``; else nothing."""
    if "ranking" in options.stages and config.ranking.query_mode == "reference":
        return {"reference_queries": reference_queries_identity(config, dataset_dir)}
    return {}


def run_id_for(
    config: RunConfig, dataset: Dataset, options: RunOptions, inputs: dict[str, Any] | None = None
) -> str:
    """Deterministic id: the same command on the same data resumes the same run directory (whatever endpoint,
    timeout or concurrency it uses: :meth:`RunConfig.identity`). ``inputs``: :func:`run_inputs` (left out of
    the hash when empty, so runs that read no such file keep their ids)."""
    parts: list[object] = [
        config.identity(), dataset.dataset_id, options.stages, options.articles, options.article_names
    ]
    if config.overrides:  # the code of every override (its source's sha256), not just its import path
        parts.append(fingerprint(check_overrides(config)))
    stages = run_stages_identity(config, options)
    if stages:  # plug-in stages: their code and prompt files (built-in stages add nothing: their ids stay)
        parts.append({"stages": identity_key(stages)})
    if inputs:
        parts.append(inputs)
    key = json.dumps(parts, sort_keys=True, default=str)
    return f"{config.name}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def run_stages_identity(config: RunConfig, options: RunOptions) -> dict[str, dict[str, Any]]:
    """:func:`ruwikibench.runner.identity.stages_identity` of the stages a run runs."""
    return stages_identity([get_stage(name) for name in options.stages], config)


def git_commit() -> str | None:
    try:
        root = Path(__file__).resolve().parents[2]
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], check=False, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def build_spec(
    run_id: str, config: RunConfig, dataset: Dataset, dataset_path: str, options: RunOptions,
    inputs: dict[str, Any] | None = None,
) -> dict:
    """spec.json: versions, dataset, models, config, options, and the ``inputs`` (:func:`run_inputs`) it read;
    secrets redacted (:mod:`ruwikibench.secrets`)."""
    return redact_data({
        "run_id": run_id,
        "package_version": __version__,
        "git_commit": git_commit(),
        "dataset": {"id": dataset.dataset_id, "path": dataset_path, "params": dataset.params},
        "models": {role: m.identity() for role, m in config.models.items()},
        "embedder": config.embedder.id,
        "profile": config.profile,
        "overrides": spec_records(check_overrides(config)),
        **_stage_identity_block(config, options),
        "config": config.model_dump(mode="json"),
        "options": options.model_dump(mode="json", exclude={"progress"}),
        **(inputs or {}),
        "prompts": {},
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
    })


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
        self.stages: dict[str, Stage] = {name: get_stage(name) for name in options.stages}
        overrides = check_overrides(context.config)
        self.graphs = {name: stage_graph(stage, overrides).compile() for name, stage in self.stages.items()}

    def pending_units(self, articles: list[Article]) -> tuple[list[Unit], int]:
        done = {unit_key(o) for o in self.rundir.outputs() if not self.retry_reason(o)}
        units: list[Unit] = []
        total = 0
        assert self.context.dataset is not None
        for name, stage in self.stages.items():
            for article in articles:
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
        check = getattr(stage, "retry_reason", None)
        return check(saved["output"]) if check is not None else None

    def unscored_outputs(self) -> list[tuple[Unit, dict[str, Any]]]:
        """Finished outputs of this run's stages that have no score records (cut off before scoring, or their
        scoring failed): scored again by :meth:`score_output` when the run resumes."""
        scored = scored_units(self.rundir.results())
        return [
            (Unit(stage=o["stage"], article=o["article"], unit_id=o["unit"], input=o.get("input", {})), o["output"])
            for o in self.rundir.outputs()
            if o["stage"] in self.stages and unit_key(o) not in scored
        ]

    def record_error(self, stage: str, article: str, unit: str, reason: str, attempts: int) -> None:
        self.rundir.append(
            "errors.jsonl", {"stage": stage, "article": article, "unit": unit, "reason": reason, "attempts": attempts}
        )

    async def run_unit(self, unit: Unit) -> None:
        last_error = ""
        for attempt in range(1, self.options.retries + 2):
            try:
                coro = self._attempt(unit)
                output = await asyncio.wait_for(coro, self.options.unit_timeout)
                await self._finish(unit, output)
                return
            except TimeoutError:
                last_error = f"timeout: unit exceeded {self.options.unit_timeout} s"
            except Exception as exc:  # noqa: BLE001 - recorded with its reason, the run goes on
                last_error = f"{type(exc).__name__}: {exc}"
        self.record_error(unit.stage, unit.article, unit.unit_id, last_error, attempts=self.options.retries + 1)

    async def _attempt(self, unit: Unit) -> dict[str, Any]:
        graph = self.graphs[unit.stage]
        capture = NodeCapture(unit.stage, unit.article, unit.unit_id)
        self.context.llm.listeners.append(capture.on_completion)
        self.context.prompts.listeners.append(capture.on_prompt)
        channels = graph.output_channels
        output_keys = {channels} if isinstance(channels, str) else set(channels)
        final: dict[str, Any] = {}
        try:
            async for namespace, mode, data in graph.astream(  # type: ignore[call-overload]  # a Stage types no context
                unit.input, context=self.context, stream_mode=["tasks", "values"], subgraphs=True
            ):
                if mode == "tasks":
                    record = capture.on_task(namespace, data)
                    if record:
                        self.rundir.append("nodes.jsonl", record)
                elif not namespace:
                    final = data
        finally:
            self.context.llm.listeners.remove(capture.on_completion)
            self.context.prompts.listeners.remove(capture.on_prompt)
        return {k: v for k, v in final.items() if not output_keys or k in output_keys}

    async def _finish(self, unit: Unit, output: dict[str, Any]) -> None:
        stage = self.stages[unit.stage]
        output = json.loads(json.dumps(output, ensure_ascii=False, default=_jsonable))
        self.rundir.append("outputs.jsonl", {"stage": unit.stage, "article": unit.article, "unit": unit.unit_id,
                                             "input": unit.input, "output": output})
        fault_point("after_outputs")
        await self.score_output(stage, unit, output)

    async def score_output(self, stage: Stage, unit: Unit, output: dict[str, Any]) -> None:
        """Score on the model lane (scoring embeds), write the records here."""
        try:
            records, texts = await run_on_model_lane(_score, stage, unit, output, self.context)
        except Exception as exc:  # noqa: BLE001
            self.record_error(unit.stage, unit.article, unit.unit_id, f"score: {type(exc).__name__}: {exc}", 0)
            return
        tag = {"unit": unit.unit_id}
        self.rundir.append_many("generated.jsonl", [text.model_dump(mode="json") | tag for text in texts])
        self.rundir.append_many("results.jsonl", [record.model_dump(mode="json") | tag for record in records])


def _score(stage: Stage, unit: Unit, output: dict[str, Any], context: StageContext) -> tuple[list, list]:
    return stage.score(unit, output, context), stage.texts(unit, output)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    return str(obj)


def _progress(enabled: bool) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[usage]}"), disable=not enabled,
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
    inputs = await run_cpu(run_inputs, context.config, options, context.dataset_dir)  # hashes a file
    select_articles(dataset, options)  # an unknown --article stops here, before a run directory exists
    run_id = options.run_id or run_id_for(context.config, dataset, options, inputs)
    rundir = RunDir(options.out / run_id)
    created = not rundir.path.exists()
    rundir.create()
    try:
        with rundir.lock():
            return await _execute_locked(context, rundir, dataset, dataset_path, options, inputs)
    except BaseException:
        if created:
            _remove_if_empty(rundir)
        raise


FIRST_REQUEST_WAIT = 0.5


def _remove_if_empty(rundir: RunDir) -> None:
    """A run directory this command created and that holds nothing but its lock: removed (a command that stopped
    on bad input leaves no run directory behind)."""
    if {p.name for p in rundir.path.iterdir()} <= {"run.lock"}:
        shutil.rmtree(rundir.path, ignore_errors=True)


async def _execute_locked(
    context: StageContext, rundir: RunDir, dataset: Dataset, dataset_path: str, options: RunOptions,
    inputs: dict[str, Any],
) -> RunDir:
    run_id = rundir.path.name
    spec = await run_cpu(build_spec, run_id, context.config, dataset, dataset_path, options, inputs)  # runs git
    if rundir.file("spec.json").exists():
        _check_same_run(rundir, spec)
    runner = await run_cpu(Runner, context, rundir, options)  # compiling graphs: CPU, off the loop
    articles = select_articles(dataset, options)
    units, total = await run_cpu(runner.pending_units, articles)
    unscored = await run_cpu(runner.unscored_outputs)
    for unit, output in unscored:
        await runner.score_output(runner.stages[unit.stage], unit, output)
    await context.llm.prepare()  # HTTP clients: before the first request
    warming = asyncio.create_task(_warm_up_after_first_request(context, list(runner.stages)))
    # units started at once: as many as requests may be in flight. Twice that started ~120 units in the first
    # second of a whole-sample run, and their CPU steps (KMeans, embedding look-ups, graph set-up) delayed the
    # handling of the first answers by ~1 s (bench/pipeline.py: max wait 1.04–1.14 s in 2 of 6 runs; now 0.55–0.90)
    semaphore = asyncio.Semaphore(max(2, context.config.max_concurrency))
    started = time.perf_counter()
    with _progress(options.progress) as progress:
        bars = {
            name: progress.add_task(name, total=sum(1 for u in units if u.stage == name), usage="")
            for name in runner.stages
        }

        async def one(unit: Unit) -> None:
            async with semaphore:
                await runner.run_unit(unit)
            progress.update(bars[unit.stage], advance=1, usage=_usage_line(context))

        try:
            await asyncio.gather(*(one(u) for u in units))
        except BaseException:
            warming.cancel()
            raise
    await warming
    if not await run_cpu(derived_current, rundir):  # a unit ran or was scored, or a kill cut the last finish
        await run_on_model_lane(compute_floors_and_baselines, rundir, context)
    spec["prompts"] = context.prompts.hashes()
    spec["units"] = {"total": total, "run_now": len(units), "scored_on_resume": len(unscored)}
    spec["last_session"] = {"wall_time_s": round(time.perf_counter() - started, 2), "llm": context.llm.usage.as_dict()}
    fault_point("before_spec")
    rundir.write_json("spec.json", spec)
    await run_cpu(finalize, rundir)
    return rundir


async def _warm_up_after_first_request(context: StageContext, stages: list[str]) -> None:
    """The stages' lazy imports (sklearn, scipy, the NER model, …) and the heap freeze, once the first request is
    out (or after :data:`FIRST_REQUEST_WAIT` seconds, when every answer is cached): a run sends its first request
    a second or two sooner, and they load while the first answers are on their way, not mid-run."""
    first = asyncio.ensure_future(context.llm.first_request_sent())
    await asyncio.wait({first}, timeout=FIRST_REQUEST_WAIT)
    first.cancel()
    await run_cpu(warm_up, stages, context.config)
    freeze_heap()


def _check_same_run(rundir: RunDir, spec: dict[str, Any]) -> None:
    old = rundir.read_json("spec.json")
    if _identity(old.get("config")) != _identity(spec["config"]) or old.get("dataset", {}).get("id") != spec["dataset"]["id"]:
        raise RunInputError(f"--run-id {rundir.path.name}: {rundir.path} holds a run with another config or "
                            "dataset; choose another --run-id")
    _check_same_code(rundir, old, spec)
    before, now = (s.get("reference_queries", {}).get("sha256") for s in (old, spec))
    if before and now and before != now:
        raise RunInputError(f"{rundir.path}: holds a run ranked with other stored reference queries "
                         f"(sha256 {before[:12]}…, now {now[:12]}…); choose another --run-id")


def _code_hashes(spec: dict[str, Any]) -> dict[str, Any]:
    """The code hashes a spec records: overrides' and plug-in stages' (file sha256, distribution version)."""
    hashes: dict[str, Any] = {f"override {key}": [record.get("sha256"), record.get("version")]
                              for key, record in (spec.get("overrides") or {}).items()}
    for name, record in (spec.get("stage_identity") or {}).items():
        code = record.get("code") or {}
        hashes[f"stage {name}"] = [code.get("sha256"), code.get("version"), record.get("prompts"),
                                   record.get("options")]
    return hashes


def _check_same_code(rundir: RunDir, old: dict[str, Any], spec: dict[str, Any]) -> None:
    """A named run (``--run-id``) does not resume over outputs of other plug-in or override code (or other options
    of a stage)."""
    before, now = _code_hashes(old), _code_hashes(spec)
    changed = sorted(key for key in before.keys() & now.keys() if before[key] != now[key])
    if changed:
        raise RunInputError(f"{rundir.path}: holds a run made with other code ({', '.join(changed)} changed since); "
                            "choose another --run-id")


def _identity(config: Any) -> Any:
    try:
        return RunConfig.model_validate(config).identity()
    except ValueError:  # a spec written by another version: compare as stored
        return config


def finalize(rundir: RunDir) -> dict[str, Any]:
    """Recompute metrics.json/.csv and report.md from the latest score records and the errors still open."""
    from ruwikibench.runner.report import write_run_report

    errors = rundir.open_errors()
    results, floors = rundir.results(), list(rundir.read(FLOORS_FILE))
    metrics = aggregate(results, errors, floors)
    add_baselines(metrics, results, floors, list(rundir.read(BASELINES_FILE)))
    fault_point("before_metrics")
    rundir.write_json("metrics.json", metrics)
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
