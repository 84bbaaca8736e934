"""Criteria-based LLM judge (POLLUX-style): one call per (text, criterion), rationale + ``[RESULT] n [END]``.

Criteria are data (YAML, read by :mod:`~ruwikibench.evaluators.judges.criteria_set`). Verdicts
(:mod:`~ruwikibench.evaluators.judges.criteria_records`) are appended to ``judge_criteria.jsonl`` in the run
directory as they arrive; a rerun skips pairs already judged. Aggregates (per criterion, article, stage and
run, normalized by the scale; critical failures apart; unparseable verdicts counted: see
:mod:`~ruwikibench.evaluators.judges.criteria_summary`) go to ``judge_criteria.json``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from ruwikibench.evaluators.judges.common import JudgeOptions, format_sources, task_instruction
from ruwikibench.evaluators.judges.criteria_records import (
    RESULTS_JSON,
    RESULTS_JSONL,
    CriterionRecord,
    read_records,
)
from ruwikibench.evaluators.judges.criteria_set import CriteriaSet, Criterion
from ruwikibench.evaluators.judges.criteria_summary import aggregate
from ruwikibench.evaluators.judges.engine import judge_pending
from ruwikibench.evaluators.judges.parsing import parse_criterion_verdict
from ruwikibench.evaluators.judges.rundir import Run, clip, latest_verdicts, text_sha, write_json
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.stage.contract import GeneratedText
from ruwikibench.storage.runlock import run_lock


class CriteriaOptions(JudgeOptions):
    prompt: str = "ru/judge_criteria.txt"
    reference_block: str = "ru/judge_block_reference.txt"
    sources_block: str = "ru/judge_block_sources.txt"


def build_prompt(
    text: GeneratedText, criterion: Criterion, options: CriteriaOptions, prompts: PromptLibrary
) -> str:
    """The judge prompt for one (text, criterion), POLLUX's layout (task, reference, answer, criterion,
    scale)."""
    context = ""
    if options.mode == "guided" and text.reference.strip():
        block = prompts.get(options.reference_block)
        context += block.format(reference=clip(text.reference.strip(), options.limits.reference_chars))
    if "sources" in criterion.requires:
        block = prompts.get(options.sources_block)
        context += block.format(sources=format_sources(text.sources, options.limits, prompts))
    return prompts.get(options.prompt).format(
        instruction=task_instruction(text, prompts),
        context=context,
        answer=clip(text.text.strip(), options.limits.text_chars) or prompts.fragment("empty_answer"),
        criterion=criterion.title,
        description=criterion.description.strip(),
        rubric=criterion.rubric_text(),
        scale=", ".join(map(str, criterion.scale)),
    )


def _record(
    text: GeneratedText, criterion: Criterion, judge: str, options: CriteriaOptions, **fields: object
):
    return CriterionRecord(
        stage=text.stage,
        article=text.article,
        item=text.item,
        title=text.title,
        category=text.category,
        criterion=criterion.name,
        group=criterion.group,
        judge=judge,
        mode=options.mode,
        text_sha=text_sha(text),
        max=criterion.max,
        **fields,  # type: ignore[arg-type]
    )


async def judge_one(
    llm: LLM,
    text: GeneratedText,
    criterion: Criterion,
    judge: str,
    options: CriteriaOptions,
    prompts: PromptLibrary,
) -> CriterionRecord:
    """Judge one text on one criterion; failures become records (status ``error``), never exceptions."""
    reason = criterion.missing(text, options.mode)
    if reason:
        return _record(text, criterion, judge, options, status="not_applicable", detail=reason)
    prompt = build_prompt(text, criterion, options, prompts)
    prompt_sha = hashlib.sha256(prompt.encode()).hexdigest()[:16]
    try:
        completion = await llm.complete(
            "judge",
            prompt,
            max_tokens=options.max_tokens,
            accept=lambda answer: parse_criterion_verdict(answer.text, criterion.scale).status == "ok",
        )
    except Exception as exc:  # noqa: BLE001 — recorded, counted and retried on the next run
        return _record(
            text,
            criterion,
            judge,
            options,
            status="error",
            prompt_sha256=prompt_sha,
            detail=f"{type(exc).__name__}: {exc}",
        )
    verdict = parse_criterion_verdict(completion.text, criterion.scale)
    return _record(
        text,
        criterion,
        judge,
        options,
        status=verdict.status,
        score=verdict.score,
        normalized=criterion.normalize(verdict.score) if verdict.score is not None else None,
        rationale=verdict.rationale,
        verdict=completion.text,
        prompt_sha256=prompt_sha,
    )


def _done(records: Iterable[CriterionRecord], retry_unparseable: bool) -> set[tuple[str, ...]]:
    settled = (
        {"ok", "not_applicable"}
        if retry_unparseable
        else {"ok", "not_applicable", "unparseable", "ambiguous", "out_of_range"}
    )
    return {(*r.key(), r.text_sha) for r in records if r.status in settled}


async def judge_run(
    run: Run,
    llm: LLM,
    criteria: CriteriaSet,
    *,
    judge: str,
    options: CriteriaOptions | None = None,
    prompts: PromptLibrary | None = None,
    progress: bool = True,
) -> dict[str, object]:
    """Judge every (text, criterion) of a run not judged yet; append verdicts as they arrive; write aggregates
    (holding the run directory's lock)."""
    with run_lock(run.path):
        return await _judge_run(
            run, llm, criteria, judge=judge, options=options, prompts=prompts, progress=progress
        )


async def _judge_run(
    run: Run,
    llm: LLM,
    criteria: CriteriaSet,
    *,
    judge: str,
    options: CriteriaOptions | None,
    prompts: PromptLibrary | None,
    progress: bool,
) -> dict[str, object]:
    options = options or CriteriaOptions()
    prompts = prompts or PromptLibrary(run.config.prompts_dir if run.config else None)
    path = run.path / RESULTS_JSONL
    done = _done(latest_verdicts(read_records(path)), options.retry_unparseable)
    pending = [
        (text, criterion)
        for text in run.texts
        for criterion in criteria.criteria
        if (text.stage, text.article, text.item, criterion.name, judge, options.mode, text_sha(text))
        not in done
    ]
    await judge_pending(
        path,
        [judge_one(llm, t, c, judge, options, prompts) for t, c in pending],
        "judge criteria",
        progress=progress,
    )
    summary = write_summary(run.path, criteria, prompts=prompts, options=options, usage=llm.usage.as_dict())
    summary["judged_now"] = len(pending)
    return summary


def write_summary(
    run_dir: Path,
    criteria: CriteriaSet | None = None,
    *,
    prompts: PromptLibrary | None = None,
    options: CriteriaOptions | None = None,
    usage: dict[str, dict[str, float]] | None = None,
) -> dict[str, object]:
    """Aggregate judge_criteria.jsonl into judge_criteria.json (one summary per judge model and mode)."""
    records = latest_verdicts(read_records(run_dir / RESULTS_JSONL))
    data: dict[str, object] = {
        "criteria_set": criteria.name if criteria else None,
        "criteria_sha256": criteria.sha256 if criteria else None,
        "criteria": {c.name: c.model_dump() for c in criteria.criteria} if criteria else {},
        "options": options.model_dump() if options else None,
        "prompt_sha256": prompts.hashes() if prompts else {},
        "usage": usage or {},
        "summaries": [s.model_dump() for s in aggregate(records)],
    }
    write_json(run_dir / RESULTS_JSON, data)
    return data
