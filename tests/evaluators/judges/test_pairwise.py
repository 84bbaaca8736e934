import json
import math
from pathlib import Path

import numpy as np
import pytest

from ruwikibench.evaluators.judges.pairwise import (
    PairwiseOptions,
    build_prompt,
    judge_runs,
    read_records,
    shown_orders,
)
from ruwikibench.evaluators.judges.pairwise_summary import (
    ItemResult,
    length_controlled,
    load_summaries,
    summarize_pairwise,
)
from ruwikibench.evaluators.judges.rundir import load_run
from ruwikibench.evaluators.stats import bootstrap_ci
from ruwikibench.prompts import PromptLibrary
from tests.evaluators.judges.helpers import fake_llm, section


def answers(prompt: str) -> tuple[str, str]:
    a = prompt.split("[Начало ответа ассистента A]\n", 1)[1].split("\n[Конец ответа ассистента A]", 1)[0]
    b = prompt.split("[Начало ответа ассистента B]\n", 1)[1].split("\n[Конец ответа ассистента B]", 1)[0]
    return a, b


def quality(text: str) -> int:
    """The fake judge's notion of quality: the number written in the text."""
    return int(text.split("качество ", 1)[1].split()[0])


def fair_judge(prompt: str) -> str:
    a, b = answers(prompt)
    return f"Ассистент A пишет точнее? Сравним. [[{quality(a)} {quality(b)}]]"


def first_biased_judge(prompt: str) -> str:
    return "Первый ответ лучше. [[8 5]]"


def two_runs(make_run, n: int = 12, categories: bool = True) -> tuple[Path, Path]:
    ref, cand = [], []
    for i in range(n):
        category = ("history", "biography")[i % 2] if categories else None
        ref.append(section(f"s{i}", f"Текст, качество {5} " + "слово " * 10, category=category))
        # the candidate is better by 2 on history, worse by 1 on biography, and longer
        better = 2 if i % 2 == 0 else -1
        cand.append(
            section(f"s{i}", f"Текст, качество {5 + better} " + "слово " * (10 + 5 * i), category=category)
        )
    cand.append(section("extra", "качество 5 only in B"))
    return make_run("base", ref), make_run("ablation", cand)


async def test_order_swapping_maps_scores_back_to_runs(make_run) -> None:
    path_a, path_b = two_runs(make_run)
    llm, chat = fake_llm(fair_judge)
    summary = await judge_runs(load_run(path_a), load_run(path_b), llm, judge="fake", progress=False)
    shown = [r.shown for r in read_records(path_b / "judge_pairwise_base_vs_ablation.jsonl")]
    assert 0 < shown.count("candidate_first") < len(shown)  # both orders occur under random order
    # whatever the order shown, the delta is candidate − reference
    by_item = {i.item: i.delta for i in summary.per_item}
    assert all(by_item[f"s{i}"] == (2 if i % 2 == 0 else -1) for i in range(12))
    assert (summary.wins, summary.ties, summary.losses) == (6, 0, 6)
    assert summary.delta.mean == pytest.approx(0.5)
    expected = bootstrap_ci([by_item[f"s{i}"] for i in range(12)], seed=0)
    assert (summary.delta.low, summary.delta.high) == pytest.approx((expected.low, expected.high))
    assert summary.missing == {"only_reference": 0, "only_candidate": 1}
    per = {c.category: c for c in summary.per_category}
    assert per["history"].delta.mean == 2 and per["biography"].delta.mean == -1
    assert (per["history"].wins, per["biography"].losses) == (6, 6)
    assert summary.first_shown_advantage is not None and len(chat.calls) == 12


async def test_both_orders_expose_position_bias(make_run) -> None:
    path_a, path_b = two_runs(make_run, n=6)
    llm, chat = fake_llm(first_biased_judge)
    options = PairwiseOptions(order="both")
    summary = await judge_runs(
        load_run(path_a), load_run(path_b), llm, judge="fake", options=options, progress=False
    )
    assert len(chat.calls) == 12
    assert summary.position_consistency == 0.0  # the winner flips with the order on every item
    assert summary.first_shown_advantage == 3.0
    assert summary.delta.mean == 0.0 and summary.ties == 6  # (−3 + 3) / 2 per item
    llm_fair, _ = fake_llm(fair_judge)
    fair = await judge_runs(
        load_run(path_a), load_run(path_b), llm_fair, judge="fair", options=options, progress=False
    )
    assert fair.position_consistency == 1.0 and fair.first_shown_advantage == pytest.approx(0.0)


def test_random_order_is_seeded_per_item() -> None:
    texts = [section(f"s{i}", "x") for i in range(200)]
    first = [shown_orders(t, PairwiseOptions(seed=1))[0] for t in texts]
    again = [shown_orders(t, PairwiseOptions(seed=1))[0] for t in reversed(texts)][::-1]
    other = [shown_orders(t, PairwiseOptions(seed=2))[0] for t in texts]
    assert first == again and first != other
    assert 70 < first.count("candidate_first") < 130


