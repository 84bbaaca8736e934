"""Ranking baselines over the run's own candidate pool (the pool the model reranked): its BM25 order, and a
random order seeded by the article's key. Scored as the reranked order, so their ``rerank_*`` columns are
what a reranker that did nothing (BM25) or guessed (random) would get."""

from __future__ import annotations

import random
from typing import Any

from ruwikibench.baselines.seed import stable_seed
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Baseline, BaselineSkipped, Unit


def _reordered(output: dict[str, Any], candidates: list[dict[str, Any]]) -> dict[str, Any]:
    ranked = [dict(c, rank=position) for position, c in enumerate(candidates, start=1)]
    return {**output, "candidates": ranked}


def _candidates(output: dict[str, Any]) -> list[dict[str, Any]]:
    candidates = [dict(c) for c in output.get("candidates") or []]
    if not candidates:
        raise BaselineSkipped("the run's pool is empty")
    return candidates


def bm25_order(unit: Unit, output: dict[str, Any], context: StageContext) -> dict[str, Any]:
    candidates = _candidates(output)
    if any(c.get("bm25_rank") is None for c in candidates):
        raise BaselineSkipped("the pool has no BM25 order (outputs made elsewhere)")
    return _reordered(output, sorted(candidates, key=lambda c: c["bm25_rank"]))


def random_order(unit: Unit, output: dict[str, Any], context: StageContext) -> dict[str, Any]:
    candidates = sorted(_candidates(output), key=lambda c: str(c["snippet_id"]))
    random.Random(stable_seed(unit.article, unit.unit_id)).shuffle(candidates)
    return _reordered(output, candidates)


RANKING_BASELINES = (
    Baseline("bm25 order", "the pool in BM25 order, no rerank", bm25_order),
    Baseline("random order", "the pool in a random order", random_order),
)
"""The ranking stage's baselines (its ``baselines``)."""
