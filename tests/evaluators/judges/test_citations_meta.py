"""Meta-evaluation of the support judge: metrics cross-checked with scikit-learn, the bundled pairs against
the shared sample (skipped without it), bad fixtures, and the CLI against a fake endpoint on a tiny sample."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from pathlib import Path

import pytest
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score, roc_auc_score
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.evaluators.judges.citations_meta import (
    FixtureError,
    SampleMissing,
    SupportPair,
    agreement,
    balanced,
    load_pairs,
    roc_auc,
)
from ruwikibench.models.fake import yes_no_completion
from tests.fake_openai import fake_openai_server
from tests.sample import sample_dir


def _pair(i: int, label: str) -> SupportPair:
    return SupportPair(id=f"p{i}", label=label, claim="c", article="a", file="f", start=0, end=1, sha256="x")


def test_agreement_matches_scikit_learn() -> None:
    rng = random.Random(3)
    labels = ["supported", "contradicted", "partial", "unrelated"]
    for _ in range(50):
        pairs = [_pair(i, rng.choice(labels)) for i in range(rng.randint(4, 30))]
        probs = [rng.choice([0.1, 0.5, 0.7, 0.9, rng.random()]) for _ in pairs]
        truth = [p.supported for p in pairs]
        if len(set(truth)) < 2:
            continue
        said = [p >= 0.6 for p in probs]
        result = agreement("x", pairs, probs, 0.6)
        assert result.accuracy == pytest.approx(accuracy_score(truth, said))
        if any(said):
            assert result.precision == pytest.approx(precision_score(truth, said))
        assert result.recall == pytest.approx(recall_score(truth, said))
        assert result.f1 == pytest.approx(f1_score(truth, said, zero_division=0))
        assert result.auc == pytest.approx(roc_auc_score(truth, probs))


def test_agreement_hand_computed_with_unparsed_pairs() -> None:
    pairs = [
        _pair(0, "supported"),
        _pair(1, "supported"),
        _pair(2, "partial"),
        _pair(3, "unrelated"),
        _pair(4, "contradicted"),
    ]
    result = agreement("x", pairs, [0.9, 0.4, 0.8, 0.1, None], 0.5)
    # answered: s 0.9 (TP), s 0.4 (FN), partial 0.8 (FP), unrelated 0.1 (TN); contradicted unparsed
    assert (result.n, result.unparsed) == (4, 1)
    assert (result.accuracy, result.precision, result.recall, result.f1) == (0.5, 0.5, 0.5, 0.5)
    assert result.auc == pytest.approx(0.75)  # 0.9 beats both negatives (0.8, 0.1), 0.4 beats one: 3 / 4
    assert result.per_label == {"supported": 0.5, "partial": 0.0, "unrelated": 1.0}
    assert roc_auc([True, False], [0.5, 0.5]) == 0.5 and roc_auc([True], [0.2]) is None


def test_limit_takes_pairs_round_robin_over_labels() -> None:
    pairs = [_pair(i, label) for i, label in enumerate(["supported"] * 3 + ["partial"] * 2 + ["unrelated"])]
    assert [p.id for p in balanced(pairs, 4)] == ["p0", "p3", "p5", "p1"]
    assert [p.id for p in balanced(pairs, None)] == [p.id for p in pairs]
    assert len(balanced(pairs, 100)) == 6


def _tiny_sample(tmp_path: Path) -> tuple[Path, Path]:
    text = "Город основан в 1147 году князем Юрием Долгоруким. Река течёт на север."
    sample = tmp_path / "sample" / "ruwikibench_articles.json"
    sample.parent.mkdir()
    sample.write_text(
        json.dumps(
            [
                {
                    "article_name": "Москва",
                    "sources": [{"source_id": "s", "file": "source_1.txt", "source_text": text}],
                }
            ]
        ),
        encoding="utf-8",
    )
    first = text.index("Река") - 1
    rows = [
        ("founded", "supported", "Город основан в 1147 году.", 0, first),
        ("founded-late", "contradicted", "Город основан в 1347 году.", 0, first),
        ("river", "unrelated", "Город основан в 1147 году.", first + 1, len(text)),
        ("river-north", "supported", "Река течёт на север.", first + 1, len(text)),
    ]
    pairs = tmp_path / "pairs.jsonl"
    with pairs.open("w", encoding="utf-8") as out:
        for name, label, claim, start, end in rows:
            sha = hashlib.sha256(text[start:end].encode()).hexdigest()[:16]
            out.write(
                json.dumps(
                    {
                        "id": name,
                        "label": label,
                        "claim": claim,
                        "article": "Москва",
                        "file": "source_1.txt",
                        "start": start,
                        "end": end,
                        "sha256": sha,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
    return sample, pairs


def test_tampered_or_missing_sample_is_one_clear_error(tmp_path: Path) -> None:
    sample, pairs = _tiny_sample(tmp_path)
    assert [p.passage[:5] for p in load_pairs(pairs, sample)] == ["Город", "Город", "Река ", "Река "]
    lines = pairs.read_text(encoding="utf-8").splitlines()
    bad = json.loads(lines[1])
    bad["start"] += 1
    (tmp_path / "bad.jsonl").write_text(json.dumps(bad, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(FixtureError, match="pair founded-late: .* does not match its hash"):
        load_pairs(tmp_path / "bad.jsonl", sample)
    with pytest.raises(SampleMissing):
        load_pairs(pairs, tmp_path / "nowhere")
    bad["label"] = "maybe"
    (tmp_path / "bad.jsonl").write_text(json.dumps(bad, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(FixtureError, match="bad.jsonl:1: field 'label'"):
        load_pairs(tmp_path / "bad.jsonl", sample)


@pytest.mark.skipif(sample_dir() is None, reason="the shared Ruwiki sample is not on this machine")
def test_bundled_pairs_resolve_in_the_shared_sample() -> None:
    pairs = load_pairs(sample=sample_dir())
    assert len(pairs) >= 64 and len({p.id for p in pairs}) == len(pairs)
    assert Counter(p.label for p in pairs) == {
        "supported": 16,
        "contradicted": 16,
        "partial": 16,
        "unrelated": 16,
    }
    assert all(0 < len(p.passage) <= 450 for p in pairs)


def test_cli_measures_a_fake_endpoint(tmp_path: Path) -> None:
    sample, pairs = _tiny_sample(tmp_path)

    def responder(messages):  # type: ignore[no-untyped-def]
        prompt = messages[-1]["content"]
        passage, claim = prompt.split('"""')[1], prompt.split('"""')[3]
        if "1347" in claim:
            return "не знаю"  # unparseable: counted, left out
        return yes_no_completion(0.8 if claim.strip()[:10] in passage else 0.3)

    with fake_openai_server(responder) as url:
        config = {
            "name": "t",
            "cache_dir": str(tmp_path / "cache"),
            "models": {"judge": {"name": "served", "endpoints": [url], "max_retries": 0}},
        }
        path = tmp_path / "cfg.yaml"
        path.write_text(json.dumps(config), encoding="utf-8")
        out = tmp_path / "meta.json"
        result = CliRunner().invoke(
            app,
            [
                "judge",
                "citations-meta",
                "--config",
                str(path),
                "--pairs",
                str(pairs),
                "--sample",
                str(sample),
                "--no-baseline",
                "--out",
                str(out),
            ],
        )
    assert result.exit_code == 0, result.output
    [figures] = json.loads(out.read_text(encoding="utf-8"))
    assert figures["scorer"] == "LLM served" and (figures["n"], figures["unparsed"]) == (3, 1)
    assert (figures["accuracy"], figures["f1"], figures["auc"]) == (1.0, 1.0, 1.0)
    assert figures["probabilities"]["founded"] == pytest.approx(0.8)


def test_cli_without_the_sample_fails_with_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["judge", "citations-meta", "--sample", str(tmp_path)])
    assert (
        result.exit_code == 2
        and "ruwikibench_articles.json" in result.output
        and "Traceback" not in result.output
    )


def test_best_threshold_and_leave_one_out_hand_computed() -> None:
    from ruwikibench.evaluators.judges.citations_meta import (
        best_threshold,
        calibrated,
        leave_one_out_accuracy,
    )

    truth = [True, True, False, False, True]
    scores = [0.9, 0.8, 0.7, 0.2, 0.6]
    # thresholds between neighbours: ≥0.85 → 3/5 right, ≥0.75 → 4/5, ≥0.65 → 3/5, ≥0.4 → 4/5 … best 0.4
    # (lowest)
    assert best_threshold(truth, scores) == pytest.approx((0.4, 0.8))
    # leave out 0.9: best on the rest is 0.4 → 0.9 right; 0.8: 0.4 → right; 0.7 (False): 0.4 → wrong;
    # 0.2: best 0.65 → right; 0.6 (True): rest [.9,.8,.7,.2] best 0.75 (4/4) → 0.6 wrong
    assert leave_one_out_accuracy(truth, scores) == pytest.approx(3 / 5)
    pairs = [_pair(i, "supported" if t else "unrelated") for i, t in enumerate(truth)]
    result = calibrated(agreement("x", pairs, scores, 0.5), pairs)
    assert (result.best_threshold, result.best_accuracy, result.loo_accuracy) == pytest.approx(
        (0.4, 0.8, 0.6)
    )


def test_best_threshold_brute_force_on_random_cases() -> None:
    from ruwikibench.evaluators.judges.citations_meta import best_threshold

    rng = random.Random(5)
    for _ in range(100):
        scores = [round(rng.random(), 2) for _ in range(rng.randint(1, 12))]
        truth = [rng.random() < 0.5 for _ in scores]
        threshold, accuracy = best_threshold(truth, scores)
        grid = [i / 1000 for i in range(-1, 1002)]
        brute = max(sum((s >= t) == y for s, y in zip(scores, truth)) / len(scores) for t in grid)
        assert accuracy == pytest.approx(brute)
        assert sum((s >= threshold) == y for s, y in zip(scores, truth)) / len(scores) == pytest.approx(
            accuracy
        )
