"""Citation faithfulness from given verdicts: hand-computed article, marker placement, windows, ALCE
cross-check."""

from __future__ import annotations

import itertools
import random

import pytest

from ruwikibench.evaluators.citations import (
    Check,
    Verdict,
    best_window,
    claim_text,
    combine,
    is_checkable,
    pending_checks,
    score_text,
    split_sentences,
    tally,
)

ARTICLE = (
    "Python создан Гвидо ван Россумом [1]. Первая версия вышла в 1991 году [1][2].\n"
    "Язык назван в честь «Монти Пайтон» [3][4]. Он популярен [9].\n\n"
    "Python используют в Google и NASA. Это хорошо."
)
YES, NO, UNPARSED = (
    Verdict(supported=True, probability=0.9),
    Verdict(supported=False, probability=0.1),
    Verdict(supported=None),
)


def collect(text: str, available: set[int], oracle: dict[tuple[int, tuple[int, ...]], Verdict]) -> dict:
    """Ask pending checks until none is left, answering from ``oracle``; returns the verdicts asked."""
    verdicts: dict[Check, Verdict] = {}
    for sentence in split_sentences(text):
        while checks := pending_checks(sentence, available, verdicts):
            for check in checks:
                verdicts[check] = oracle[(check.sentence, check.numbers)]
    return verdicts


def test_sentences_carry_their_markers() -> None:
    sentences = split_sentences(ARTICLE)
    assert [s.numbers for s in sentences] == [[1], [1, 2], [3, 4], [9], [], []]
    assert sentences[1].claim == "Первая версия вышла в 1991 году."
    assert ARTICLE[sentences[2].start : sentences[2].end] == sentences[2].text


def test_marker_after_the_full_stop_goes_to_the_sentence_before() -> None:
    sentences = split_sentences(
        "Вышла в 1991 году. [2] Позже вышла вторая версия.\n[3]\nТретья строка [1, 4-5]."
    )
    assert [s.numbers for s in sentences] == [[2], [3], [1, 4, 5]]
    assert [s.claim for s in sentences][:2] == ["Вышла в 1991 году.", "Позже вышла вторая версия."]


def test_marker_line_before_the_first_sentence_goes_to_it() -> None:
    sentences = split_sentences("[4]\nПервая строка текста.")
    assert [(s.numbers, s.claim) for s in sentences] == [([4], "Первая строка текста.")]


def test_hand_computed_article() -> None:
    oracle = {
        (0, (1,)): YES,
        (1, (1, 2)): YES,
        (1, (1,)): NO,
        (1, (2,)): YES,
        (2, (3, 4)): YES,
        (2, (3,)): NO,
        (2, (4,)): NO,
    }
    verdicts = collect(ARTICLE, {1, 2, 3, 4}, oracle)
    assert set(verdicts) == {Check(s, n) for s, n in oracle}  # [9] is never asked: it has no source
    scored, counts = score_text(ARTICLE, {1, 2, 3, 4}, verdicts)
    assert [s.status for s in scored] == [
        "supported",
        "supported",
        "supported",
        "unsupported",
        "uncited",
        "uncited",
    ]
    assert scored[1].precise == {1: 0, 2: 1}  # [1] adds nothing: [2] alone supports
    assert scored[2].precise == {3: 1, 4: 1}  # neither alone, both needed
    assert scored[3].precise == {9: 0} and scored[3].missing == [9]
    assert [s.checkable for s in scored[4:]] == [True, False]
    assert (counts.sentences, counts.cited, counts.supported, counts.unsupported, counts.uncited) == (
        6,
        4,
        3,
        1,
        2,
    )
    assert (counts.citations, counts.precise_citations, counts.missing_citations) == (6, 4, 1)
    assert counts.citation_recall == pytest.approx(3 / 4)
    assert counts.citation_precision == pytest.approx(4 / 6)
    assert counts.unsupported_share == pytest.approx(1 / 6)


def test_dangling_marker_beside_a_real_one_is_judged_on_the_real_one() -> None:
    text = "Компания основана в 2010 году [2][7]."
    verdicts = collect(text, {2}, {(0, (2,)): YES})
    scored, counts = score_text(text, {2}, verdicts)
    assert scored[0].status == "supported" and scored[0].precise == {2: 1, 7: 0}
    assert (counts.citation_recall, counts.citation_precision) == (1.0, 0.5)