def test_length_controlled_intercept_matches_least_squares() -> None:
    rng = np.random.default_rng(3)
    items = []
    for i in range(40):
        w_ref, w_cand = int(rng.integers(20, 200)), int(rng.integers(20, 200))
        # a judge that likes length: delta grows with the log length ratio, true delta at equal length = 0.5
        x = math.log((w_cand + 1) / (w_ref + 1))
        delta = 0.5 + 2.0 * x + float(rng.normal(0, 0.1))
        items.append(
            ItemResult(
                stage="sections",
                article="a",
                item=str(i),
                category=None,
                delta=delta,
                words_reference=w_ref,
                words_candidate=w_cand,
            )
        )
    result = length_controlled(items, resamples=500)
    x = np.array([math.log((i.words_candidate + 1) / (i.words_reference + 1)) for i in items])
    y = np.array([i.delta for i in items])
    slope, intercept = np.polyfit(x, y, 1)
    assert result.intercept.mean == pytest.approx(intercept) and result.slope == pytest.approx(slope)
    assert result.intercept.low < 0.5 < result.intercept.high
    # equal lengths: no spread in x, the intercept is the mean delta
    same = [i.model_copy(update={"words_candidate": i.words_reference}) for i in items]
    flat = length_controlled(same, resamples=200)
    assert flat.slope is None and flat.intercept.mean == pytest.approx(float(y.mean()))


async def test_outputs_png_json_rows_and_resume(make_run, tmp_path: Path) -> None:
    path_a, path_b = two_runs(make_run, n=4, categories=False)
    out = tmp_path / "compare"
    out.mkdir()
    llm, chat = fake_llm(fair_judge)
    await judge_runs(load_run(path_a), load_run(path_b), llm, judge="fake", out_dir=out, progress=False)
    await judge_runs(load_run(path_a), load_run(path_b), llm, judge="fake", out_dir=out, progress=False)
    assert len(chat.calls) == 4  # resumed: nothing judged twice
    for name in ("judge_pairwise_base_vs_ablation.png", "judge_pairwise_base.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads((out / "judge_pairwise_base_vs_ablation.json").read_text(encoding="utf-8"))
    assert data["judged"] == 4 and data["per_category"] == []
    (row,) = summarize_pairwise(out)
    assert row["reference"] == "base" and row["candidate"] == "ablation" and row["W/T/L"] == "2/0/2"
    assert row["position consistency"] == "—" and len(load_summaries(out)) == 1


async def test_unparseable_verdicts_are_counted_not_scored(make_run) -> None:
    path_a, path_b = two_runs(make_run, n=4, categories=False)
    replies = iter(["Оба хороши.", "[[7 7]]", "[[12 3]]", "[[6 8]]"])
    llm, _ = fake_llm(lambda prompt: next(replies), concurrency=1)
    summary = await judge_runs(load_run(path_a), load_run(path_b), llm, judge="fake", progress=False)
    assert summary.statuses == {"unparseable": 1, "ok": 2, "out_of_range": 1}
    assert summary.judged == 2 and summary.items == 4


def test_guided_prompt_shows_the_reference() -> None:
    ref = section("s1", "Текст A", reference="ЭТАЛОННЫЙ ТЕКСТ")
    cand = section("s1", "Текст B", reference="ЭТАЛОННЫЙ ТЕКСТ")
    prompts = PromptLibrary()
    free = build_prompt(ref, cand, PairwiseOptions(), prompts)
    guided = build_prompt(ref, cand, PairwiseOptions(mode="guided"), prompts)
    assert "ЭТАЛОННЫЙ ТЕКСТ" not in free and "ЭТАЛОННЫЙ ТЕКСТ" in guided
    for prompt in (free, guided):
        assert answers(prompt) == ("Текст A", "Текст B") and prompt.rstrip().endswith("ассистента B]")
        assert "[[балл A балл B]]" in prompt


async def test_judge_tables_collects_every_table(make_run) -> None:
    from ruwikibench.evaluators.judges import judge_tables
    from ruwikibench.evaluators.judges.criteria import judge_run
    from ruwikibench.evaluators.judges.criteria_set import load_criteria

    path_a, path_b = two_runs(make_run, n=2, categories=False)
    assert judge_tables(path_b) == {}
    llm, _ = fake_llm(fair_judge)
    await judge_runs(load_run(path_a), load_run(path_b), llm, judge="fake", progress=False)
    criteria_llm, _ = fake_llm(lambda prompt: "[RESULT] 1 [END]")
    await judge_run(
        load_run(path_b), criteria_llm, load_criteria().select(["literacy"]), judge="j", progress=False
    )
    tables = judge_tables(path_b)
    assert list(tables) == ["LLM judge: criteria", "LLM judge: pairwise"]
    assert tables["LLM judge: criteria"][0]["score"] == "1.00 / 2"
