"""Paired comparison of runs, by hand: the difference over shared items only (missing and excluded items left
out and counted), a planted improvement found, noise not, the rescaled difference, and the report's
section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ruwikibench.aggregation.metrics import aggregate
from ruwikibench.evaluators.stats import paired_randomization, randomization_p_value
from ruwikibench.reporting.compare import compare_runs, paired_comparison
from ruwikibench.reporting.paired import (
    Headline,
    PairedRow,
    align,
    compare_runs_paired,
    compare_stage,
    load_items,
    stage_items,
)
from ruwikibench.reporting.tables import stage_headlines
from ruwikibench.storage.rundir import RunDir

F1 = [Headline("Mean F1", "f1", 100.0, floor=True)]


def _record(article: str, item: str, f1: float | None, excluded: str | None = None) -> dict[str, Any]:
    metrics = {} if f1 is None else {"f1": f1}
    return {"stage": "sections", "article": article, "item": item, "metrics": metrics, "excluded": excluded}


def _floor(article: str, item: str, f1: float) -> dict[str, Any]:
    return {"stage": "sections", "article": article, "item": item, "metrics": {"f1": f1}}


def _rows(
    a: list[dict[str, Any]],
    b: list[dict[str, Any]],
    fa: list | None = None,
    fb: list | None = None,
    names: tuple[str, str] = ("A", "B"),
) -> list[PairedRow]:
    runs = [(names[0], a, fa or []), (names[1], b, fb or [])]
    return compare_runs_paired(runs, ["sections"], {"sections": F1})["sections"]


def test_difference_is_over_shared_items_only() -> None:
    a = [_record("x", "s1", 0.5), _record("x", "s2", 0.6), _record("x", "s3", 0.7), _record("y", "s1", 0.2)]
    b = [
        _record("x", "s1", 0.8),
        _record("x", "s2", 0.5),
        _record("x", "s3", None, "no snippet"),
        _record("y", "s2", 0.9),
    ]
    (row,) = _rows(a, b)  # no floor rows: no rescaled row
    # shared: x/s1 (+0.3) and x/s2 (−0.1); x/s3 excluded in B, y/s1 only in A, y/s2 only in B
    assert row.alignment.keys == [("x", "s1"), ("x", "s2")]
    assert row.difference.mean == pytest.approx(0.1) and row.difference.n == 2
    assert (row.alignment.only_base, row.alignment.only_other, row.alignment.excluded) == (1, 1, 1)
    assert row.alignment.left_out() == "1 only in first run, 1 only in this run, 1 excluded"
    assert row.p == pytest.approx(1.0)  # 2 items: all 4 swaps enumerated, |mean| ≥ 0.1 in every one
    assert row.verdict() == "cannot be significant: 2 items allow p ≥ 0.5 at best"


def test_one_shared_item_is_never_significant() -> None:
    raw, rescaled = _rows(
        [_record("x", "s1", 0.2)],
        [_record("x", "s1", 0.9)],
        [_floor("x", "s1", 0.1)],
        [_floor("x", "s1", 0.1)],
    )
    assert raw.difference.mean == pytest.approx(0.7) and raw.p == 1.0 and rescaled.p == 1.0
    assert raw.verdict() == rescaled.verdict() == "cannot be significant: 1 item allows p ≥ 1 at best"


def test_a_rescaled_difference_with_a_floor_of_100_is_not_called_a_verdict() -> None:
    """A floor of 100 leaves nothing to rescale (NaN): the row says so instead of 'no significant
    difference'."""
    items = [("x", "s1", 0.2, 0.9), ("y", "s1", 0.3, 0.8)]
    raw, rescaled = _rows(
        [_record(a, i, fa) for a, i, fa, _ in items],
        [_record(a, i, fb) for a, i, _, fb in items],
        [_floor(a, i, 1.0) for a, i, _, _ in items],
        [_floor(a, i, 0.5) for a, i, _, _ in items],
    )
    assert raw.verdict() == "cannot be significant: 2 items allow p ≥ 0.5 at best"
    assert rescaled.verdict() == "not computed: no floor below 100"


def test_a_later_record_replaces_an_earlier_one() -> None:
    items = stage_items(
        [
            _record("x", "s1", 0.5),
            _record("x", "s1", None, "gone"),
            _record("x", "s2", 0.4),
            _record("x", "s2", 0.9),
        ],
        [],
        "sections",
    )
    assert items.excluded == {("x", "s1")} and items.scores == {("x", "s2"): {"f1": 0.9}}


def _planted(shift: np.ndarray, n: int = 30) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    base = np.random.default_rng(7).uniform(0.3, 0.7, n)
    a = [_record("art", f"s{i:02d}", float(v)) for i, v in enumerate(base)]
    b = [_record("art", f"s{i:02d}", float(v + d)) for i, (v, d) in enumerate(zip(base, shift, strict=True))]
    return a, b


