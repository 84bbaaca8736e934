"""The comparison with the no-LLM baselines follows the metric's declared direction: for an error rate a
plug-in declares ``direction="lower"`` the best baseline is the one with the LOWEST mean, and a run below it
is better, not worse."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from ruwikibench.aggregation import baselines as baselines_module
from ruwikibench.aggregation.baselines import versus_baselines
from ruwikibench.stage.metric import Metric

ERR = Metric(key="err", label="Errors", description="wrong words", direction="lower", vs_baselines=True)


def _rows(values: list[float], baseline: str | None = None) -> list[dict[str, Any]]:
    rows = [
        {"stage": "errs", "article": "art", "item": f"s{i}", "metrics": {"err": v}, "excluded": None}
        for i, v in enumerate(values)
    ]
    return [{**r, "baseline": baseline} for r in rows] if baseline else rows


def _summary(mean: float) -> dict[str, Any]:
    return {"metrics": {"err": {"failures_excluded": {"mean": mean}}}}


@pytest.fixture
def lower_is_better(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(baselines_module, "get_stage", lambda name: SimpleNamespace(metrics=(ERR,)))


def test_the_best_baseline_of_a_lower_is_better_metric_is_the_lowest(lower_is_better: None) -> None:
    run = _rows([0.05, 0.02, 0.04, 0.03, 0.06, 0.01, 0.05, 0.02])
    few_errors, many_errors = _rows([0.1] * 8, "few errors"), _rows([0.9] * 8, "many errors")
    data = {
        "metrics": {"err": {"failures_excluded": {"mean": 0.035}}},
        "baselines": {"few errors": _summary(0.1), "many errors": _summary(0.9)},
    }
    versus = versus_baselines("errs", data, run, [], {"few errors": few_errors, "many errors": many_errors})[
        "err"
    ]
    assert versus["baseline"] == "few errors"  # not the highest mean, 'many errors'
    assert versus["difference"]["mean"] == pytest.approx(0.035 - 0.1)
    assert versus["p_value"] < 0.05
    assert versus["verdict"] == "better"  # fewer errors than the best baseline


def test_a_run_with_more_errors_than_the_best_baseline_is_worse(lower_is_better: None) -> None:
    run = _rows([0.5, 0.6, 0.55, 0.7, 0.65, 0.5, 0.6, 0.58])
    data = {
        "metrics": {"err": {"failures_excluded": {"mean": 0.6}}},
        "baselines": {"few errors": _summary(0.1), "many errors": _summary(0.9)},
    }
    versus = versus_baselines(
        "errs", data, run, [], {"few errors": _rows([0.1] * 8, "few errors"), "many errors": _rows([0.9] * 8)}
    )["err"]
    assert versus["baseline"] == "few errors" and versus["verdict"] == "worse"
