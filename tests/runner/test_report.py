"""Report tables: fractions are shown ×100 with their CI, counts (headings, depth) as they are."""

from ruwikibench.reporting.tables import count_keys, stage_table
from ruwikibench.storage.results import StageMetrics


def _estimate(mean: float, low: float, high: float) -> dict:
    estimate = {"mean": mean, "low": low, "high": high, "n": 2}
    return {"failures_excluded": estimate, "failures_as_zero": estimate}


def test_counts_are_not_scaled_even_when_at_most_one() -> None:
    metrics = {
        "metrics": {
            "f1": _estimate(0.8569, 0.8337, 0.8801),
            "gen_max_depth": _estimate(1.0, 1.0, 1.0),
            "gen_headings": _estimate(9.5, 9.0, 10.0),
            "gen_deep_share": _estimate(0.25, 0.0, 0.5),
        },
        "counts": {"evaluated": 2, "excluded": 0, "failed_units": 0},
    }
    header, row = stage_table("outline", [("run-a", StageMetrics.model_validate(metrics))])
    cell = dict(zip(header, row, strict=True))
    assert cell["Mean F1"] == "85.69 [83.37, 88.01]"
    assert cell["Max depth"] == "1.00 [1.00, 1.00]"
    assert cell["Headings"] == "9.50 [9.00, 10.00]"
    assert cell["Share > 3"] == "25.00 [0.00, 50.00]"
    assert cell["Ref headings"] == "—"  # no estimate: a dash, never a number


def test_stages_declare_their_counts() -> None:
    assert count_keys("outline") == {"gen_headings", "gen_max_depth", "ref_headings", "ref_max_depth"}
    assert count_keys("sections") == frozenset()
    assert count_keys("no-such-stage") == frozenset()
