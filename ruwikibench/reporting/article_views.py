"""What an article page shows per stage: reference beside generated, built from one run's captured records.

A view is a plain dict for the article template: the stage's own (its ``article_view()``; the built-in stages'
are in :mod:`ruwikibench.graphs.views`: ``pool``, ``headings``, ``section_texts``), else ``texts``: the
stage's generated texts (``generated.jsonl``) beside their references.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ruwikibench.dataset import Dataset
from ruwikibench.graphs.views import segments
from ruwikibench.stage.contract import Stage
from ruwikibench.stage.registry import StageRegistryError, get_stage
from ruwikibench.storage.results import ResultRow


@dataclass
class ArticleRecords:
    """One run's records of one article and one stage."""

    stage: str
    article: str
    outputs: list[dict[str, Any]] = field(default_factory=list)  # outputs.jsonl rows (unit, input, output)
    results: list[ResultRow] = field(default_factory=list)  # results.jsonl rows (item, metrics, excluded)
    texts: list[dict[str, Any]] = field(default_factory=list)  # generated.jsonl rows
    dataset: Dataset | None = None


def texts_view(records: ArticleRecords) -> dict[str, Any]:
    return {
        "kind": "texts",
        "problem": "",
        "texts": [
            {
                "item": t["item"],
                "title": t.get("title", ""),
                "reference": t.get("reference", ""),
                "generated": segments(t.get("text", "")),
            }
            for t in records.texts
        ],
    }


def article_view(records: ArticleRecords) -> dict[str, Any]:
    """The stage's view when the outputs are the stage's units (input + output), else the generated texts (a
    stage without a view, outputs of another system scored as whole articles); a view that cannot read the
    outputs says why above the generated texts."""
    stage = _stage(records.stage)
    if stage is None or not records.outputs or not all("input" in o for o in records.outputs):
        return texts_view(records)
    try:
        view = stage.article_view(records)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        return texts_view(records) | {
            "problem": f"the {records.stage} view could not read the outputs: {type(exc).__name__}: {exc}"
        }
    return texts_view(records) if view is None else view


def _stage(name: str) -> Stage[Any] | None:
    try:
        return get_stage(name)
    except StageRegistryError:
        return None
