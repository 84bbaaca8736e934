import math
from collections import Counter

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from ruwikibench.evaluators.lexical import (
    RussianTokenizer,
    corpus_bleu,
    lexical_scores,
    rouge_l,
    sentence_bleu,
)

TEXT = "Кошка сидит на тёплом окне. В Москве в 2024 году прошёл дождь — «сильный», по словам синоптиков."


def test_text_against_itself_gives_rouge_1_and_bleu_100() -> None:
    scores = lexical_scores(TEXT, TEXT, lemmatize=True)
    assert scores["rouge_l"] == pytest.approx(1.0)
    assert scores["rouge_l_lemma"] == pytest.approx(1.0)
    assert scores["bleu"] == pytest.approx(1.0)  # the record metric is BLEU / 100 (runner tables print ×100)
    assert sentence_bleu(TEXT, TEXT) == pytest.approx(100.0)
    assert corpus_bleu([TEXT, "Да."], [TEXT, "Да."]) == pytest.approx(100.0)


def test_rouge_l_equals_hand_computed_lcs() -> None:
    reference = "Кошка сидит на тёплом окне."
    generated = "На окне сидит рыжая кошка!"
    # tokens (lowercased, punctuation dropped):
    #   ref: кошка сидит на тёплом окне      (5)
    #   gen: на окне сидит рыжая кошка       (5)
    # the longest common subsequence is "на окне" (2): P = R = 2/5, F = 0.4
    assert RussianTokenizer().tokenize(reference) == ["кошка", "сидит", "на", "тёплом", "окне"]
    score = rouge_l(generated, reference)
    assert score["p"] == pytest.approx(2 / 5) and score["r"] == pytest.approx(2 / 5)
    assert score["f"] == pytest.approx(0.4)
    # unequal lengths: gen "кошка на окне" (3) vs ref (5): LCS "кошка на окне" = 3 -> P = 1, R = 3/5, F = 0.75
    score = rouge_l("Кошка на окне", reference)
    assert (score["p"], score["r"], score["f"]) == pytest.approx((1.0, 0.6, 0.75))


def test_default_rouge_score_tokenizer_zeroes_russian_ours_does_not() -> None:
    text = "Кошка сидит на тёплом окне. Дождь был «сильный», по словам синоптиков."
    default = rouge_scorer.RougeScorer(["rougeL"])
    # the trap: [a-z0-9] only, every Cyrillic word deleted -> 0 even for a text against itself
    assert default.score(text, text)["rougeL"].fmeasure == 0.0
    assert (
        default.score("Кошка сидит на тёплом окне.", "На окне сидит рыжая кошка!")["rougeL"].fmeasure == 0.0
    )
    assert rouge_l(text, text)["f"] == pytest.approx(1.0)
    assert rouge_l("На окне сидит рыжая кошка!", "Кошка сидит на тёплом окне.")["f"] == pytest.approx(0.4)


def test_lemmatised_rouge_matches_word_forms() -> None:
    plain = rouge_l("Кошки сидели на окнах", "Кошка сидит на окне")
    lemma = rouge_l("Кошки сидели на окнах", "Кошка сидит на окне", lemmatize=True)
    assert plain["f"] == pytest.approx(0.25)  # only "на" in common
    assert lemma["f"] == pytest.approx(1.0)


def _hand_corpus_bleu(hyps: list[str], refs: list[str]) -> float:
    """BLEU-4 by the definition (clipped n-gram precisions pooled over the corpus, brevity penalty)."""
    matches, totals = [0] * 4, [0] * 4
    hyp_len = ref_len = 0
    for hyp, ref in zip(hyps, refs):
        h, r = hyp.split(), ref.split()
        hyp_len, ref_len = hyp_len + len(h), ref_len + len(r)
        for n in range(1, 5):
            hc = Counter(tuple(h[i : i + n]) for i in range(len(h) - n + 1))
            rc = Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1))
            matches[n - 1] += sum(min(c, rc[g]) for g, c in hc.items())
            totals[n - 1] += max(len(h) - n + 1, 0)
    log_p = sum(math.log(m / t) for m, t in zip(matches, totals)) / 4
    bp = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    return 100 * bp * math.exp(log_p)


def test_bleu_equals_sacrebleu_corpus_score_and_hand_computed() -> None:
    hyps = ["в городе москве живёт много людей и машин", "летом в парке гуляют дети и взрослые"]
    refs = ["в городе москве живёт много людей", "летом в городском парке гуляют дети и их родители"]
    ours = corpus_bleu(hyps, refs)
    assert ours == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs], tokenize="intl").score)
    assert ours == pytest.approx(_hand_corpus_bleu(hyps, refs), abs=1e-9)
    assert 0 < ours < 100


def test_sentence_bleu_is_sacrebleu_sentence_score_with_the_stated_tokenizer() -> None:
    hyp, ref = "Это «Москва» — столица.", "Это Москва, столица."
    for tokenize in ("intl", "13a"):
        expected = sacrebleu.sentence_bleu(hyp, [ref], tokenize=tokenize).score
        assert sentence_bleu(hyp, ref, tokenize=tokenize) == pytest.approx(expected)
    # the two tokenizers really differ on Russian quotes (intl splits «», 13a keeps «Москва» one token)
    assert sentence_bleu(hyp, ref, tokenize="intl") != pytest.approx(sentence_bleu(hyp, ref, tokenize="13a"))
    assert sentence_bleu(ref, ref) == pytest.approx(100.0)


def test_corpus_bleu_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match="2 generated texts but 1 references"):
        corpus_bleu(["а", "б"], ["а"])


def test_lcs_length_equals_rouge_scores_table() -> None:
    import random

    from rouge_score.rouge_scorer import _lcs_table

    from ruwikibench.evaluators.lexical import lcs_length

    rng = random.Random(7)
    for _ in range(300):
        vocabulary = [f"w{i}" for i in range(rng.randint(1, 12))]  # small vocabularies: many repeats
        ref = [rng.choice(vocabulary) for _ in range(rng.randint(0, 90))]
        gen = [rng.choice(vocabulary) for _ in range(rng.randint(0, 90))]
        expected = _lcs_table(ref, gen)[-1][-1] if ref and gen else 0
        assert lcs_length(ref, gen) == expected


@pytest.mark.parametrize("lemmatize", [False, True])
def test_rouge_l_gives_rouge_scores_numbers(lemmatize: bool) -> None:
    import random

    words = TEXT.split() + ["Петербург", "окна", "окно", "и", "в", "—", "2024"]
    rng = random.Random(3)
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=RussianTokenizer(lemmatize))
    pairs = [
        (
            " ".join(rng.choices(words, k=rng.randint(0, 60))),
            " ".join(rng.choices(words, k=rng.randint(0, 60))),
        )
        for _ in range(60)
    ] + [("", TEXT), (TEXT, ""), ("— «»", TEXT)]
    for generated, reference in pairs:
        theirs = scorer.score(reference, generated)["rougeL"]
        ours = rouge_l(generated, reference, lemmatize=lemmatize)
        assert (ours["p"], ours["r"], ours["f"]) == (theirs.precision, theirs.recall, theirs.fmeasure)
