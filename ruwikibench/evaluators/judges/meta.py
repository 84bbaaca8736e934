"""Judge meta-evaluation against human scores, as POLLUX measures its judges.

Input: the judge's verdicts (a run directory's judge_criteria.jsonl, or any JSONL/CSV with item, criterion,
score) and human scores (JSONL/CSV: item, criterion, annotator, score; optional stage, article). Per
(item, criterion) instance the human label is the MODE of the annotators' scores; instances without a unique
mode are excluded from MAE, Spearman and the confusion matrix (counted). Metrics:

- MAE: mean |judge − human mode|, in scale points;
- Spearman's rho between judge scores and human modes, pooled over instances (and per criterion);
- verdict confidence: for an instance, the largest share of annotators agreeing on one score. Experts' value
  is over their own scores; the judge's is the expectation when one annotator, chosen uniformly at random, is
  replaced by the judge (POLLUX averages 100 random replacements; we average over every annotator exactly).
  Computed over instances with at least two annotators;
- confusion matrix: rows = human mode, columns = judge score.
"""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from ruwikibench.evaluators.judges.criteria_records import RESULTS_JSONL
from ruwikibench.evaluators.judges.rundir import RunError, read_jsonl, write_json

KEY_COLUMNS = ("stage", "article", "item")
MISSING = {"", "na", "n/a", "none", "null", "nan", "-"}


class HumanScore(BaseModel):
    key: tuple[str, ...]
    criterion: str
    annotator: str
    score: int


class JudgedScore(BaseModel):
    key: tuple[str, ...]
    criterion: str
    judge: str
    mode: str
    score: int | None
    status: str


