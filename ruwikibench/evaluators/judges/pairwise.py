"""Pairwise side-by-side LLM judge (MT-Bench / rulm-sbs2 style) over the same items of two runs.

The reference run plays A and sits at 0; the other run (the candidate) plays B. For each item the judge sees
both texts (order randomised per item with a seed, or both orders) and ends with ``[[score_first score_second]]``
on a 1–10 scale; scores are mapped back to runs and the per-item delta is B − A. Reported: mean delta with a
bootstrap 95% CI, win/tie/loss, a length-controlled delta, per-category deltas, position consistency (both
orders) and a PNG of horizontal bars with CI whiskers.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from ruwikibench.contract import GeneratedText
from ruwikibench.evaluators.judges.common import Limits, Mode, task_instruction, words
from ruwikibench.evaluators.judges.parsing import parse_pair_verdict
from ruwikibench.evaluators.judges.rundir import (
    JsonlWriter,
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
from ruwikibench.evaluators.stats import Estimate, bootstrap_ci, bootstrap_rows
from ruwikibench.models.llm import LLM
from ruwikibench.progress import progress_bar
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runlock import run_lock

Order = Literal["random", "both"]
ShownOrder = Literal["reference_first", "candidate_first"]  # which text the judge saw as A
PairStatus = Literal["ok", "unparseable", "ambiguous", "out_of_range", "error"]


class PairwiseOptions(BaseModel):
    mode: Mode = "free"
    order: Order = Field(default="random", description="random order per item (seeded), or both orders")
    seed: int = 0
    limits: Limits = Field(default_factory=Limits)
    max_tokens: int | None = None
    retry_unparseable: bool = False
    resamples: int = 2000
    prompt: str = "ru/judge_pairwise.txt"
    prompt_guided: str = "ru/judge_pairwise_guided.txt"


class PairRecord(BaseModel):
    """One line of judge_pairwise_<A>_vs_<B>.jsonl: one judge call on one item in one presentation order."""

    stage: str
    article: str
    item: str
    title: str = ""
    category: str | None = None
    reference_run: str
    candidate_run: str
    shown: ShownOrder
    judge: str
    mode: Mode
    sha_reference: str
    sha_candidate: str
    status: PairStatus
    score_reference: float | None = None
    score_candidate: float | None = None
    words_reference: int
    words_candidate: int
    rationale: str = ""
    verdict: str = ""
    prompt_sha256: str = ""
    detail: str | None = None

    def key(self) -> tuple[str, ...]:
        return (self.stage, self.article, self.item, self.shown, self.judge, self.mode)

    @property
    def delta(self) -> float | None:
        if self.score_reference is None or self.score_candidate is None:
            return None
        return self.score_candidate - self.score_reference


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
            "judge", prompt, max_tokens=options.max_tokens,
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
    """Judge every item of two runs (resuming), write the JSONL, the JSON summary and the PNG (holding the lock
    of the directory written: ``out_dir``, default the candidate run's)."""
    out_dir = out_dir or candidate.path
    with run_lock(out_dir):
        return await _judge_runs(reference, candidate, llm, judge=judge, out_dir=out_dir, options=options,
                                 prompts=prompts, progress=progress)


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
    with (
        JsonlWriter(path) as writer,
        progress_bar(len(pending), "judge pairwise", disable=not progress) as advance,
    ):
        tasks = [
            asyncio.ensure_future(judge_pair(llm, r, c, s, runs, judge, options, prompts))
            for r, c, s in pending
        ]
        for future in asyncio.as_completed(tasks):
            writer.write(await future)
            advance()
    wanted = {(r.stage, r.article, r.item, shown) for r, _ in pairs for shown in shown_orders(r, options)}
    records = [r for r in latest_verdicts(read_records(path)) if (r.stage, r.article, r.item, r.shown) in wanted]
    summary = summarise(records, runs, judge=judge, options=options, missing=missing)
    summary.prompt_sha256 = prompts.hashes()
    write_json(out_dir / f"{stem}.json", summary.model_dump(mode="json"))
    plot_summary(summary, out_dir / f"{stem}.png")
    plot_runs(out_dir, reference.run_id)
    return summary


class ItemResult(BaseModel):
    stage: str
    article: str
    item: str
    category: str | None
    delta: float
    words_reference: int
    words_candidate: int
    consistent: bool | None = Field(default=None, description="both orders: the same winner in both")


class CategoryResult(BaseModel):
    category: str
    delta: Estimate
    wins: int
    ties: int
    losses: int


class LengthControlled(BaseModel):
    """OLS fit delta_i = intercept + slope · log((words_B + 1)/(words_A + 1)); intercept = delta at equal length."""

    intercept: Estimate
    slope: float | None
    mean_log_length_ratio: float


class PairwiseSummary(BaseModel):
    reference_run: str
    candidate_run: str
    judge: str
    mode: Mode
    order: Order
    seed: int
    items: int = Field(description="items in both runs")
    judged: int = Field(description="items with a delta")
    missing: dict[str, int]
    statuses: dict[str, int]
    delta: Estimate
    wins: int
    ties: int
    losses: int
    mean_score_reference: float | None
    mean_score_candidate: float | None
    length_controlled: LengthControlled
    position_consistency: float | None = Field(
        default=None, description="both orders: share of items, same winner"
    )
    first_shown_advantage: float | None = Field(
        default=None, description="mean (score of the text shown first − score of the text shown second)"
    )
    per_category: list[CategoryResult]
    per_item: list[ItemResult]
    prompt_sha256: dict[str, str] = Field(default_factory=dict)


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def item_results(records: Sequence[PairRecord], order: Order) -> tuple[list[ItemResult], list[float]]:
    """Per-item deltas (both orders: the mean of the two, only when both parsed) and first-shown advantages."""
    by_item: dict[tuple[str, str, str], list[PairRecord]] = defaultdict(list)
    advantages = []
    for r in records:
        if r.status == "ok" and r.delta is not None:
            by_item[(r.stage, r.article, r.item)].append(r)
            advantages.append(r.delta if r.shown == "candidate_first" else -r.delta)
    out = []
    for (stage, article, item), rows in by_item.items():
        if order == "both" and len({r.shown for r in rows}) < 2:
            continue
        deltas = [r.delta for r in rows if r.delta is not None]
        consistent = len({_sign(d) for d in deltas}) == 1 if order == "both" else None
        out.append(
            ItemResult(
                stage=stage,
                article=article,
                item=item,
                category=rows[0].category,
                delta=sum(deltas) / len(deltas),
                words_reference=rows[0].words_reference,
                words_candidate=rows[0].words_candidate,
                consistent=consistent,
            )
        )
    return out, advantages


def length_controlled(
    items: Sequence[ItemResult], *, resamples: int = 2000, seed: int = 0
) -> LengthControlled:
    """Regress delta on the log length ratio; the intercept is the delta expected at equal lengths.

    The CI comes from a pairs bootstrap over items; when a resample has no spread in length ratio the
    intercept is that resample's mean delta.
    """
    if not items:
        nan = float("nan")
        return LengthControlled(
            intercept=Estimate(mean=nan, low=nan, high=nan, n=0), slope=None, mean_log_length_ratio=nan
        )
    y = np.array([i.delta for i in items], dtype=float)
    x = np.array([math.log((i.words_candidate + 1) / (i.words_reference + 1)) for i in items])
    intercept, slope = _ols(x, y)
    if len(items) > 1:
        rng = np.random.default_rng(seed)
        idx = bootstrap_rows(len(items), resamples, rng)
        boot = np.array([_ols(x[row], y[row])[0] for row in idx])
        low, high = (float(v) for v in np.quantile(boot, [0.025, 0.975]))
    else:
        low = high = intercept
    return LengthControlled(
        intercept=Estimate(mean=intercept, low=low, high=high, n=len(items)),
        slope=slope,
        mean_log_length_ratio=float(x.mean()),
    )


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[float, float | None]:
    """(intercept, slope) of y = a + b·x by least squares; (mean y, None) when x has no spread."""
    spread = x - x.mean()
    denominator = float((spread**2).sum())
    if denominator < 1e-12:
        return float(y.mean()), None
    slope = float((spread * (y - y.mean())).sum() / denominator)
    return float(y.mean() - slope * x.mean()), slope


def summarise(
    records: Sequence[PairRecord],
    runs: tuple[str, str],
    *,
    judge: str,
    options: PairwiseOptions,
    missing: dict[str, int] | None = None,
) -> PairwiseSummary:
    """Aggregate one comparison's records (one judge, one mode) into deltas, CIs and counts."""
    records = [r for r in records if r.judge == judge and r.mode == options.mode]
    items, advantages = item_results(records, options.order)
    deltas = [i.delta for i in items]
    consistency = [i.consistent for i in items if i.consistent is not None]
    ok = [r for r in records if r.status == "ok"]
    statuses: dict[str, int] = defaultdict(int)
    for r in records:
        statuses[r.status] += 1
    return PairwiseSummary(
        reference_run=runs[0],
        candidate_run=runs[1],
        judge=judge,
        mode=options.mode,
        order=options.order,
        seed=options.seed,
        items=len({(r.stage, r.article, r.item) for r in records}),
        judged=len(items),
        missing=missing or {},
        statuses=dict(statuses),
        delta=bootstrap_ci(deltas, resamples=options.resamples, seed=options.seed),
        wins=sum(d > 0 for d in deltas),
        ties=sum(d == 0 for d in deltas),
        losses=sum(d < 0 for d in deltas),
        mean_score_reference=_mean(r.score_reference for r in ok),
        mean_score_candidate=_mean(r.score_candidate for r in ok),
        length_controlled=length_controlled(items, resamples=options.resamples, seed=options.seed),
        position_consistency=sum(consistency) / len(consistency) if consistency else None,
        first_shown_advantage=_mean(advantages),
        per_category=_per_category(items, options),
        per_item=items,
    )


def _mean(values: Iterable[float | None]) -> float | None:
    data = [v for v in values if v is not None]
    return sum(data) / len(data) if data else None


def _per_category(items: Sequence[ItemResult], options: PairwiseOptions) -> list[CategoryResult]:
    by_category: dict[str, list[float]] = defaultdict(list)
    for i in items:
        if i.category:
            by_category[i.category].append(i.delta)
    return [
        CategoryResult(
            category=category,
            delta=bootstrap_ci(values, resamples=options.resamples, seed=options.seed),
            wins=sum(v > 0 for v in values),
            ties=sum(v == 0 for v in values),
            losses=sum(v < 0 for v in values),
        )
        for category, values in sorted(by_category.items())
    ]


def _bars(
    ax, labels: list[str], estimates: list[Estimate], reference: str, hatched: int | None = None
) -> None:  # type: ignore[no-untyped-def]
    """Horizontal bars (mean delta) with CI whiskers and the reference at 0 (bar ``hatched`` drawn hatched)."""
    positions = list(range(len(labels)))[::-1]
    means = [e.mean if e.n else 0.0 for e in estimates]
    low = [max(e.mean - e.low, 0.0) if e.n else 0.0 for e in estimates]
    high = [max(e.high - e.mean, 0.0) if e.n else 0.0 for e in estimates]
    colors = ["#4c72b0" if m >= 0 else "#dd8452" for m in means]
    bars = ax.barh(positions, means, xerr=np.array([low, high]), color=colors, capsize=4, ecolor="#333333")
    if hatched is not None:
        bars[hatched].set_hatch("//")
        bars[hatched].set_alpha(0.6)
    ax.axvline(0, color="black", linewidth=1)
    ax.set_yticks(
        positions, [label if e.n == 0 else f"{label} (n={e.n})" for label, e in zip(labels, estimates)]
    )
    ax.set_xlabel(f"баллы B − баллы A (эталон A = {reference}, в нуле)")
    ax.grid(axis="x", alpha=0.3)


def _short(model: str) -> str:
    """A model name fit for a chart label (a served file path becomes its file name)."""
    return Path(model).name[:40] or model[:40]


def plot_summary(summary: PairwiseSummary, path: Path) -> Path:
    """PNG: the overall delta, the length-controlled delta and each category's delta, with 95% CIs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = ["все", "все, поправка на длину"] + [c.category for c in summary.per_category]
    estimates = [summary.delta, summary.length_controlled.intercept] + [c.delta for c in summary.per_category]
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.45 * len(labels)))
    _bars(ax, labels, estimates, summary.reference_run, hatched=1)
    ax.set_title(
        f"{summary.candidate_run} против {summary.reference_run} (судья {_short(summary.judge)})", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_runs(out_dir: Path, reference_run: str) -> Path | None:
    """PNG with one bar per run compared against the same reference in this folder (rulm-sbs2's chart)."""
    summaries = [s for s in load_summaries(out_dir) if s.reference_run == reference_run]
    if not summaries:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reference = Estimate(mean=0.0, low=0.0, high=0.0, n=0)
    labels = [f"{reference_run} (эталон)"] + [
        f"{s.candidate_run} [{_short(s.judge)}, {s.mode}]" for s in summaries
    ]
    estimates = [reference] + [s.delta for s in summaries]
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.45 * len(labels)))
    _bars(ax, labels, estimates, reference_run)
    fig.tight_layout()
    path = out_dir / f"judge_pairwise_{safe_id(reference_run)}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def load_summaries(run_dir: str | Path) -> list[PairwiseSummary]:
    """Every pairwise summary (judge_pairwise_*_vs_*.json) stored in a folder."""
    out = []
    for path in sorted(Path(run_dir).glob("judge_pairwise_*_vs_*.json")):
        try:
            out.append(PairwiseSummary.model_validate_json(path.read_text(encoding="utf-8")))
        except ValidationError as exc:
            raise RunError(f"{path}: not a pairwise summary: {exc.errors()[0]['msg']}") from exc
    return out


def summarize_pairwise(run_dir: str | Path) -> list[dict[str, str]]:
    """Table rows for reports, one per stored comparison in the folder.

    Columns: reference (A, at 0), candidate (B), judge, mode, order, n (items with a delta), delta B−A
    (mean [95% CI]), length-controlled (intercept [95% CI]), W/T/L (for B), position consistency, unparsed, errors.
    """
    rows = []
    for s in load_summaries(run_dir):
        unparsed = sum(s.statuses.get(k, 0) for k in ("unparseable", "ambiguous", "out_of_range"))
        rows.append(
            {
                "reference": s.reference_run,
                "candidate": s.candidate_run,
                "judge": s.judge,
                "mode": s.mode,
                "order": s.order,
                "n": str(s.judged),
                "delta B−A": s.delta.fmt(),
                "length-controlled": s.length_controlled.intercept.fmt(),
                "W/T/L": f"{s.wins}/{s.ties}/{s.losses}",
                "position consistency": (
                    f"{s.position_consistency:.2f}" if s.position_consistency is not None else "—"
                ),
                "unparsed": str(unparsed),
                "errors": str(s.statuses.get("error", 0)),
            }
        )
    return rows
