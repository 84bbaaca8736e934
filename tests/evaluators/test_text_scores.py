"""One record recipe for a generated text vs its reference: the parts it is made of, and zeros when empty."""

import pytest

from ruwikibench.evaluators.lexical import lexical_scores
from ruwikibench.evaluators.similarity import sentence_prf
from ruwikibench.evaluators.text_scores import AUTHORS_KEYS, HEADLINE, text_scores
from tests.evaluators.test_outline import TableEmbedder
from tests.evaluators.test_similarity import HashEmbedder


def test_text_scores_are_sentence_prf_plus_lexical_and_zero_when_empty() -> None:
    embedder = HashEmbedder()
    text, reference = "Москва — столица России. Город большой.", "Москва является столицей России."
    scores = text_scores(text, reference, embedder, tokenize="intl", lemmatize=True)  # type: ignore[arg-type]
    expected = sentence_prf(text, reference, embedder) | lexical_scores(  # type: ignore[arg-type]
        text, reference, tokenize="intl", lemmatize=True
    )
    assert scores == expected and set(HEADLINE) <= set(scores) and "rouge_l_lemma" in scores
    assert 0 < scores["f1"] < 1 and 0 < scores["rouge_l"] < 1
    assert text_scores("  \n", reference, embedder) == dict.fromkeys(HEADLINE, 0.0)  # type: ignore[arg-type]


def test_authors_prompt_adds_the_authors_sentence_prf_hand_computed() -> None:
    """Every sentence encoded as "Classification" + sentence ('plain' use) for p/r/f1_authors; p/r/f1
    unchanged."""
    table = {
        "Кот спит.": [1.0, 0.0],
        "Пёс лает.": [0.0, 1.0],
        "ClassificationКот спит.": [1.0, 0.0],
        "ClassificationПёс лает.": [3.0, 4.0],
    }
    embedder = TableEmbedder(table)
    text, reference = "Кот спит. Пёс лает.", "Кот спит."
    plain = text_scores(text, reference, embedder)  # type: ignore[arg-type]
    assert not set(AUTHORS_KEYS) & set(plain)
    embedder.seen.clear()
    scores = text_scores(text, reference, embedder, authors_prompt="Classification")  # type: ignore[arg-type]
    assert [t for use, t in embedder.seen if use == "plain"] == [
        "ClassificationКот спит.",
        "ClassificationПёс лает.",
        "ClassificationКот спит.",
    ]
    # plain: P = (1 + 0) / 2, R = 1 ; authors: cos(CП, CК) = 0.6 -> P = (1 + 0.6) / 2 = 0.8, R = 1
    assert (scores["p"], scores["r"]) == (plain["p"], plain["r"]) == (0.5, 1.0)
    assert (scores["p_authors"], scores["r_authors"]) == pytest.approx((0.8, 1.0))
    assert scores["f1_authors"] == pytest.approx(2 * 0.8 / 1.8)
    empty = text_scores("", reference, embedder, authors_prompt="Classification")  # type: ignore[arg-type]
    assert empty == dict.fromkeys(HEADLINE + AUTHORS_KEYS, 0.0)
