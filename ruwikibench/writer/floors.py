"""The permutation floor of a written article's outline and section metrics (writer runs, scored STORM
output).

The writer's records land in the ``outline`` and ``sections`` tables (:mod:`ruwikibench.writer.score`); their
floors are measured as the stages measure theirs (:mod:`ruwikibench.aggregation.floors`), with the stages' own
``cross_score``: the written outline's headings against the outlines of other articles, each scored section
text against the reference texts of other articles' sections. The sides are read from ``generated.jsonl`` (the
texts the records were scored on), so the floor is the same for batch runs, ``run stage writer`` and external
articles. CPU-bound: call it from a worker thread, never on the event loop.
"""

from __future__ import annotations

from typing import Any

from ruwikibench.aggregation.floors import PER_ITEM, SEED, floors_of_sides
from ruwikibench.evaluators.coverage import has_content
from ruwikibench.evaluators.floor import FloorSide
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.registry import get_stage
from ruwikibench.storage.rundir import RunDir

FLOORED = ("outline", "sections")


def scored_writer_items(rundir: RunDir) -> set[tuple[str, str, str]]:
    """(stage, article, item) of every scored (not excluded) outline/sections record of writer mode."""
    return {
        (r["stage"], r["article"], r["item"])
        for r in rundir.results()
        if r["stage"] in FLOORED and not r.get("excluded") and (r.get("info") or {}).get("mode") == "writer"
    }


def outline_side(text: dict[str, Any], context: StageContext) -> FloorSide | None:
    """The written outline ('# Title' line, then its headings, levels as '#' counts) as the outline stage's
    floor side; none when the scorer keeps none of its headings (only title echoes): it scores as an empty
    outline and is floored as one, as in the outline stage."""
    from ruwikibench.conf.builtin_options import OutlineConfig
    from ruwikibench.evaluators.outline import generated_headings
    from ruwikibench.graphs.outline import selection

    assert context.dataset is not None
    article = context.dataset.article(text["article"])
    lines = [line for line in text["text"].splitlines()[1:] if line.startswith("#")]
    titles = [line.lstrip("#").strip() for line in lines]
    kept = generated_headings(titles, article.title, selection(context.config.options(OutlineConfig)))
    if not lines or not kept:
        return None
    levels = [len(line) - len(line.lstrip("#")) for line in lines]
    return FloorSide(
        article=article.name,
        item=text["item"],
        generated=(article.title, titles, levels),
        reference=article.name,
    )


def section_side(text: dict[str, Any]) -> FloorSide | None:
    """A scored section text and its reference text as the sections stage's floor side; none when either has
    no word (an empty or content-free text scores 0 and adds no floor)."""
    if not has_content(text["text"]) or not has_content(text.get("reference") or ""):
        return None
    return FloorSide(
        article=text["article"], item=text["item"], generated=text["text"], reference=text["reference"]
    )


def writer_floor_rows(
    rundir: RunDir, context: StageContext, *, per_item: int = PER_ITEM, seed: int = SEED
) -> list[dict[str, Any]]:
    """Floor rows of the run's writer-mode outline and sections records (none when the run has none)."""
    scored = scored_writer_items(rundir)
    if not scored or context.dataset is None:
        return []
    latest = {(t["stage"], t["article"], t["item"]): t for t in rundir.read("generated.jsonl")}
    texts = [t for key, t in sorted(latest.items()) if key in scored]
    rows: list[dict[str, Any]] = []
    for name in FLOORED:
        sides = [
            outline_side(t, context) if name == "outline" else section_side(t)
            for t in texts
            if t["stage"] == name
        ]
        rows += floors_of_sides(
            get_stage(name), [s for s in sides if s is not None], context, per_item=per_item, seed=seed
        )
    return rows
