"""Pairwise verdicts -> per-item deltas, the B − A estimate with its CI, a length-controlled estimate, wins /
ties / losses, per-category figures and position consistency (rulm-sbs2's summary); stored summaries read back
as report rows."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from ruwikibench.evaluators.judges.common import Mode, Order
from ruwikibench.evaluators.judges.rundir import RunError
from ruwikibench.evaluators.stats import Estimate, bootstrap_ci, bootstrap_rows

if TYPE_CHECKING:
    from ruwikibench.evaluators.judges.pairwise_records import PairRecord, PairwiseOptions


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
    """OLS fit delta_i = intercept + slope · log((words_B + 1)/(words_A + 1)); intercept = delta at equal
    length."""

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
    """Per-item deltas (both orders: the mean of the two, only when both parsed) and first-shown
    advantages."""
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


def summarize(
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
    (mean [95% CI]), length-controlled (intercept [95% CI]), W/T/L (for B), position consistency, unparsed,
    errors.
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
