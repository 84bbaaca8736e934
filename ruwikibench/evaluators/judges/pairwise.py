"""Pairwise side-by-side LLM judge (MT-Bench / rulm-sbs2 style) over the same items of two runs.

The reference run plays A and sits at 0; the other run (the candidate) plays B. For each item the judge sees
both texts (order randomized per item with a seed, or both orders) and ends with
``[[score_first score_second]]`` on a 1–10 scale; scores are mapped back to runs and the per-item delta is B −
A. Reported: mean delta with a bootstrap 95% CI, win/tie/loss, a length-controlled delta, per-category deltas,
position consistency (both orders) and a PNG of horizontal bars with CI whiskers.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from ruwikibench.evaluators.judges.common import (
    ShownOrder,
    task_instruction,
    words,
)
from ruwikibench.evaluators.judges.engine import judge_pending
from ruwikibench.evaluators.judges.pairwise_plots import plot_runs, plot_summary
from ruwikibench.evaluators.judges.pairwise_records import PairRecord, PairwiseOptions
from ruwikibench.evaluators.judges.pairwise_summary import PairwiseSummary, summarize
from ruwikibench.evaluators.judges.parsing import parse_pair_verdict
from ruwikibench.evaluators.judges.rundir import (
    Run,
    RunError,
    clip,
    latest_verdicts,
    read_models,
    safe_id,
    text_key,
    text_sha,
    write_json,
)
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.stage.contract import GeneratedText
from ruwikibench.storage.runlock import run_lock


def file_stem(reference_run: str, candidate_run: str) -> str:
    return f"judge_pairwise_{safe_id(reference_run)}_vs_{safe_id(candidate_run)}"


def pair_items(
    reference: Run, candidate: Run
) -> tuple[list[tuple[GeneratedText, GeneratedText]], dict[str, int]]:
    """Items present in both runs (matched on stage, article, item), and counts of the unmatched ones."""
    ref = {text_key(t): t for t in reference.texts}
    cand = {text_key(t): t for t in candidate.texts}
    both = [k for k in ref if k in cand]
    missing = {
        "only_reference": sum(k not in cand for k in ref),
        "only_candidate": sum(k not in ref for k in cand),
    }
    return [(ref[k], cand[k]) for k in both], missing


def shown_orders(text: GeneratedText, options: PairwiseOptions) -> list[ShownOrder]:
    """The presentation order(s) of an item: both, or one drawn from a per-item seeded generator."""
    if options.order == "both":
        return ["reference_first", "candidate_first"]
    rng = random.Random(f"{options.seed}\x1f{text.stage}\x1f{text.article}\x1f{text.item}")
    return ["reference_first" if rng.random() < 0.5 else "candidate_first"]


def build_prompt(
    first: GeneratedText, second: GeneratedText, options: PairwiseOptions, prompts: PromptLibrary
) -> str:
    """The judge prompt with ``first`` shown as assistant A and ``second`` as assistant B."""
    limit = options.limits.text_chars
    fields: dict[str, object] = {
        "instruction": task_instruction(first, prompts),
        "answer_a": clip(first.text.strip(), limit) or prompts.fragment("empty_answer"),
        "answer_b": clip(second.text.strip(), limit) or prompts.fragment("empty_answer"),
    }
    name = options.prompt
    if options.mode == "guided":
        if not first.reference.strip():
            raise ValueError(f"{first.article}/{first.item}: guided mode needs a reference text")
        name = options.prompt_guided
        fields["reference"] = clip(first.reference.strip(), options.limits.reference_chars)
    return prompts.get(name).format(**fields)


async def judge_pair(
    llm: LLM,
    ref: GeneratedText,
    cand: GeneratedText,
    shown: ShownOrder,
    runs: tuple[str, str],
    judge: str,
    options: PairwiseOptions,
    prompts: PromptLibrary,
) -> PairRecord:
    """One judge call; the shown-order scores are mapped back to (reference, candidate)."""
    base = PairRecord(
        stage=ref.stage,
        article=ref.article,
        item=ref.item,
        title=ref.title,
        category=ref.category or cand.category,
        reference_run=runs[0],
        candidate_run=runs[1],
        shown=shown,
        judge=judge,
        mode=options.mode,
        sha_reference=text_sha(ref),
        sha_candidate=text_sha(cand),
        status="error",
        words_reference=words(ref.text),
        words_candidate=words(cand.text),
    )
    first, second = (ref, cand) if shown == "reference_first" else (cand, ref)
    try:
        prompt = build_prompt(first, second, options, prompts)
        completion = await llm.complete(
            "judge",
            prompt,
            max_tokens=options.max_tokens,
            accept=lambda answer: parse_pair_verdict(answer.text).status == "ok",
        )
    except Exception as exc:  # noqa: BLE001 — recorded, counted and retried on the next run
        return base.model_copy(update={"detail": f"{type(exc).__name__}: {exc}"})
    verdict = parse_pair_verdict(completion.text)
    scores = (
        (verdict.score_a, verdict.score_b)
        if shown == "reference_first"
        else (verdict.score_b, verdict.score_a)
    )
    return base.model_copy(
        update={
            "status": verdict.status,
            "score_reference": scores[0],
            "score_candidate": scores[1],
            "rationale": verdict.rationale,
            "verdict": completion.text,
            "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest()[:16],
        }
    )


def read_records(path: Path) -> list[PairRecord]:
    """All records of the file, in file order."""
    return read_models(path, PairRecord, "pairwise verdict")


async def judge_runs(
    reference: Run,
    candidate: Run,
    llm: LLM,
    *,
    judge: str,
    out_dir: Path | None = None,
    options: PairwiseOptions | None = None,
    prompts: PromptLibrary | None = None,
    progress: bool = True,
) -> PairwiseSummary:
    """Judge every item of two runs (resuming), write the JSONL, the JSON summary and the PNG (holding the
    lock of the directory written: ``out_dir``, default the candidate run's)."""
    out_dir = out_dir or candidate.path
    with run_lock(out_dir):
        return await _judge_runs(
            reference,
            candidate,
            llm,
            judge=judge,
            out_dir=out_dir,
            options=options,
            prompts=prompts,
            progress=progress,
        )


async def _judge_runs(
    reference: Run,
    candidate: Run,
    llm: LLM,
    *,
    judge: str,
    out_dir: Path,
    options: PairwiseOptions | None,
    prompts: PromptLibrary | None,
    progress: bool,
) -> PairwiseSummary:
    options = options or PairwiseOptions()
    prompts = prompts or PromptLibrary(candidate.config.prompts_dir if candidate.config else None)
    stem = file_stem(reference.run_id, candidate.run_id)
    path = out_dir / f"{stem}.jsonl"
    pairs, missing = pair_items(reference, candidate)
    if not pairs:
        raise RunError(
            f"{reference.path} and {candidate.path}: no item in common (matched on stage/article/item)"
        )
    settled = {"ok"} if options.retry_unparseable else {"ok", "unparseable", "ambiguous", "out_of_range"}
    done = {
        (*r.key(), r.sha_reference, r.sha_candidate)
        for r in latest_verdicts(read_records(path))
        if r.status in settled
    }
    runs = (reference.run_id, candidate.run_id)
    pending = [
        (ref, cand, shown)
        for ref, cand in pairs
        for shown in shown_orders(ref, options)
        if (ref.stage, ref.article, ref.item, shown, judge, options.mode, text_sha(ref), text_sha(cand))
        not in done
    ]
    await judge_pending(
        path,
        [judge_pair(llm, r, c, s, runs, judge, options, prompts) for r, c, s in pending],
        "judge pairwise",
        progress=progress,
    )
    wanted = {(r.stage, r.article, r.item, shown) for r, _ in pairs for shown in shown_orders(r, options)}
    records = [
        r for r in latest_verdicts(read_records(path)) if (r.stage, r.article, r.item, r.shown) in wanted
    ]
    summary = summarize(records, runs, judge=judge, options=options, missing=missing)
    summary.prompt_sha256 = prompts.hashes()
    write_json(out_dir / f"{stem}.json", summary.model_dump(mode="json"))
    plot_summary(summary, out_dir / f"{stem}.png")
    plot_runs(out_dir, reference.run_id)
    return summary
