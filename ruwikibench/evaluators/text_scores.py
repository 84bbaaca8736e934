"""A generated text against its reference text: sentence-embedding P/R/F1, ROUGE-L and BLEU in one record.

Used for Stage 3 sections and for the writer's sections. An empty generated text scores 0 on every headline
metric: failing to write is scored, not excluded. With ``authors_prompt`` the sentence P/R/F1 is also reported
as the authors computed it, every sentence encoded as ``prompt + sentence``: ``p_authors`` / ``r_authors`` /
``f1_authors``.
"""

from __future__ import annotations

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
    ``authors_prompt`` is given); zeros on :data:`HEADLINE` (and :data:`AUTHORS_KEYS`) when empty."""
    if not text.strip():
        return dict.fromkeys(HEADLINE + (AUTHORS_KEYS if authors_prompt is not None else ()), 0.0)
    metrics = sentence_prf(text, reference, embedder)
    if authors_prompt is not None:
        authors = sentence_prf(text, reference, embedder, authors_prompt)
        metrics.update({f"{key}_authors": value for key, value in authors.items()})
    metrics.update(lexical_scores(text, reference, tokenize=tokenize, lemmatize=lemmatize))
    return metrics
