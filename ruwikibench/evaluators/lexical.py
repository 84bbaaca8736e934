"""Lexical overlap of a generated text with its reference: ROUGE-L that keeps Cyrillic, and BLEU via
sacrebleu.

ROUGE-L is rouge-score's LCS F-measure (``rougeL``, the whole text as one sequence) with our tokenizer:
razdel word tokens, lowercased, punctuation dropped, optionally pymorphy3 lemmas. rouge-score's default
tokenizer keeps only ``[a-z0-9]`` and scores every Russian pair 0. The LCS is computed here
(:func:`lcs_length`, the same length rouge-score's table gives, tested against it), not by rouge-score: its
pure-Python table was a third of a section's scoring time, and its import pulls in nltk (seconds of CPU).

BLEU is sacrebleu's (0–100 from ``sentence_bleu``/``corpus_bleu``; 0–1 in :func:`lexical_scores`, the record
metric, because the runner prints every metric ×100) with the ``intl`` tokenizer by default (splits Unicode
punctuation such as «» and —, which ``13a`` leaves glued to Russian words); sentence BLEU uses sacrebleu's
defaults for single segments (``exp`` smoothing, effective order), corpus BLEU pools n-gram counts over all
segments.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _morph() -> Any:
    import pymorphy3

    return pymorphy3.MorphAnalyzer()


@lru_cache(maxsize=200_000)
def lemma(word: str) -> str:
    """The pymorphy3 normal form of a lowercase word (non-Cyrillic words are returned unchanged)."""
    if not any("а" <= ch <= "я" or ch == "ё" for ch in word):
        return word
    return str(_morph().parse(word)[0].normal_form)


class RussianTokenizer:
    """rouge-score tokenizer: razdel word tokens with a letter or digit, lowercased, optionally lemmatised."""

    def __init__(self, lemmatize: bool = False) -> None:
        self.lemmatize = lemmatize

    def tokenize(self, text: str) -> list[str]:
        return list(_tokens(text or "", self.lemmatize))


@lru_cache(maxsize=1024)  # ~30 kB of token strings per section text
def _tokens(text: str, lemmatize: bool) -> tuple[str, ...]:
    """The tokens of a text, kept per text: a reference is tokenized once for its item and all its
    baselines."""
    # not at the top: the stage modules import this module before a run's first request
    from razdel import tokenize as razdel_tokenize

    words = [t.text.lower() for t in razdel_tokenize(text)]
    words = [w for w in words if any(ch.isalnum() for ch in w)]
    return tuple(lemma(w) for w in words) if lemmatize else tuple(words)


def lcs_length(reference: Sequence[str], generated: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists: what rouge-score's ``_lcs_table`` leaves
    in its last cell, computed bit-parallel (Hyyrö 2004: one bit per reference token, a few integer operations
    per generated token) instead of filling the whole table in Python (~15 ms for two 500-word sections)."""
    masks: dict[str, int] = {}
    for position, token in enumerate(reference):
        masks[token] = masks.get(token, 0) | (1 << position)
    full = (1 << len(reference)) - 1
    row = full
    for token in generated:
        matched = row & masks.get(token, 0)
        row = ((row + matched) | (row - matched)) & full
    return len(reference) - row.bit_count()


def rouge_l(generated: str, reference: str, *, lemmatize: bool = False) -> dict[str, float]:
    """ROUGE-L precision / recall / F-measure (0–1) of ``generated`` against ``reference``: rouge-score's
    ``rougeL`` (``RougeScorer(["rougeL"], tokenizer=RussianTokenizer(lemmatize)).score(reference,
    generated)``, the same numbers, tested) with :func:`lcs_length`."""
    target, prediction = _tokens(reference or "", lemmatize), _tokens(generated or "", lemmatize)
    if not target or not prediction:
        return {"p": 0.0, "r": 0.0, "f": 0.0}
    common = lcs_length(target, prediction)
    precision, recall = common / len(prediction), common / len(target)
    fmeasure = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return {"p": float(precision), "r": float(recall), "f": float(fmeasure)}


def sentence_bleu(
    generated: str, reference: str, *, tokenize: str = "intl", lowercase: bool = False
) -> float:
    """sacrebleu sentence BLEU (0–100) of one generated text against one reference."""
    import sacrebleu

    bleu = sacrebleu.BLEU(tokenize=tokenize, lowercase=lowercase, effective_order=True)
    return float(bleu.sentence_score(generated, [reference]).score)


def corpus_bleu(
    generated: Sequence[str], references: Sequence[str], *, tokenize: str = "intl", lowercase: bool = False
) -> float:
    """sacrebleu corpus BLEU (0–100): n-gram counts pooled over all (generated, reference) pairs."""
    if len(generated) != len(references):
        raise ValueError(f"corpus_bleu: {len(generated)} generated texts but {len(references)} references")
    import sacrebleu

    bleu = sacrebleu.BLEU(tokenize=tokenize, lowercase=lowercase)
    return float(bleu.corpus_score(list(generated), [list(references)]).score)


def lexical_scores(
    generated: str, reference: str, *, tokenize: str = "intl", lemmatize: bool = False
) -> dict[str, float]:
    """Per-section record metrics, all on 0–1 like every metric the runner reports (its tables print ×100):
    ROUGE-L F (``rouge_l``), its P and R, sentence BLEU / 100 (``bleu``), ``rouge_l_lemma`` when asked."""
    rouge = rouge_l(generated, reference)
    scores = {
        "rouge_l": rouge["f"],
        "rouge_l_p": rouge["p"],
        "rouge_l_r": rouge["r"],
        "bleu": sentence_bleu(generated, reference, tokenize=tokenize) / 100.0,
    }
    if lemmatize:
        scores["rouge_l_lemma"] = rouge_l(generated, reference, lemmatize=True)["f"]
    return scores
