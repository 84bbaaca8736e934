"""Batch mode: write every selected dataset article from its title alone, score it against the reference.

The run directory has the benchmark runner's layout (``spec.json``, ``outputs.jsonl``, ``results.jsonl``,
``generated.jsonl``, ``errors.jsonl``, ``metrics.json``/``.csv``, ``report.md``) plus ``articles/<name>/``
with each written article and its writer session. Scores use the stage names ``outline`` and ``sections`` (so
``ruwikibench report BENCHMARK_RUN WRITER_RUN`` shows writer-mode figures beside benchmark-mode figures) and
``writer`` (whole-article figures, in this run's report.md), each table with the writer's no-LLM baseline
beside the run. A rerun skips the articles already written.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ruwikibench.aggregation.derived import compute_floors_and_baselines
from ruwikibench.reporting.tables import markdown_table
from ruwikibench.runner.execute import RunOptions, finalize, new_spec, select_articles
from ruwikibench.runner.open_run import OpenRun, open_run, run_id, run_path, writer_key
from ruwikibench.runtime.executors import run_on_model_lane
from ruwikibench.stage.context import StageContext
from ruwikibench.storage.durable import write_atomic
from ruwikibench.storage.results import StageMetrics, versioned
from ruwikibench.storage.rundir import RunDir
from ruwikibench.writer.score import (
    ARTICLE_METRICS,
    WRITER_TABLES,
    generated_texts,
    score_written,
    writer_outputs,
)


class BatchOptions(BaseModel):
    articles: int | None = Field(default=None, description="first N articles of the dataset")
    article_names: list[str] | None = None
    out: Path = Path("runs")
    run_id: str | None = None
    progress: bool = True
    citations: bool = Field(default=True, description="judge citation faithfulness of the written articles")


def batch_run_id(context: StageContext, options: BatchOptions) -> str:
    """The run id of a batch (:func:`ruwikibench.runner.open_run.writer_key`)."""
    assert context.dataset is not None
    return run_id(writer_key(context.config, context.dataset, options.articles, options.article_names))


async def write_batch(context: StageContext, dataset_path: str, options: BatchOptions) -> RunDir:
    """Write and score the selected articles (resuming a previous batch in the same run directory), under the
    config's ``writer`` profile."""
    context = context.with_profile("writer")

    dataset = context.dataset
    assert dataset is not None, "StageContext.dataset must be set for a batch run"
    run_options = RunOptions(
        stages=list(WRITER_TABLES),
        articles=options.articles,
        article_names=options.article_names,
        out=options.out,
        run_id=options.run_id,
        progress=options.progress,
    )
    key = writer_key(context.config, dataset, options.articles, options.article_names)
    with open_run(run_path(options.out, options.run_id, key)) as opened:
        return await _write_batch(context, opened, dataset_path, options, run_options)


async def _write_batch(
    context: StageContext, opened: OpenRun, dataset_path: str, options: BatchOptions, run_options: RunOptions
) -> RunDir:
    dataset = context.dataset
    assert dataset is not None
    rundir = opened.rundir
    spec = new_spec(opened.run_id, context.config, dataset, dataset_path, run_options, mode="writer")
    done = {article for stage, article, _ in rundir.output_keys() if stage == "writer"}
    articles = [a for a in select_articles(dataset, run_options) if a.name not in done]
    started = time.perf_counter()
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[note]}"),
        disable=not options.progress,
    )
    with progress:
        bar = progress.add_task("write", total=len(articles), note="")
        for article in articles:
            progress.update(bar, note=article.title[:40])
            try:
                result = await write_or_resume(
                    context, article.title, rundir.path / "articles" / article.name
                )
                assert result.article is not None
                selected = [
                    s["snippet_id"] for s in json.loads(result.paths["json"].read_text("utf-8"))["sources"]
                ]
                records = await run_on_model_lane(score_written, article, result.article, selected, context)
                texts = generated_texts(article, result.article, records)
                _record(rundir, article.name, article.title, result, records, texts)
            except Exception as exc:  # noqa: BLE001 - counted as a failure of the article in every stage
                for stage in WRITER_TABLES:
                    rundir.append(
                        "errors.jsonl",
                        {
                            "stage": stage,
                            "article": article.name,
                            "unit": "article",
                            "reason": f"{type(exc).__name__}: {exc}",
                            "attempts": 1,
                        },
                    )
            progress.advance(bar)
    spec.prompts = context.prompts.hashes()
    spec.last_session = {
        "wall_time_s": round(time.perf_counter() - started, 2),
        "llm": context.llm.usage.as_dict(),
    }
    opened.write_spec(spec)
    # floors of the outline and section metrics, and the no-LLM baseline (ruwikibench/baselines/writer.py)
    await run_on_model_lane(compute_floors_and_baselines, rundir, context)
    finalize(rundir)
    if options.citations and any((rundir.path / "articles").glob("*/article.json")):
        await judge_batch_citations(context, rundir)
    return rundir


