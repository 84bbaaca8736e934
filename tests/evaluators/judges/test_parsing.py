import pytest

from ruwikibench.evaluators.judges.parsing import parse_criterion_verdict, parse_pair_verdict

SCALE = [0, 1, 2]

POLLUX_STYLE = (
    "[FEEDBACK] В тексте нет орфографических ошибок, однако в предложении «в 1837 году поэт погиб на дуэли» "
    "пропущена запятая перед оборотом. Других ошибок не обнаружено, поэтому ставлю 1. [RESULT] 1 [END]"
)


def test_pollux_style_verdict_gives_score_and_rationale() -> None:
    verdict = parse_criterion_verdict(POLLUX_STYLE, SCALE)
    assert verdict.status == "ok" and verdict.score == 1
    assert verdict.rationale.startswith("В тексте нет орфографических ошибок")
    assert "[FEEDBACK]" not in verdict.rationale and "RESULT" not in verdict.rationale


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        ("Обоснование: тон нейтральный.\n\n**[RESULT]** 2 **[END]**", 2),
        ("Текст связен.\n[RESULT]: 2\n[END]", 2),
        ("Есть повторы.\n[result] (1) [end]", 1),
        ("Тема раскрыта.\n\n[RESULT] **2**", 2),  # no [END]: still a complete verdict
        ("Тема раскрыта частично.\n[RESULT] 1/2 [END]", 1),
        ("Оценка по шкале:\n[RESULT] `0` [END]", 0),
        # the model restates the format before answering: the placeholder carries no number
        ("Формат: [RESULT] (целое число из шкалы). Анализ: ошибок нет.\n[RESULT] 2 [END]", 2),
        # the same number twice is not ambiguous
        ("[RESULT] 2 — итог. Повторю: [RESULT] 2 [END]", 2),
    ],
)
def test_variants_with_markdown_and_punctuation(answer: str, score: int) -> None:
    verdict = parse_criterion_verdict(answer, SCALE)
    assert (verdict.status, verdict.score) == ("ok", score)


def test_missing_block_is_unparseable_not_guessed() -> None:
    # a score is stated in words, but not in the required block: never guessed
    verdict = parse_criterion_verdict("Текст грамотный, я бы поставил оценку 2 из 2.", SCALE)
    assert verdict.status == "unparseable" and verdict.score is None
    assert verdict.rationale == "Текст грамотный, я бы поставил оценку 2 из 2."


def test_two_different_scores_are_ambiguous() -> None:
    verdict = parse_criterion_verdict("Сначала [RESULT] 1, но нет: [RESULT] 2 [END]", SCALE)
    assert verdict.status == "ambiguous" and verdict.score is None


@pytest.mark.parametrize("answer", ["[RESULT] 3 [END]", "[RESULT] 1.5 [END]", "[RESULT] 5/5"])
def test_scores_outside_the_scale_are_out_of_range(answer: str) -> None:
    verdict = parse_criterion_verdict(answer, SCALE)
    assert verdict.status == "out_of_range" and verdict.score is None


def test_binary_scale_of_critical_criteria() -> None:
    assert parse_criterion_verdict("[RESULT] 1 [END]", [0, 1]).score == 1
    assert parse_criterion_verdict("[RESULT] 2 [END]", [0, 1]).status == "out_of_range"


@pytest.mark.parametrize(
    ("answer", "scores"),
    [
        ("Ответ A точнее передаёт факты, ответ B содержит выдумки.\n\n[[8 4]]", (8, 4)),
        ("Сравнение…\n[[7, 9]]", (7, 9)),
        ("Итог: **[[A: 6, B: 6]]**", (6, 6)),
        ("Итог: [[А — 3; В — 10]]", (3, 10)),  # Cyrillic letters as labels
        ("Вердикт [[7/10 8/10]]", (7, 8)),
        ("Формат [[балл A балл B]]. Мой вердикт: [[5 9]]", (5, 9)),
    ],
)
def test_pair_verdict_variants(answer: str, scores: tuple[int, int]) -> None:
    verdict = parse_pair_verdict(answer)
    assert verdict.status == "ok" and (verdict.score_a, verdict.score_b) == scores


def test_pair_verdict_failures_are_counted() -> None:
    assert parse_pair_verdict("Оба ответа хороши, A немного лучше.").status == "unparseable"
    assert parse_pair_verdict("[[8 4]] … нет, пересмотрю: [[6 7]]").status == "ambiguous"
    assert parse_pair_verdict("[[11 5]]").status == "out_of_range"
    assert parse_pair_verdict("[[0 5]]").status == "out_of_range"
    missing = parse_pair_verdict("Оба ответа хороши.")
    assert missing.score_a is None and missing.score_b is None
    assert parse_pair_verdict("A лучше. [[9 2]]").rationale == "A лучше."
