"""Content-free and very short section texts: a text with no word scores as an empty one, and a text shorter
than a quarter of its reference keeps only the share of its recalls that its length allows."""

from __future__ import annotations

import pytest

from ruwikibench.evaluators.coverage import MIN_SHARE, coverage, covered, has_content, words
from ruwikibench.evaluators.similarity import sentence_prf
from ruwikibench.evaluators.text_scores import HEADLINE, section_scores, text_scores
from tests.evaluators.test_similarity import HashEmbedder

REFERENCE = (
    "Москва — столица России и крупнейший город страны. Город стоит на реке Москве. "
    "В Москве работают Государственная дума и правительство. Население города превышает двенадцать миллионов."
)


def test_words_count_tokens_with_a_letter_or_digit() -> None:
    assert words("Москва — столица, 2024 г.") == 4
    assert words(". — …") == 0 and not has_content(". — …") and has_content("Москва.")


def test_coverage_is_the_length_over_a_quarter_of_the_reference() -> None:
    reference = " ".join(["слово"] * 100) + "."
    assert MIN_SHARE == 0.25
    assert coverage("Москва.", reference) == pytest.approx(1 / 25)
    assert coverage(" ".join(["слово"] * 25), reference) == 1.0  # a quarter is enough
    assert coverage(" ".join(["слово"] * 200), reference) == 1.0
    assert coverage("Москва.", "Москва.") == 1.0


def test_covered_scales_each_recall_and_recomputes_its_f1() -> None:
    metrics = {"p": 0.8, "r": 0.6, "f1": 0.7, "rouge_l": 0.1, "entity_recall": 0.5, "entity_f1": 0.5}
    half = covered(metrics, 0.5)
    assert half["r"] == pytest.approx(0.3) and half["f1"] == pytest.approx(2 * 0.8 * 0.3 / 1.1)
    assert half["p"] == 0.8 and half["rouge_l"] == 0.1  # precision and lexical scores untouched
    assert half["entity_recall"] == 0.25 and half["entity_f1"] == 0.0  # no entity precision: nothing named
    assert covered(metrics, 1.0) == metrics


def test_a_text_with_no_word_scores_as_an_empty_one() -> None:
    """'.' used to be embedded and score at the embedder's chance level (F1 80 with e5-int8)."""
    embedder = HashEmbedder()
    for text in (".", " — ", "…!", ""):
        assert text_scores(text, REFERENCE, embedder) == dict.fromkeys(HEADLINE, 0.0)  # type: ignore[arg-type]
        scores = section_scores(text, REFERENCE, embedder)  # type: ignore[arg-type]
        assert scores["entity_recall"] == 0.0 and "entity_precision" not in scores
    assert sentence_prf(".", REFERENCE, embedder) == {"p": 0.0, "r": 0.0, "f1": 0.0}  # type: ignore[arg-type]


def test_a_sentence_with_no_word_is_not_scored() -> None:
    embedder = HashEmbedder()
    with_dots = sentence_prf("Москва — столица России. . — .", REFERENCE, embedder)  # type: ignore[arg-type]
    assert with_dots == sentence_prf("Москва — столица России.", REFERENCE, embedder)  # type: ignore[arg-type]
    assert "." not in embedder.seen and "—" not in embedder.seen


def test_one_word_keeps_the_share_of_recall_its_length_allows() -> None:
    """One on-topic word against a 4-sentence reference: the whole of its sentence recall and entity recall
    used to count (entity recall 1/|R| for naming «Москва»); now 1 / (0.25 · 34 words) of it."""
    embedder = HashEmbedder()
    share = 1 / (MIN_SHARE * words(REFERENCE))
    raw = sentence_prf("Москва.", REFERENCE, embedder)  # type: ignore[arg-type]
    scores = section_scores("Москва.", REFERENCE, embedder)  # type: ignore[arg-type]
    assert scores["p"] == raw["p"] and scores["r"] == pytest.approx(raw["r"] * share)
    assert scores["f1"] < raw["f1"] * share * 2
    named = scores["entity_precision"]
    assert named == 1.0 and scores["entity_recall"] < share  # «москва» is 1 of the reference's entities


def test_a_text_a_quarter_as_long_as_its_reference_keeps_all_of_its_recall() -> None:
    embedder = HashEmbedder()
    text = "Москва — столица России, город на реке Москве."
    assert coverage(text, REFERENCE) == 1.0
    plain = sentence_prf(text, REFERENCE, embedder)  # type: ignore[arg-type]
    scores = text_scores(text, REFERENCE, embedder)  # type: ignore[arg-type]
    assert {k: scores[k] for k in plain} == plain