async def judge_batch_citations(context: StageContext, rundir: RunDir) -> None:
    """Citation faithfulness of every written article (the ``support`` role, else ``judge``), then its table
    in report.md; checks already in citations.jsonl are not asked again."""
    from ruwikibench.evaluators.judges.citations import summarize_citations
    from ruwikibench.writer.citations import judge_and_mark

    config = context.config
    await judge_and_mark(
        rundir.path,
        context.llm,
        judge=config.model_for("support").name,
        options=config.citations,
        prompts=context.prompts,
        dataset=context.dataset,
    )
    rows = summarize_citations(rundir.path)
    if rows:
        header = list(rows[0])
        path = rundir.file("report.md")
        table = markdown_table([header, *[[r[h] for h in header] for r in rows]])
        write_atomic(
            path,
            path.read_text(encoding="utf-8") + "\n## citation faithfulness (judge citations; ×100, "
            "mean [95% CI] over sentences / citations)\n\n" + table + "\n",
        )


async def write_or_resume(context: StageContext, title: str, out_dir: Path) -> Any:
    """Write the article; a session left failed or cut off in ``out_dir`` continues from its last checkpoint
    (finished nodes are not rerun; the LLM response cache answers repeated requests)."""
    from ruwikibench.writer.run import read_session, write_article

    if (out_dir / "session.json").exists():
        session = read_session(out_dir)
        if session.title == title and session.status in ("failed", "running"):
            return await write_article(context, title, out_dir, resume=True)
    return await write_article(context, title, out_dir)


def _record(rundir: RunDir, name: str, title: str, result: Any, records: list[Any], texts: list[Any]) -> None:
    tag = {"unit": "article"}
    rundir.append_many(
        "results.jsonl", [versioned(record.model_dump(mode="json") | tag) for record in records]
    )
    rundir.append_many("generated.jsonl", [text.model_dump(mode="json") | tag for text in texts])
    output = {
        "dir": str(result.out_dir),
        "stats": result.article.stats,
        "session": result.session.model_dump(),
    }
    rundir.append_many("outputs.jsonl", writer_outputs(name, title, output))


def article_table(
    run: str, metrics: dict[str, StageMetrics], view: str = "failures_excluded"
) -> list[list[str]]:
    """The whole-article figures of a writer run as table rows (header first), the run followed by its no-LLM
    baselines."""
    from ruwikibench.reporting.tables import cell, with_baseline_rows

    header = ["run", *[m.label for m in ARTICLE_METRICS], "n", "failed"]
    rows = [header]
    for name, data in with_baseline_rows([(run, metrics.get("writer") or StageMetrics())]):
        counts = data.counts
        rows.append(
            [
                name,
                *[cell(data, m.key, view) for m in ARTICLE_METRICS],
                str(counts.evaluated),
                str(counts.failed_units),
            ]
        )
    return rows