def test_a_planted_improvement_is_found_in_both_directions() -> None:
    a, b = _planted(np.full(30, 0.05))
    (row,) = _rows(a, b)
    assert row.difference.mean == pytest.approx(0.05)
    assert row.difference.low > 0 and row.p < 0.05
    assert row.winner == "B" and row.verdict() == "B beats A"
    assert row.sentence().startswith("B beats A on sections Mean F1: +5.00 [")
    assert row.sentence().endswith(", 30 shared items")
    (reverse,) = _rows(b, a, names=("B", "A"))  # the better run given first
    assert reverse.difference.high < 0 and reverse.verdict() == "B beats A"


def test_zero_mean_noise_is_no_significant_difference() -> None:
    noise = np.random.default_rng(3).normal(0.0, 0.05, 30)
    a, b = _planted(noise - noise.mean())
    (row,) = _rows(a, b)
    assert row.difference.mean == pytest.approx(0.0, abs=1e-12)
    assert row.difference.low < 0 < row.difference.high and row.p > 0.5
    assert row.winner is None and row.verdict() == "no significant difference"


def test_rescaled_difference_by_hand() -> None:
    a = [_record("x", "s1", 0.8), _record("x", "s2", 0.6), _record("y", "s1", 0.7)]
    b = [_record("x", "s1", 0.9), _record("x", "s2", 0.7), _record("y", "s1", 0.6)]
    fa = [_floor("x", "s1", 0.5), _floor("x", "s2", 0.4)]  # y/s1 has no floor in A
    fb = [_floor("x", "s1", 0.6), _floor("x", "s2", 0.5), _floor("y", "s1", 0.55)]
    raw, rescaled = _rows(a, b, fa, fb)
    assert raw.key == "f1" and rescaled.key == "f1_rescaled" and rescaled.title == "Mean F1 rescaled"
    # A: mean 0.7, floor mean (0.5 + 0.4) / 2 = 0.45 -> 0.25 / 0.55; B: mean 2.2 / 3, floor 0.55 -> (2.2/3 −
    # 0.55) / 0.45
    expected = (2.2 / 3 - 0.55) / 0.45 - 0.25 / 0.55
    assert rescaled.difference.mean == pytest.approx(expected) and rescaled.difference.n == 3
    assert raw.difference.mean == pytest.approx(0.1 / 3)
    assert rescaled.difference.low <= expected <= rescaled.difference.high
    assert 0 < rescaled.p <= 1


def test_rows_are_metric_by_metric_with_every_later_run() -> None:
    a, b = _planted(np.full(30, 0.05))
    _, c = _planted(np.full(30, -0.05))
    floors = [_floor("art", f"s{i:02d}", 0.3) for i in range(30)]
    runs = [("A", a, floors), ("B", b, floors), ("C", c, [])]  # C has no floor: no rescaled row for C
    rows = compare_runs_paired(runs, ["sections", "outline"], {"sections": F1, "outline": F1})
    assert list(rows) == ["sections"]  # no run scored the outline stage
    assert [(r.title, r.run, r.verdict()) for r in rows["sections"]] == [
        ("Mean F1", "B", "B beats A"),
        ("Mean F1", "C", "A beats C"),
        ("Mean F1 rescaled", "B", "B beats A"),
    ]
    # the same floor in both runs: the rescaled difference is the raw one over (1 − floor)
    assert rows["sections"][2].difference.mean == pytest.approx(0.05 / 0.7)


def test_randomization_of_any_statistic_agrees_with_the_mean_difference_test() -> None:
    rng = np.random.default_rng(1)
    a = rng.uniform(0, 1, 25)
    for shift in (0.0, 0.05, 0.3):
        b = a + shift + rng.normal(0, 0.15, 25)
        ours = paired_randomization([b], [a], lambda x, y: np.mean(x - y, axis=1), resamples=20000)
        assert ours == pytest.approx(randomization_p_value(b, a), abs=0.02)


def _write_run(path: Path, results: list[dict[str, Any]], floors: list[dict[str, Any]]) -> Path:
    path.mkdir(parents=True)
    rundir = RunDir(path)
    rundir.append_many("results.jsonl", results)
    rundir.append_many("floors.jsonl", floors)
    rundir.write_json("metrics.json", aggregate(results, [], floors))
    return path


def _sections(values: np.ndarray, shift: float) -> list[dict[str, Any]]:
    return [
        {
            "stage": "sections",
            "article": f"art{i // 4}",
            "item": f"s{i % 4}",
            "metrics": {"f1": v + shift, "p": v, "r": v + 2 * shift, "rouge_l": v / 2, "bleu": v / 3},
        }
        for i, v in enumerate(values.tolist())
    ]