def read_rows(path: str | Path) -> list[tuple[int, dict[str, object]]]:
    """(line number, row) from a CSV (header row) or a JSONL file."""
    path = Path(path)
    if not path.exists():
        raise RunError(f"{path}: file not found")
    if path.suffix.lower() in (".csv", ".tsv"):
        try:
            with path.open(encoding="utf-8", newline="") as handle:
                reader = csv.DictReader(handle, delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
                return [(number, dict(row)) for number, row in enumerate(reader, 2)]
        except UnicodeDecodeError as exc:
            raise RunError(
                f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save the table as UTF-8"
            ) from None
        except csv.Error as exc:
            raise RunError(f"{path}: not a readable CSV table: {exc}") from None
    return list(read_jsonl(path))


def _score(value: object, where: str) -> int | None:
    """An integer score; NA-like values give None; anything else is an error naming the place."""
    if value is None or (isinstance(value, str) and value.strip().lower() in MISSING):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise RunError(f"{where}: score {value!r} is not a number") from None
    if not number.is_integer():
        raise RunError(f"{where}: score {value!r} is not an integer")
    return int(number)


def key_columns(rows: Sequence[tuple[int, dict[str, object]]], path: Path) -> tuple[str, ...]:
    """The item key columns every human row fills (always including ``item``)."""
    columns = tuple(c for c in KEY_COLUMNS if rows and all(str(r.get(c) or "").strip() for _, r in rows))
    if "item" not in columns:
        raise RunError(f"{path}: every row needs 'item' (and may add 'stage', 'article')")
    return columns


def load_human(path: str | Path) -> tuple[list[HumanScore], tuple[str, ...], int]:
    """Human scores, the key columns used for matching, and the number of NA scores skipped."""
    path = Path(path)
    rows = read_rows(path)
    columns = key_columns(rows, path)
    out, skipped = [], 0
    for number, row in rows:
        where = f"{path}:{number}"
        for field in ("criterion", "annotator"):
            if not str(row.get(field) or "").strip():
                raise RunError(f"{where}: field '{field}' missing")
        score = _score(row.get("score"), where)
        if score is None:
            skipped += 1
            continue
        out.append(
            HumanScore(
                key=tuple(str(row[c]) for c in columns),
                criterion=str(row["criterion"]),
                annotator=str(row["annotator"]),
                score=score,
            )
        )
    return out, columns, skipped


def load_judged(path: str | Path, columns: tuple[str, ...]) -> list[JudgedScore]:
    """Judge verdicts from a run directory (its judge_criteria.jsonl) or a JSONL/CSV file."""
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS_JSONL
    rows = read_rows(path)
    latest: dict[tuple[object, ...], JudgedScore] = {}
    for number, row in rows:
        where = f"{path}:{number}"
        missing = [c for c in (*columns, "criterion") if not str(row.get(c) or "").strip()]
        if missing:
            raise RunError(
                f"{where}: field(s) {missing} missing (the human file is keyed on {list(columns)})"
            )
        status = str(row.get("status") or "ok")
        score = _score(row.get("score"), where) if status == "ok" else None
        record = JudgedScore(
            key=tuple(str(row[c]) for c in columns),
            criterion=str(row["criterion"]),
            judge=str(row.get("judge") or "judge"),
            mode=str(row.get("mode") or "-"),
            score=score,
            status=status if score is not None or status != "ok" else "unparseable",
        )
        latest[(record.judge, record.mode, record.key, record.criterion)] = record
    return list(latest.values())


def unique_mode(scores: Sequence[int]) -> int | None:
    """The most frequent score if exactly one score has the top count, else None (no consensus)."""
    counts = Counter(scores).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def verdict_confidence(scores: Sequence[int]) -> float:
    """max_y (1/N) Σ 1[y_i = y]: the share of annotators behind the most frequent score."""
    return Counter(scores).most_common(1)[0][1] / len(scores)


def judge_verdict_confidence(scores: Sequence[int], judge: int) -> float:
    """Expected verdict confidence when a uniformly chosen annotator's score is replaced by the judge's."""
    total = 0.0
    for i in range(len(scores)):
        total += verdict_confidence([*scores[:i], judge, *scores[i + 1 :]])
    return total / len(scores)


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (scipy; average-tie ranks); None with fewer than 2 points or no spread."""
    from scipy.stats import spearmanr

    if len(x) != len(y):
        raise ValueError("spearman: sequences of different length")
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    return float(spearmanr(x, y).statistic)


class Confusion(BaseModel):
    labels: list[int]
    matrix: list[list[int]] = Field(description="rows: human mode, columns: judge score")


def confusion(human: Sequence[int], judge: Sequence[int]) -> Confusion:
    labels = sorted(set(human) | set(judge))
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for h, j in zip(human, judge):
        matrix[index[h]][index[j]] += 1
    return Confusion(labels=labels, matrix=matrix)


class Agreement(BaseModel):
    """Judge-vs-human agreement over a set of (item, criterion) instances."""

    instances: int = Field(description="instances with a judge score and a unique human mode")
    mae: float | None
    exact: float | None = Field(description="share with judge score = human mode")
    spearman: float | None
    vc_instances: int = Field(description="instances with ≥ 2 annotators and a judge score")
    vc_experts: float | None
    vc_judge: float | None
    confusion: Confusion


class CriterionAgreement(Agreement):
    criterion: str


class MetaResult(BaseModel):
    judge: str
    mode: str
    human_instances: int
    no_mode: int = Field(description="human instances without a unique mode (excluded from MAE/Spearman)")
    not_judged: int = Field(description="human instances with no verdict of this judge")
    judge_unparsed: int = Field(description="human instances whose verdict was not parsed (status ≠ ok)")
    overall: Agreement
    per_criterion: list[CriterionAgreement]


def agreement(pairs: Sequence[tuple[list[int], int]]) -> Agreement:
    """Agreement over (human scores, judge score) instances."""
    with_mode = [(unique_mode(h), j) for h, j in pairs]
    scored = [(m, j) for m, j in with_mode if m is not None]
    human = [m for m, _ in scored]
    judge = [j for _, j in scored]
    overlap = [(h, j) for h, j in pairs if len(h) >= 2]
    return Agreement(
        instances=len(scored),
        mae=float(np.mean([abs(m - j) for m, j in scored])) if scored else None,
        exact=float(np.mean([m == j for m, j in scored])) if scored else None,
        spearman=spearman(judge, human),
        vc_instances=len(overlap),
        vc_experts=float(np.mean([verdict_confidence(h) for h, _ in overlap])) if overlap else None,
        vc_judge=float(np.mean([judge_verdict_confidence(h, j) for h, j in overlap])) if overlap else None,
        confusion=confusion(human, judge),
    )


def evaluate(judged: Sequence[JudgedScore], human: Sequence[HumanScore]) -> list[MetaResult]:
    """One result per (judge, mode) found among the verdicts."""
    instances: dict[tuple[tuple[str, ...], str], list[int]] = defaultdict(list)
    for h in human:
        instances[(h.key, h.criterion)].append(h.score)
    by_judge: dict[tuple[str, str], dict[tuple[tuple[str, ...], str], JudgedScore]] = defaultdict(dict)
    for j in judged:
        by_judge[(j.judge, j.mode)][(j.key, j.criterion)] = j
    results = []
    for (judge, mode), verdicts in sorted(by_judge.items()):
        pairs: dict[str, list[tuple[list[int], int]]] = defaultdict(list)
        not_judged = unparsed = 0
        for (key, criterion), scores in instances.items():
            verdict = verdicts.get((key, criterion))
            if verdict is None:
                not_judged += 1
            elif verdict.score is None:
                unparsed += 1
            else:
                pairs[criterion].append((scores, verdict.score))
        results.append(
            MetaResult(
                judge=judge,
                mode=mode,
                human_instances=len(instances),
                no_mode=sum(unique_mode(s) is None for s in instances.values()),
                not_judged=not_judged,
                judge_unparsed=unparsed,
                overall=agreement([p for rows in pairs.values() for p in rows]),
                per_criterion=[
                    CriterionAgreement(criterion=c, **agreement(rows).model_dump())
                    for c, rows in sorted(pairs.items())
                ],
            )
        )
    return results


def run_meta(
    judged: str | Path, human: str | Path, out: str | Path | None = None
) -> tuple[list[MetaResult], Path]:
    """Load both files, evaluate, write judge_meta.json (next to the verdicts unless ``out`` is given)."""
    scores, columns, skipped = load_human(human)
    if not scores:
        raise RunError(f"{human}: no human scores")
    verdicts = load_judged(judged, columns)
    if not verdicts:
        raise RunError(f"{judged}: no judge verdicts")
    results = evaluate(verdicts, scores)
    judged_path = Path(judged)
    target = (
        Path(out)
        if out
        else (judged_path if judged_path.is_dir() else judged_path.parent) / "judge_meta.json"
    )
    write_json(
        target,
        {
            "judged": str(judged),
            "human": str(human),
            "key_columns": list(columns),
            "human_na_skipped": skipped,
            "results": [r.model_dump() for r in results],
        },
    )
    return results, target


def summarize_meta(run_dir: str | Path) -> list[dict[str, str]]:
    """Table rows from a folder's judge_meta.json: judge, mode, criterion, n, MAE, exact, Spearman, VC."""
    import json

    path = Path(run_dir) / "judge_meta.json"
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = []
    for raw in data.get("results", []):
        result = MetaResult.model_validate(raw)
        for name, a in [("all", result.overall), *[(c.criterion, c) for c in result.per_criterion]]:
            rows.append(meta_row(result, name, a))
    return rows


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def meta_row(result: MetaResult, criterion: str, a: Agreement) -> dict[str, str]:
    return {
        "judge": result.judge,
        "mode": result.mode,
        "criterion": criterion,
        "n": str(a.instances),
        "MAE": _fmt(a.mae),
        "exact": _fmt(a.exact),
        "Spearman": _fmt(a.spearman),
        "VC experts": _fmt(a.vc_experts),
        "VC judge": _fmt(a.vc_judge),
    }
