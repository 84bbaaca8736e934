"""A generated text against its reference text: sentence-embedding P/R/F1, ROUGE-L and BLEU in one record.

Used for Stage 3 sections and for the writer's sections. An empty generated text scores 0 on every headline
metric: failing to write is scored, not excluded.
"""

from __future__ import annotations

from ruwikibench.evaluators.lexical import lexical_scores
from ruwikibench.evaluators.similarity import sentence_prf
from ruwikibench.models.embeddings import Embedder

HEADLINE = ("p", "r", "f1", "rouge_l", "bleu")


def text_scores(text: str, reference: str, embedder: Embedder, *, tokenize: str = "intl",
                lemmatize: bool = False) -> dict[str, float]:
    """``sentence_prf`` + ``lexical_scores`` of ``text`` vs ``reference``; zeros on :data:`HEADLINE` when empty."""
    if not text.strip():
        return dict.fromkeys(HEADLINE, 0.0)
    metrics = sentence_prf(text, reference, embedder)
    metrics.update(lexical_scores(text, reference, tokenize=tokenize, lemmatize=lemmatize))
    return metrics
