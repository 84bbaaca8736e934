"""One record recipe for a generated text vs its reference: the parts it is made of, and zeros when empty."""

from ruwikibench.evaluators.lexical import lexical_scores
from ruwikibench.evaluators.similarity import sentence_prf
from ruwikibench.evaluators.text_scores import HEADLINE, text_scores
from tests.evaluators.test_similarity import HashEmbedder


def test_text_scores_are_sentence_prf_plus_lexical_and_zero_when_empty() -> None:
    embedder = HashEmbedder()
    text, reference = "Москва — столица России. Город большой.", "Москва является столицей России."
    scores = text_scores(text, reference, embedder, tokenize="intl", lemmatize=True)  # type: ignore[arg-type]
    expected = sentence_prf(text, reference, embedder) | lexical_scores(  # type: ignore[arg-type]
        text, reference, tokenize="intl", lemmatize=True)
    assert scores == expected and set(HEADLINE) <= set(scores) and "rouge_l_lemma" in scores
    assert 0 < scores["f1"] < 1 and 0 < scores["rouge_l"] < 1
    assert text_scores("  \n", reference, embedder) == dict.fromkeys(HEADLINE, 0.0)  # type: ignore[arg-type]
