import csv
import json
import random
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.evaluators.judges.meta import (
    judge_verdict_confidence,
    run_meta,
    spearman,
    summarize_meta,
    unique_mode,
    verdict_confidence,
)

# (item, criterion): human scores by annotators h1..h3, and the judge's score
EXAMPLE = {
    ("s1", "literacy"): ([2, 2, 1], 2),
    ("s2", "literacy"): ([1, 1, 1], 2),
    ("s3", "literacy"): ([0, 1, 2], 1),  # no unique mode: excluded from MAE / Spearman / confusion
    ("s4", "literacy"): ([0, 0, 1], 0),
    ("s1", "refusal"): ([0, 0, 0], 0),
    ("s2", "refusal"): ([1, 1, 0], 0),
}


def write_files(tmp_path: Path, fmt: str = "jsonl") -> tuple[Path, Path]:
    judged = tmp_path / "judge_criteria.jsonl"
    rows = [
        {
            "stage": "sections",
            "article": "Пушкин",
            "item": item,
            "criterion": c,
            "judge": "j",
            "mode": "free",
            "status": "ok",
            "score": judge,
        }
        for (item, c), (_, judge) in EXAMPLE.items()
    ]
    rows.append(
        {
            "stage": "sections",
            "article": "Пушкин",
            "item": "s5",
            "criterion": "literacy",
            "judge": "j",
            "mode": "free",
            "status": "unparseable",
            "score": None,
        }
    )
    judged.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    human_rows = [
        {"article": "Пушкин", "item": item, "criterion": c, "annotator": f"h{k + 1}", "score": score}
        for (item, c), (scores, _) in EXAMPLE.items()
        for k, score in enumerate(scores)
    ]
    human_rows += [
        {"article": "Пушкин", "item": "s5", "criterion": "literacy", "annotator": "h1", "score": 2},
        {"article": "Пушкин", "item": "s6", "criterion": "literacy", "annotator": "h1", "score": 2},
        {"article": "Пушкин", "item": "s6", "criterion": "literacy", "annotator": "h2", "score": "NA"},
    ]
    human = tmp_path / f"human.{fmt}"
    if fmt == "csv":
        with human.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(human_rows[0]))
            writer.writeheader()
            writer.writerows(human_rows)
    else:
        human.write_text(
            "\n".join(json.dumps(r, ensure_ascii=False) for r in human_rows) + "\n", encoding="utf-8"
        )
    return judged, human


def test_verdict_confidence_matches_pollux_examples() -> None:
    assert verdict_confidence([0, 1, 2, 2, 2]) == 0.6  # POLLUX appendix D.2.2
    # replacing one of three annotators: [2,2,1] with judge 2 → 2/3, 2/3, 1 → mean 7/9
    assert judge_verdict_confidence([2, 2, 1], 2) == pytest.approx(7 / 9)
    # POLLUX's procedure (random annotator replaced, 100 repetitions) converges to the exact expectation
    rng = random.Random(0)
    trials = []
    for _ in range(20000):
        scores = [2, 2, 1]
        scores[rng.randrange(3)] = 2
        trials.append(verdict_confidence(scores))
    assert np.mean(trials) == pytest.approx(7 / 9, abs=0.01)
    # random labelling, 3 annotators × 3 labels: E[VC] = 17/27 (POLLUX)
    all_triples = [[a, b, c] for a in range(3) for b in range(3) for c in range(3)]
    assert np.mean([verdict_confidence(t) for t in all_triples]) == pytest.approx(17 / 27)


def test_unique_mode() -> None:
    assert unique_mode([2, 2, 1]) == 2 and unique_mode([0, 1, 2]) is None and unique_mode([1, 0]) is None
    assert unique_mode([1]) == 1


@pytest.mark.parametrize("seed", range(5))
def test_spearman_matches_scipy_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, size=30)
    y = np.clip(x + rng.integers(-1, 2, size=30), 0, 2)
    assert spearman(list(x), list(y)) == pytest.approx(spearmanr(x, y).statistic)
    assert spearman([1, 1, 1], [0, 1, 2]) is None and spearman([1], [2]) is None
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)  # 1 − 6·2 / (4·15), no ties


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_meta_metrics_on_hand_computed_example(tmp_path: Path, fmt: str) -> None:
    judged, human = write_files(tmp_path, fmt)
    (result,), path = run_meta(judged, human)
    assert path == tmp_path / "judge_meta.json"
    assert result.human_instances == 8 and result.no_mode == 1
    assert result.not_judged == 1 and result.judge_unparsed == 1  # s6 never judged; s5 unparseable
    overall = result.overall
    # instances with a unique mode and a judge score: s1 lit (2 vs 2), s2 lit (1 vs 2), s4 lit (0 vs 0),
    # s1 ref (0 vs 0), s2 ref (1 vs 0)
    human_modes, judge_scores = [2, 1, 0, 0, 1], [2, 2, 0, 0, 0]
    assert overall.instances == 5
    assert overall.mae == pytest.approx(2 / 5) and overall.exact == pytest.approx(3 / 5)
    assert overall.spearman == pytest.approx(spearmanr(judge_scores, human_modes).statistic)
    # verdict confidence over the six instances with ≥ 2 annotators
    experts = [2 / 3, 1, 1 / 3, 2 / 3, 1, 2 / 3]
    assert overall.vc_instances == 6 and overall.vc_experts == pytest.approx(np.mean(experts))
    judge_vc = [judge_verdict_confidence(scores, judge) for scores, judge in EXAMPLE.values()]
    assert overall.vc_judge == pytest.approx(np.mean(judge_vc))
    assert overall.confusion.labels == [0, 1, 2]
    assert overall.confusion.matrix == [[2, 0, 0], [1, 0, 1], [0, 0, 1]]
    per = {c.criterion: c for c in result.per_criterion}
    assert per["literacy"].mae == pytest.approx(1 / 3) and per["refusal"].mae == pytest.approx(1 / 2)
    rows = summarize_meta(tmp_path)
    assert [r["criterion"] for r in rows] == ["all", "literacy", "refusal"] and rows[0]["MAE"] == "0.400"


def test_meta_cli_and_clear_errors(tmp_path: Path) -> None:
    judged, human = write_files(tmp_path)
    runner = CliRunner()
    result = runner.invoke(app, ["judge", "meta", str(judged), str(human), "--out", str(tmp_path / "m.json")])
    assert result.exit_code == 0, result.output
    assert "0.400" in result.output and json.loads((tmp_path / "m.json").read_text())["key_columns"] == [
        "article",
        "item",
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"item": "s1", "criterion": "literacy", "annotator": "h1", "score": "хорошо"}\n', encoding="utf-8"
    )
    result = runner.invoke(app, ["judge", "meta", str(judged), str(bad)])
    assert result.exit_code == 2 and "bad.jsonl:1: score 'хорошо' is not a number" in result.output
