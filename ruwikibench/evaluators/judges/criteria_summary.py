"""Criteria verdicts -> per judge and mode: per-criterion score distributions and normalized means with CIs,
the per-text overall score (general + encyclopedic criteria), critical failures, per-article and per-stage
means; a run's verdicts as report rows."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from ruwikibench.evaluators.judges.common import Group, Mode
from ruwikibench.evaluators.judges.criteria_records import RESULTS_JSONL, CriterionRecord, read_records
from ruwikibench.evaluators.judges.rundir import latest_verdicts
from ruwikibench.evaluators.stats import Estimate, bootstrap_ci


class CriterionSummary(BaseModel):
    criterion: str
    group: Group
    max: int
    statuses: dict[str, int]
    distribution: dict[int, int]
    mean_score: float | None
    normalized: Estimate
    failures: int = Field(default=0, description="critical criteria: texts that failed")
    failed_items: list[str] = Field(default_factory=list)


class JudgeSummary(BaseModel):
    """All verdicts of one judge model in one mode over a run."""

    judge: str
    mode: Mode
    texts: int
    calls: int
    statuses: dict[str, int]
    overall: Estimate = Field(
        description="per-text mean normalized score over general + encyclopedic criteria"
    )
    overall_without_critical: Estimate = Field(description="the same over texts with no critical failure")
    texts_with_critical_failure: int
    per_criterion: list[CriterionSummary]
    per_article: dict[str, Estimate]
    per_stage: dict[str, Estimate]


def text_id(record: CriterionRecord) -> str:
    return f"{record.stage}/{record.article}/{record.item}"


def aggregate(records: Sequence[CriterionRecord], seed: int = 0) -> list[JudgeSummary]:
    """One summary per (judge, mode) over the latest record of each (text, criterion)."""
    groups: dict[tuple[str, str], list[CriterionRecord]] = defaultdict(list)
    for record in records:
        groups[(record.judge, record.mode)].append(record)
    return [_summarize(judge, mode, rows, seed) for (judge, mode), rows in sorted(groups.items())]


def _summarize(judge: str, mode: str, rows: list[CriterionRecord], seed: int) -> JudgeSummary:
    per_text: dict[str, list[float]] = defaultdict(list)
    failed_texts: set[str] = set()
    text_meta: dict[str, CriterionRecord] = {}
    for r in rows:
        text_meta.setdefault(text_id(r), r)
        if r.status == "ok" and r.normalized is not None:
            if r.group == "critical":
                if r.normalized == 0.0:
                    failed_texts.add(text_id(r))
            else:
                per_text[text_id(r)].append(r.normalized)
    text_scores = {t: sum(v) / len(v) for t, v in per_text.items()}
    by_article: dict[str, list[float]] = defaultdict(list)
    by_stage: dict[str, list[float]] = defaultdict(list)
    for t, score in text_scores.items():
        by_article[text_meta[t].article].append(score)
        by_stage[text_meta[t].stage].append(score)
    return JudgeSummary(
        judge=judge,
        mode=mode,  # type: ignore[arg-type]
        texts=len(text_meta),
        calls=sum(r.status not in ("not_applicable",) for r in rows),
        statuses=dict(Counter(r.status for r in rows)),
        overall=bootstrap_ci(list(text_scores.values()), seed=seed),
        overall_without_critical=bootstrap_ci(
            [s for t, s in text_scores.items() if t not in failed_texts], seed=seed
        ),
        texts_with_critical_failure=len(failed_texts),
        per_criterion=_per_criterion(rows, seed),
        per_article={a: bootstrap_ci(v, seed=seed) for a, v in sorted(by_article.items())},
        per_stage={s: bootstrap_ci(v, seed=seed) for s, v in sorted(by_stage.items())},
    )


def _per_criterion(rows: list[CriterionRecord], seed: int) -> list[CriterionSummary]:
    by_criterion: dict[str, list[CriterionRecord]] = defaultdict(list)
    for r in rows:
        by_criterion[r.criterion].append(r)
    out = []
    for name, items in by_criterion.items():
        ok = [r for r in items if r.status == "ok" and r.score is not None]
        failed = sorted(text_id(r) for r in ok if r.group == "critical" and r.normalized == 0.0)
        out.append(
            CriterionSummary(
                criterion=name,
                group=items[0].group,
                max=items[0].max,
                statuses=dict(Counter(r.status for r in items)),
                distribution=dict(sorted(Counter(r.score for r in ok if r.score is not None).items())),
                mean_score=sum(r.score for r in ok if r.score is not None) / len(ok) if ok else None,
                normalized=bootstrap_ci([r.normalized for r in ok if r.normalized is not None], seed=seed),
                failures=len(failed),
                failed_items=failed,
            )
        )
    group_order = {"critical": 0, "general": 1, "encyclopedic": 2}
    return sorted(out, key=lambda s: group_order[s.group])


def unparsed_count(statuses: dict[str, int]) -> int:
    return sum(statuses.get(s, 0) for s in ("unparseable", "ambiguous", "out_of_range"))


def summarize_judgements(run_dir: str | Path) -> list[dict[str, str]]:
    """Table rows for reports: per judge and mode, one row per criterion and an overall row.

    Columns: judge, mode, group, criterion, n (verdicts parsed), score (mean / max, or critical failures),
    normalized (mean [95% CI], higher is better), unparsed (unparseable + ambiguous + out of range), errors.
    Empty when the run has not been judged.
    """
    path = Path(run_dir) / RESULTS_JSONL
    if not path.exists():
        return []
    rows: list[dict[str, str]] = []
    for summary in aggregate(latest_verdicts(read_records(path))):
        base = {"judge": summary.judge, "mode": summary.mode}
        for c in summary.per_criterion:
            score = (
                f"failures {c.failures}/{c.normalized.n}"
                if c.group == "critical"
                else (f"{c.mean_score:.2f} / {c.max}" if c.mean_score is not None else "—")
            )
            rows.append(
                {
                    **base,
                    "group": c.group,
                    "criterion": c.criterion,
                    "n": str(c.normalized.n),
                    "score": score,
                    "normalized": c.normalized.fmt(),
                    "unparsed": str(unparsed_count(c.statuses)),
                    "errors": str(c.statuses.get("error", 0)),
                }
            )
        rows.append(
            {
                **base,
                "group": "all",
                "criterion": "overall (per-text mean)",
                "n": str(summary.overall.n),
                "score": f"critical failures: {summary.texts_with_critical_failure} texts",
                "normalized": summary.overall.fmt(),
                "unparsed": str(unparsed_count(summary.statuses)),
                "errors": str(summary.statuses.get("error", 0)),
            }
        )
    return rows
