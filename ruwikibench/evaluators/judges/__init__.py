"""LLM judges: criteria-based (POLLUX-style), pairwise side-by-side (rulm-sbs2-style), and their
meta-evaluation.

Reports call :func:`summarize_judgements` (criteria verdicts of a run), :func:`summarize_pairwise`
(comparisons stored in a folder) and :func:`summarize_meta` (judge-vs-human agreement); each returns table
rows (``list[dict[str, str]]``, the same keys in every row) and an empty list when there is nothing to show.
"""

from __future__ import annotations

from pathlib import Path

from ruwikibench.evaluators.judges.criteria import CriteriaOptions, judge_run
from ruwikibench.evaluators.judges.criteria_records import CriterionRecord
from ruwikibench.evaluators.judges.criteria_set import CriteriaSet, Criterion, load_criteria
from ruwikibench.evaluators.judges.criteria_summary import summarize_judgements
from ruwikibench.evaluators.judges.meta import evaluate, run_meta, summarize_meta
from ruwikibench.evaluators.judges.pairwise import PairwiseOptions, judge_runs
from ruwikibench.evaluators.judges.pairwise_summary import PairwiseSummary, summarize_pairwise
from ruwikibench.evaluators.judges.parsing import parse_criterion_verdict, parse_pair_verdict


def judge_tables(run_dir: str | Path) -> dict[str, list[dict[str, str]]]:
    """Every judge table of a run directory, by title (tables with no rows left out)."""
    tables = {
        "LLM judge: criteria": summarize_judgements(run_dir),
        "LLM judge: pairwise": summarize_pairwise(run_dir),
        "LLM judge: agreement with humans": summarize_meta(run_dir),
    }
    return {title: rows for title, rows in tables.items() if rows}


__all__ = [
    "CriteriaOptions",
    "CriteriaSet",
    "Criterion",
    "CriterionRecord",
    "PairwiseOptions",
    "PairwiseSummary",
    "evaluate",
    "judge_run",
    "judge_runs",
    "judge_tables",
    "load_criteria",
    "parse_criterion_verdict",
    "parse_pair_verdict",
    "run_meta",
    "summarize_judgements",
    "summarize_meta",
    "summarize_pairwise",
]
