import math

import pytest

from ruwikibench.models.fake import yes_no_completion
from ruwikibench.models.types import Completion, TokenLogprob, TopLogprob
from ruwikibench.models.yesno import classify_token, parse_answer_text, score_yes_no


def completion(tokens: list[tuple[str, dict[str, float]]], text: str | None = None) -> Completion:
    """Tokens as (generated token, {alternative: probability}); the generated token's own probability is
    taken from the alternatives when listed there."""
    items = []
    for token, alternatives in tokens:
        top = [TopLogprob(token=t, logprob=math.log(p)) for t, p in alternatives.items()]
        own = alternatives.get(token, 0.5)
        items.append(TokenLogprob(token=token, logprob=math.log(own), top=top))
    joined = "".join(t for t, _ in tokens)
    return Completion(text=joined if text is None else text, raw_text=joined, logprobs=items)


@pytest.mark.parametrize(
    "token,expected",
    [
        ("Да", "yes"),
        ("да", "yes"),
        ("ДА", "yes"),
        (" Да", "yes"),
        ("▁Да", "yes"),
        ("ĠYes", "yes"),
        ("YES", "yes"),
        ("**Да**", "yes"),
        ('"Да"', "yes"),
        ("«Да»", "yes"),
        ("Да,", "yes"),
        ("Yes.", "yes"),
        ("Нет", "no"),
        (" нет", "no"),
        ("NO", "no"),
        ("▁No", "no"),
        ("**Нет**", "no"),
        ("Нет.", "no"),
        ("Дан", None),
        ("Не", None),
        ("Document", None),
        ("", None),
        ("**", None),
    ],
)
def test_classify_token_variants(token: str, expected: str | None) -> None:
    assert classify_token(token) == expected


def test_prefixes_only_when_asked() -> None:
    assert classify_token("Д") is None
    assert classify_token("Д", prefixes=True) == "yes"
    assert classify_token("Н", prefixes=True) == "no"
    assert classify_token("Ye", prefixes=True) == "yes"
    assert classify_token("N", prefixes=True) == "no"
    assert classify_token("Дом", prefixes=True) is None


def test_paper_score_for_yes_sums_variants() -> None:
    result = score_yes_no(completion([("Да", {"Да": 0.5, " Да": 0.1, "YES": 0.05, "Нет": 0.3, "Хм": 0.05})]))
    assert result.source == "logprobs" and result.answer == "yes"
    assert result.p_yes == pytest.approx(0.65)
    assert result.p_no == pytest.approx(0.3)
    assert result.score == pytest.approx(0.65)
    assert result.p_yes_norm == pytest.approx(0.65 / 0.95)


def test_paper_score_for_no_is_one_minus_p_no() -> None:
    result = score_yes_no(completion([(" Нет", {" Нет": 0.7, "нет": 0.1, "Да": 0.15})]))
    assert result.answer == "no"
    assert result.score == pytest.approx(1 - 0.8)
    assert result.p_yes_norm == pytest.approx(0.15 / 0.95)


def test_generated_token_missing_from_top_list_still_counts() -> None:
    token = TokenLogprob(
        token="Да", logprob=math.log(0.4), top=[TopLogprob(token="Нет", logprob=math.log(0.5))]
    )
    result = score_yes_no(Completion(text="Да", logprobs=[token]))
    assert result.score == pytest.approx(0.4)
    assert result.p_no == pytest.approx(0.5)


def test_markdown_and_reasoning_are_skipped() -> None:
    tokens = [
        ("<think>", {"<think>": 0.9}),
        ("Сниппет про", {"Сниппет про": 0.9}),
        ("</think>", {"</think>": 0.9}),
        ("\n\n", {"\n\n": 0.9}),
        ("**", {"**": 0.8, "Да": 0.1}),
        ("Да", {"Да": 0.6, "Нет": 0.3}),
        ("**", {"**": 0.9}),
    ]
    result = score_yes_no(completion(tokens, text="**Да**"))
    assert result.source == "logprobs" and result.position == 5
    assert result.score == pytest.approx(0.6)


def test_answer_label_is_skipped() -> None:
    result = score_yes_no(completion([("Ответ", {"Ответ": 0.9}), (":", {":": 0.9}), (" Нет", {" Нет": 0.9})]))
    assert result.answer == "no" and result.position == 2
    assert result.score == pytest.approx(0.1)


def test_split_answer_word_uses_prefix_alternatives() -> None:
    result = score_yes_no(completion([("Д", {"Д": 0.7, "Н": 0.2, "X": 0.1}), ("а", {"а": 0.99})]))
    assert result.answer == "yes" and result.source == "logprobs"
    assert result.score == pytest.approx(0.7)
    assert result.p_no == pytest.approx(0.2)


def test_split_word_that_is_not_an_answer_is_unparseable() -> None:
    result = score_yes_no(completion([("Да", {"Да": 0.4}), ("нные", {"нные": 0.9})]))
    assert result.source == "unparseable" and result.score is None and result.answer is None


def test_trailing_punctuation_in_text_and_tokens() -> None:
    result = score_yes_no(completion([("Да", {"Да": 0.8, "Нет": 0.1}), (",", {",": 0.9}), (" потому", {})]))
    assert result.score == pytest.approx(0.8)
    assert parse_answer_text("Да, потому что") == "yes"
    assert parse_answer_text("«Нет».") == "no"


def test_text_fallback_is_marked() -> None:
    for text, score in [("Да", 1.0), ("**YES**", 1.0), ("Нет, не относится", 0.0), ("Ответ: да", 1.0)]:
        result = score_yes_no(Completion(text=text))
        assert result.source == "text" and result.score == score, text


def test_unparseable_is_never_guessed() -> None:
    for text in ["Возможно", "", "<think>долго", "Документ описывает Python"]:
        result = score_yes_no(Completion(text=text))
        assert result.source == "unparseable" and result.score is None and result.answer is None, text
    # With logprobs: the first answer token is neither yes nor no.
    result = score_yes_no(completion([("Возможно", {"Возможно": 0.6, "Да": 0.3, "Нет": 0.1})]))
    assert result.source == "unparseable" and result.score is None


def test_unclosed_reasoning_has_no_answer() -> None:
    result = score_yes_no(completion([("<think>", {}), ("Да", {"Да": 0.9})], text=""))
    assert result.source == "unparseable"


def test_fake_yes_no_completion_round_trip() -> None:
    assert score_yes_no(yes_no_completion(0.9)).score == pytest.approx(0.9)
    low = score_yes_no(yes_no_completion(0.2))
    assert low.answer == "no" and low.score == pytest.approx(0.2)
    assert low.p_yes_norm == pytest.approx(0.2)
