"""Paired comparisons of few items: the p-value is exact (every swap pattern enumerated: 0.5 or 1.0 for two
items, checked by hand), and every verdict — the paired table of report.md, report.html and the CSV the
console prints, the lines against the no-LLM baselines — states the smallest p its n allows when no
difference over so few items can be significant, instead of reading "no significant difference"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ruwikibench.aggregation.baselines import versus_baselines
from ruwikibench.aggregation.metrics import aggregate
from ruwikibench.reporting.compare import compare_runs
from ruwikibench.reporting.paired import Headline, compare_runs_paired, too_few_items
from ruwikibench.reporting.tables import baseline_lines
from ruwikibench.storage.results import StageMetrics
from ruwikibench.storage.rundir import RunDir

F1 = [Headline("Mean F1", "f1", 100.0, floor=True)]


def _records(values: list[float]) -> list[dict[str, Any]]:
    return [
        {"stage": "sections", "article": "art", "item": f"s{i}", "metrics": {"f1": v}, "excluded": None}
        for i, v in enumerate(values)
    ]


def _floors(n: int, floor: float = 0.5) -> list[dict[str, Any]]:
    return [
        {"stage": "sections", "article": "art", "item": f"s{i}", "metrics": {"f1": floor}} for i in range(n)
    ]


def test_the_wording() -> None:
    assert too_few_items(1) == "cannot be significant: 1 item allows p ≥ 1 at best"
    assert too_few_items(3) == "cannot be significant: 3 items allow p ≥ 0.25 at best"
    assert too_few_items(5) == "cannot be significant: 5 items allow p ≥ 0.0625 at best"
    assert too_few_items(6) == too_few_items(0) == ""  # 6 items can reach 2 / 64 = 0.031


def test_two_items_get_the_exact_p_of_their_four_swap_patterns() -> None:
    """A = (0.8, 0.6), B = (0.5, 0.4), every floor 0.5: rescaled = 2·(mean − 0.5), so Δ = 2·(0.45 − 0.7) =
    −0.5. The four swap patterns give Δ* = −0.5 (none), +0.1 (item 1: A = (0.5, 0.6), B = (0.8, 0.4)), −0.1
    (item 2), +0.5 (both): two of four reach |−0.5|, p = 0.5 — not a Monte-Carlo 0.49…"""
    raw, rescaled = compare_runs_paired(
        [("A", _records([0.8, 0.6]), _floors(2)), ("B", _records([0.5, 0.4]), _floors(2))],
        ["sections"],
        {"sections": F1},
    )["sections"]
    assert rescaled.difference.mean == pytest.approx(-0.5)
    assert rescaled.p == 0.5 and raw.p == 0.5  # raw: d = (−0.3, −0.2), swaps ±0.25, ±0.05
    assert rescaled.verdict() == "cannot be significant: 2 items allow p ≥ 0.5 at best"
    # d = (−0.3, +0.2): |mean| 0.05, every pattern reaches it (swapping one item gives ±0.25)
    (mixed, _) = compare_runs_paired(
        [("A", _records([0.8, 0.2]), _floors(2)), ("B", _records([0.5, 0.4]), _floors(2))],
        ["sections"],
        {"sections": F1},
    )["sections"]
    assert mixed.p == 1.0


def _run(path: Path, values: list[float]) -> Path:
    path.mkdir(parents=True)
    rundir = RunDir(path)
    results, floors = _records(values), _floors(len(values))
    rundir.append_many("results.jsonl", results)
    rundir.append_many("floors.jsonl", floors)
    rundir.write_json("metrics.json", aggregate(results, [], floors))
    return path


def test_a_three_item_comparison_says_it_cannot_be_significant(tmp_path: Path) -> None:
    """B loses on every one of 3 items (−100 points each): p = 0.25, the smallest 3 items allow."""
    base = _run(tmp_path / "base", [1.0, 1.0, 1.0])
    worse = _run(tmp_path / "worse", [0.0, 0.0, 0.0])
    md = compare_runs([base, worse], tmp_path / "cmp").read_text(encoding="utf-8")
    note = "cannot be significant: 3 items allow p ≥ 0.25 at best"
    assert f"| Mean F1 ↑ | worse | -100.00 [-100.00, -100.00] | 0.250 | 3 | 0 | {note} |" in md
    assert "No metric can be significant here: 3 items allow p ≥ 0.25 at best." in md
    assert "no significant difference" not in md.casefold()
    csv = (tmp_path / "cmp" / "sections_paired.csv").read_text(encoding="utf-8")  # what the console prints
    assert f",0.250,3,0,{note}" in csv
    page = (tmp_path / "cmp" / "report.html").read_text(encoding="utf-8")
    assert f"<td>{note}</td>" in page and "No metric can be significant here: 3 items allow p ≥" in page
    assert "No significant difference in any metric" not in page


def _baseline_rows(values: list[float]) -> list[dict[str, Any]]:
    return [{**r, "baseline": "lead", "floor": {"f1": 0.5}} for r in _records(values)]


def test_the_baseline_lines_state_the_smallest_p() -> None:
    records = _records([0.0, 0.0, 0.0])
    data = aggregate(records, [], _floors(3))["sections"]
    data["baselines"] = {"lead": aggregate(_baseline_rows([1.0, 1.0, 1.0]), [], _floors(3))["sections"]}
    versus = versus_baselines("sections", data, records, _floors(3), {"lead": _baseline_rows([1.0] * 3)})
    assert versus["f1"]["p_value"] == 0.25 and versus["f1"]["items"] == 3
    assert versus["f1"]["verdict"] == "cannot be significant"
    lines = baseline_lines("sections", StageMetrics.model_validate({**data, "vs_baseline": versus}))
    f1 = next(line for line in lines if line.startswith("- Mean F1:"))
    assert f1 == (
        "- Mean F1: the run − best baseline (lead) = -100.00 [-100.00, -100.00], p = 0.25, "
        "3 paired items: **cannot be significant** (3 items allow p ≥ 0.25 at best)"
    )
    # a metrics.json written before the verdict existed says 'no significant difference': the line still says
    old = {k: {**v, "verdict": "no significant difference"} for k, v in versus.items()}
    again = baseline_lines("sections", StageMetrics.model_validate({**data, "vs_baseline": old}))
    assert again == lines
