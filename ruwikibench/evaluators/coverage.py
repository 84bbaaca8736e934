"""How much of its reference a generated text is long enough to cover: the length-aware recall of a section.

The sentence-embedding recall (mean over reference sentences of the best cosine to a generated sentence) does
not look at how much was written: one generated sentence is the best match of every reference sentence, so a
section of one on-topic word («Python.») gets recall at the embedder's chance level or above it (rescaled F1
+16 on the sample's sections with e5-int8, above a real section of the wrong article at −4). A text with too
little content cannot cover its reference, so every recall of a section — the embedding ``r`` (and
``r_authors``) and ``entity_recall`` — is multiplied by its **coverage**::

    coverage = min(1, words(generated) / (MIN_SHARE · words(reference)))

(words: razdel word tokens with a letter or digit, as ROUGE-L counts them), and each F1 is recomputed from its
precision and the covered recall. A text at least a quarter as long as its reference (:data:`MIN_SHARE`) keeps
all of its recall — summaries are shorter than what they summarize — and below that it keeps the share its
length allows: one word against a 100-word reference keeps 4 %. Precision is not touched: a short text may say
little, and what it says may still be right.

A text with no word at all (``"."``, ``"—"``) is content-free: :func:`has_content` is False, and it scores as
an empty text (0 on every metric, no floor), whatever the embedder makes of the punctuation.

The coverage reads two lengths, not a similarity: it has no chance level, so the permutation floor (the
stage's ``cross_score``) measures the similarity alone, and a short text is rescaled against the floor of
real text — it lands between the empty output (−floor / (1 − floor)) and chance.
"""

from __future__ import annotations

from collections.abc import Mapping

MIN_SHARE = 0.25
"""A generated text this share of its reference's words long (or longer) keeps all of its recall."""

RECALLS = (("r", "p", "f1"), ("r_authors", "p_authors", "f1_authors"))
"""(recall, precision, F1) keys of the sentence-embedding metrics that coverage applies to."""

ENTITY_RECALLS = (("entity_recall", "entity_precision", "entity_f1"),)
"""The same for the entity metrics."""


def words(text: str) -> int:
    """The number of word tokens of ``text`` (razdel tokens with a letter or digit)."""
    from ruwikibench.evaluators.lexical import RussianTokenizer

    return len(RussianTokenizer().tokenize(text))


def has_content(text: str) -> bool:
    """True when ``text`` has at least one letter or digit (a word to score)."""
    return any(ch.isalnum() for ch in text)


def coverage(generated: str, reference: str) -> float:
    """min(1, words(generated) / (:data:`MIN_SHARE` · words(reference))); 1 when the reference has no word."""
    needed = MIN_SHARE * words(reference)
    if needed <= 0:
        return 1.0
    return min(1.0, words(generated) / needed)


def harmonic(precision: float, recall: float) -> float:
    return 0.0 if precision + recall <= 0 else 2 * precision * recall / (precision + recall)


def covered(
    metrics: Mapping[str, float],
    share: float,
    keys: tuple[tuple[str, str, str], ...] = RECALLS + ENTITY_RECALLS,
) -> dict[str, float]:
    """``metrics`` with each recall of ``keys`` present multiplied by ``share`` and its F1 recomputed from the
    precision and that recall (0 when there is no precision: nothing generated to match); unchanged when
    ``share`` is 1."""
    result = dict(metrics)
    if share >= 1.0:
        return result
    for recall, precision, f1 in keys:
        if recall not in result:
            continue
        result[recall] = result[recall] * share
        result[f1] = harmonic(result[precision], result[recall]) if precision in result else 0.0
    return result