def test_compare_runs_writes_the_paired_section(tmp_path: Path) -> None:
    values = np.random.default_rng(5).uniform(0.3, 0.7, 16)
    floors = [
        {
            "stage": "sections",
            "article": f"art{i // 4}",
            "item": f"s{i % 4}",
            "metrics": {"f1": 0.4, "p": 0.4, "r": 0.4},
        }
        for i in range(16)
    ]
    base = _write_run(tmp_path / "base", _sections(values, 0.0), floors)
    better = _write_run(tmp_path / "better", _sections(values, 0.05), floors)
    assert [h.key for h in stage_headlines("sections", {})] == [
        "f1",
        "rouge_l",
        "bleu",
        "p",
        "r",
        "entity_recall",
        "entity_precision",
        "entity_f1",
    ]
    assert [h.floor for h in stage_headlines("sections", {})] == [
        True,
        False,
        False,
        True,
        True,
        False,
        False,
        False,
    ]

    md = compare_runs([base, better], tmp_path / "cmp").read_text(encoding="utf-8")
    section = md.split("## sections")[1]
    assert "### Paired differences" in section
    assert "| Mean F1 ↑ | better | +5.00 [+5.00, +5.00] |" in section  # the same +0.05 on all 16 items
    assert (
        "| Mean ROUGE-L ↑ | better | +0.00 [+0.00, +0.00] | 1.000 | 16 | 0 | no significant difference |"
        in section
    )
    verdicts = [line for line in section.splitlines() if line.startswith("- ")]
    assert [line.split(":")[0] for line in verdicts] == [
        f"- better beats base on sections {m}" for m in ("Mean F1", "Mean F1 rescaled", "R", "R rescaled")
    ]
    # 16 items: all 2^16 swap patterns enumerated, only the observed one and its mirror as extreme: 2 / 65,536
    assert verdicts[0].startswith("- better beats base on sections Mean F1: +5.00 [+5.00, +5.00], p = 3e-05")
    assert verdicts[0].endswith(", 16 shared items")
    # rescaled F1: (x̄ + 0.05 − 0.4) / 0.6 − (x̄ − 0.4) / 0.6 = 0.05 / 0.6
    assert "| Mean F1 rescaled ↑ | better | +8.33 [+8.33, +8.33] |" in section
    page = (tmp_path / "cmp" / "report.html").read_text(encoding="utf-8")
    assert '<table class="sortable paired-table">' in page and "Paired differences" in page
    assert "better beats base on sections Mean F1" in page
    csv_rows = (tmp_path / "cmp" / "sections_paired.csv").read_text(encoding="utf-8").splitlines()
    assert (
        csv_rows[0] == "metric,run,Δ vs base [95% CI],p,shared items,left out,verdict" and len(csv_rows) == 9
    )

    compare_runs([base], tmp_path / "cmp")  # one run: no paired table, the stale CSV removed
    assert not (tmp_path / "cmp" / "sections_paired.csv").exists()
    assert "Paired differences" not in (tmp_path / "cmp" / "report.md").read_text(encoding="utf-8")


def test_paired_comparison_reads_the_run_directories(tmp_path: Path) -> None:
    values = np.linspace(0.3, 0.7, 8)
    base = _write_run(tmp_path / "a", _sections(values, 0.0), [])
    other = _write_run(tmp_path / "b", _sections(values, 0.1)[:6], [])  # two sections missing in b
    results, floors = load_items(RunDir(other))
    assert len(results) == 6 and floors == []
    from ruwikibench.reporting.compare import load_run

    rows = paired_comparison([load_run(base), load_run(other)])["sections"]
    f1 = next(r for r in rows if r.key == "f1")
    assert f1.shared == 6 and f1.alignment.only_base == 2 and f1.difference.mean == pytest.approx(0.1)
    assert not any(r.key.endswith("_rescaled") for r in rows)  # no floors.jsonl: no rescaled rows
    assert (
        align(stage_items(results, [], "sections"), stage_items(results, [], "sections"), "f1").only_base == 0
    )
    assert (
        compare_stage(
            "sections",
            F1,
            ("a", stage_items([], [], "sections")),
            ("b", stage_items(results, [], "sections")),
        )[0].verdict()
        == "no shared item"
    )


def test_the_verdict_follows_the_metric_direction() -> None:
    """B is higher on every item: it beats A on a metric where higher is better, loses where lower is
    better (an error rate a plug-in declares ``direction="lower"``), and beats nobody on a count."""
    a, b = _planted(np.full(30, 0.05))
    verdicts = {}
    for direction in ("higher", "lower", "neither"):
        headline = [Headline("Errors", "f1", 100.0, direction=direction)]
        (row,) = compare_runs_paired([("A", a, []), ("B", b, [])], ["sections"], {"sections": headline})[
            "sections"
        ]
        verdicts[direction] = (row.verdict(), row.winner)
    assert verdicts == {
        "higher": ("B beats A", "B"),
        "lower": ("A beats B", "A"),
        "neither": ("significant difference (neither direction is better)", None),
    }
