"""Section baselines: texts cut from the section's own snippets, no LLM call, as long as the reference.

- ``lead``: the first sentence of each snippet in turn, then the second of each, ... (Lead-3 in summarization)
  until the text has as many words as the reference section;
- ``random sentences``: sentences drawn at random from the section's snippets (seeded by the section's key),
  to the same length.

Length matching uses the reference's word count, which the pipeline does not get: the baselines are given the
benefit of the right length, so beating them means more than saying as much.
"""

from __future__ import annotations

import random
from itertools import zip_longest
from typing import Any

from ruwikibench.baselines.seed import stable_seed
from ruwikibench.evaluators.similarity import split_sentences
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Baseline, Unit


def _snippet_sentences(spec: dict[str, Any]) -> list[list[str]]:
    return [split_sentences(s.get("text") or "") for s in spec.get("snippets") or []]


def _fill(sentences: list[str], words: int) -> str:
    chosen: list[str] = []
    count = 0
    for sentence in sentences:
        if count >= words:
            break
        chosen.append(sentence)
        count += len(sentence.split())
    return " ".join(chosen)


def lead_text(spec: dict[str, Any]) -> str:
    """Round-robin over the snippets: first sentences first, to the reference's length in words."""
    rounds = zip_longest(*_snippet_sentences(spec))
    ordered = [s for sentences in rounds for s in sentences if s]
    return _fill(ordered, len((spec.get("reference") or "").split()))


def random_text(spec: dict[str, Any], article: str) -> str:
    """Sentences of the section's snippets in a random order seeded by (article, section), to the length."""
    pool = [s for sentences in _snippet_sentences(spec) for s in sentences]
    random.Random(stable_seed(article, str(spec["id"]))).shuffle(pool)
    return _fill(pool, len((spec.get("reference") or "").split()))


def _result(spec: dict[str, Any], text: str) -> dict[str, Any]:
    snippets = spec.get("snippets") or []
    status = "ok" if text else ("no_snippets" if not snippets else "empty_output")
    return {
        "id": spec["id"],
        "title": spec.get("title", ""),
        "level": spec.get("level", 2),
        "text": text,
        "status": status,
        "snippets_total": len(snippets),
        "snippet_ids": [s["id"] for s in snippets],
        "groups": [],
        "calls": 0,
    }


def lead(unit: Unit, output: dict[str, Any], context: StageContext) -> dict[str, Any]:
    results = [_result(spec, lead_text(spec)) for spec in unit.input["sections"]]
    return {"article": unit.input.get("article", unit.article), "results": results}


def random_sentences(unit: Unit, output: dict[str, Any], context: StageContext) -> dict[str, Any]:
    results = [_result(spec, random_text(spec, unit.article)) for spec in unit.input["sections"]]
    return {"article": unit.input.get("article", unit.article), "results": results}


# built from the unit's input alone: scored ahead, before the unit runs (runner/score_process.py)
SECTIONS_BASELINES = (
    Baseline("lead", "first sentences of the snippets, reference length", lead, reads_output=False),
    Baseline(
        "random sentences", "random snippet sentences, reference length", random_sentences, reads_output=False
    ),
)
"""The sections stage's baselines (its ``baselines``)."""