def test_unsupported_union_zeroes_every_citation() -> None:
    text = "Город основан в 1147 году [1][2]."
    verdicts = collect(text, {1, 2}, {(0, (1, 2)): NO})
    assert list(verdicts) == [Check(0, (1, 2))]  # no single checks after a failed union
    _, counts = score_text(text, {1, 2}, verdicts)
    assert (counts.citation_recall, counts.citations, counts.precise_citations) == (0.0, 2, 0)


def test_unparseable_verdict_leaves_the_sentence_unjudged() -> None:
    text = "Город основан в 1147 году [1]. Население 13 млн человек [1][2]."
    oracle = {(0, (1,)): UNPARSED, (1, (1, 2)): YES, (1, (1,)): UNPARSED, (1, (2,)): YES}
    scored, counts = score_text(text, {1, 2}, collect(text, {1, 2}, oracle))
    assert [s.status for s in scored] == ["unjudged", "unjudged"]
    assert (counts.unjudged, counts.citations) == (2, 0)
    assert counts.citation_recall is None and counts.citation_precision is None


def test_missing_verdict_is_an_error_not_a_guess() -> None:
    with pytest.raises(ValueError, match="verdicts missing"):
        score_text("Город основан в 1147 году [1].", {1}, {})


def test_empty_article() -> None:
    scored, counts = score_text("", {1}, {})
    assert scored == [] and counts.sentences == 0
    assert (counts.citation_recall, counts.citation_precision, counts.unsupported_share) == (None, None, None)
    assert counts.metrics()["sentences"] == 0.0 and "citation_recall" not in counts.metrics()


def test_combine_adds_counts() -> None:
    a = tally(score_text("Это хорошо сделано в 2020 году.", set(), {})[0])
    b = tally(score_text("Просто текст.", set(), {})[0])
    total = combine([a, b])
    assert (total.sentences, total.unsupported_claims, total.unsupported_share) == (2, 1, 0.5)


def test_checkable_claims() -> None:
    assert is_checkable("В 2020 году было много событий.")
    assert is_checkable("Язык поддерживает библиотеку NumPy для вычислений.")
    assert is_checkable("Проект возглавил Аркадий Дворкович в те годы.")
    assert not is_checkable("Это очень важная и интересная тема.")
    assert not is_checkable("В 2020 году.")  # too short to be a claim
    assert claim_text("Он вышел [1] в 1991 году [2] .") == "Он вышел в 1991 году."


def test_best_window_finds_the_matching_passage() -> None:
    filler = "Посторонний текст о погоде и природе края. " * 10
    passage = filler + "Гвидо ван Россум выпустил Python в 1991 году. " + filler
    window = best_window(passage, "Python выпущен Гвидо ван Россумом в 1991 году.", 120)
    assert "Гвидо ван Россум выпустил Python" in window.text
    assert len(window.text) <= 120 and passage[window.start : window.end] == window.text
    short = best_window("Короткий текст.", "что угодно", 120)
    assert short.text == "Короткий текст." and (short.start, short.end) == (0, 15)


def test_best_window_cuts_a_sentence_longer_than_the_window() -> None:
    window = best_window("слово " * 100, "слово", 50)
    assert window.start == 0 and window.end == 50


def _alce_precision(valid: list[int], supports) -> dict[int, int]:  # type: ignore[no-untyped-def]
    """ALCE's rule written out directly: needed = alone supports or the rest does not."""
    if not supports(set(valid)):
        return {n: 0 for n in valid}
    if len(valid) == 1:
        return {valid[0]: 1}
    return {n: int(supports({n}) or not supports(set(valid) - {n})) for n in valid}


def test_matches_alce_on_random_monotone_support() -> None:
    rng = random.Random(7)
    for _ in range(200):
        cited = sorted(rng.sample(range(1, 7), rng.randint(1, 4)))
        minimal = [set(rng.sample(cited, rng.randint(1, len(cited)))) for _ in range(rng.randint(0, 2))]

        def supports(numbers: set[int], minimal=minimal) -> bool:  # type: ignore[no-untyped-def]
            return any(m <= numbers for m in minimal)

        text = "Утверждение о предмете статьи" + "".join(f"[{n}]" for n in cited) + "."
        oracle = {
            (0, n): Verdict(supported=supports(set(n)))
            for k in range(1, len(cited) + 1)
            for n in itertools.combinations(cited, k)
        }
        scored, _ = score_text(text, set(cited), collect(text, set(cited), oracle))
        expected = _alce_precision(cited, supports)
        assert scored[0].precise == expected
        assert scored[0].status == ("supported" if supports(set(cited)) else "unsupported")
