"""Ranking metrics of stage 1 (paper section 4.1): NDCG (whole pool and @K), R-Precision, pool recall, and
recall at R over all the article's snippets.

All functions take binary relevance labels in ranked order (1 = the snippet belongs to the article's sources).
The ideal ranking is the same pool sorted (as the paper and the authors' code define it), so NDCG measures the
ordering of what BM25 retrieved and R-Precision counts R within the pool: both are normalised inside the pool
and cannot compare runs whose pools differ (query modes). Pool recall measures what BM25 missed; recall at R
(:func:`recall_at_r`) divides by the article's full relevant set, so it compares across pools.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def dcg(relevances: Sequence[float], k: int | None = None) -> float:
    """Σ rel_i / log2(i + 1) over the first k positions (i from 1)."""
    import numpy as np

    gains = np.asarray(relevances[:k] if k is not None else relevances, dtype=float)
    if gains.size == 0:
        return 0.0
    return float((gains / np.log2(np.arange(2, gains.size + 2))).sum())


def ndcg(relevances: Sequence[float], k: int | None = None) -> float:
    """DCG@k / IDCG@k with the ideal = the same labels sorted; 0.0 when the pool holds nothing relevant."""
    ideal = dcg(sorted(relevances, reverse=True), k)
    return dcg(relevances, k) / ideal if ideal > 0 else 0.0


def r_precision(relevances: Sequence[int], r: int | None = None) -> float:
    """Precision at R; R defaults to the number of relevant snippets in the pool (the authors' definition,
    so a perfect reranker scores 1.0); 0.0 when R is 0."""
    r = int(sum(relevances)) if r is None else r
    if r <= 0:
        return 0.0
    return float(sum(relevances[:r])) / r


def pool_recall(found: int, total: int) -> float:
    """Share of the article's snippets that BM25 put in the pool."""
    return found / total if total > 0 else 0.0


def recall_at_r(relevances: Sequence[int], relevant_total: int) -> float:
    """Relevant snippets among the first R of the order / R, R = all the article's snippets
    (``relevant_total``, from the dataset, not the pool): a pool that misses relevant snippets cannot reach
    1.0, whatever its order; 0.0 when the article has none."""
    if relevant_total <= 0:
        return 0.0
    return float(sum(relevances[:relevant_total])) / relevant_total


def ranking_metrics(
    bm25_labels: Sequence[int],
    rerank_labels: Sequence[int] | None,
    relevant_total: int,
    ks: Iterable[int] = (10,),
) -> dict[str, float]:
    """Per-article metrics for the BM25 order and (if given) the reranked order of one pool."""
    if rerank_labels is not None and sorted(rerank_labels) != sorted(bm25_labels):
        raise ValueError("the reranked list must be a permutation of the BM25 pool")
    metrics: dict[str, float] = {"pool_recall": pool_recall(int(sum(bm25_labels)), relevant_total)}
    orders = {"bm25": bm25_labels, **({"rerank": rerank_labels} if rerank_labels is not None else {})}
    for name, labels in orders.items():
        metrics[f"{name}_ndcg"] = ndcg(labels)
        metrics[f"{name}_r_precision"] = r_precision(labels)
        metrics[f"{name}_recall_at_r"] = recall_at_r(labels, relevant_total)
        for k in ks:
            metrics[f"{name}_ndcg@{k}"] = ndcg(labels, k)
    return metrics
