"""A generated text against its reference text: sentence-embedding P/R/F1, ROUGE-L and BLEU in one record.

Used for Stage 3 sections and for the writer's sections. An empty generated text — or one with no word at
all (``"."``: :func:`~ruwikibench.evaluators.coverage.has_content`) — scores 0 on every headline metric:
failing to write is scored, not excluded. A text shorter than a quarter of its reference has its recalls
scaled by its coverage (:mod:`ruwikibench.evaluators.coverage`). With ``authors_prompt`` the sentence P/R/F1
is also reported as the authors computed it, every sentence encoded as ``prompt + sentence``: ``p_authors`` /
``r_authors`` / ``f1_authors``.
"""

from __future__ import annotations

from ruwikibench.evaluators.coverage import coverage, covered, has_content
from ruwikibench.evaluators.lexical import lexical_scores
from ruwikibench.evaluators.similarity import sentence_prf
from ruwikibench.models.embeddings import Embedder

HEADLINE = ("p", "r", "f1", "rouge_l", "bleu")
AUTHORS_KEYS = ("p_authors", "r_authors", "f1_authors")


def text_scores(
    text: str,
    reference: str,
    embedder: Embedder,
    *,
    tokenize: str = "intl",
    lemmatize: bool = False,
    authors_prompt: str | None = None,
) -> dict[str, float]:
    """``sentence_prf`` + ``lexical_scores`` of ``text`` vs ``reference`` (+ the authors' sentence P/R/F1 when
    ``authors_prompt`` is given), recalls scaled by the text's coverage; zeros on :data:`HEADLINE` (and
    :data:`AUTHORS_KEYS`) when the text has no word."""
    if not has_content(text):
        return dict.fromkeys(HEADLINE + (AUTHORS_KEYS if authors_prompt is not None else ()), 0.0)
    metrics = sentence_prf(text, reference, embedder)
    if authors_prompt is not None:
        authors = sentence_prf(text, reference, embedder, authors_prompt)
        metrics.update({f"{key}_authors": value for key, value in authors.items()})
    metrics.update(lexical_scores(text, reference, tokenize=tokenize, lemmatize=lemmatize))
    return covered(metrics, coverage(text, reference))


def section_scores(
    text: str,
    reference: str,
    embedder: Embedder,
    *,
    tokenize: str = "intl",
    lemmatize: bool = False,
    authors_prompt: str | None = None,
) -> dict[str, float]:
    """:func:`text_scores` + the entity R/P/F1 (absent when the reference names no entity), every recall
    scaled by the text's coverage: the record metrics of a section, in the sections stage and the writer."""
    from ruwikibench.evaluators.entities import entity_scores

    metrics = text_scores(
        text, reference, embedder, tokenize=tokenize, lemmatize=lemmatize, authors_prompt=authors_prompt
    )
    entities = entity_scores(text, reference) if has_content(text) else entity_scores("", reference)
    metrics.update(covered(entities, coverage(text, reference)))
    return metrics
