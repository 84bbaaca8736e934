"""The permutation floor of a run's embedding metrics (see :mod:`ruwikibench.evaluators.floor`); floors.jsonl
is written by :mod:`ruwikibench.aggregation.derived`.

A stage takes part by declaring metrics with ``floor=True`` (its embedding metrics),
``floor_sides(unit, output, context)`` (each scored item's generated side and reference side) and
``cross_score(generated, reference, context)`` (the metric of any generated side against any reference side —
the stage scores its own pairs with the same code). The pool of references is the run's own scored items; a
stage may offer ``reference_pool(context)`` (the outline stage: every dataset article's outline) to draw from
instead when the run holds no more than ``per_item`` articles.

The pairs reuse the texts the metric already embedded (the context's embedder caches vectors by text), so the
floor costs lookups and small matrix products, plus the few reference texts of a pool outside the run.
CPU-bound: call it from a worker thread, never on the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ruwikibench.evaluators.floor import FloorSide, draw_others
from ruwikibench.evaluators.similarity import sentence_vectors_kept
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Stage, Unit
from ruwikibench.stage.metric import floor_keys

log = logging.getLogger(__name__)

PER_ITEM = 8
SEED = 0


def stage_floors(
    stage: Stage[Any],
    saved: list[dict[str, Any]],
    context: StageContext,
    *,
    per_item: int = PER_ITEM,
    seed: int = SEED,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Floor rows ({stage, article, item, metrics, against}) for the saved outputs of one stage."""
    keys = floor_keys(stage.metrics)
    if not keys:
        return []
    sides: list[FloorSide] = []
    for record in saved:
        if "input" not in record:  # a writer run's article records: their floors come from writer_floor_rows
            continue
        unit = Unit(
            stage=record["stage"], article=record["article"], unit_id=record["unit"], input=record["input"]
        )
        try:
            sides += stage.floor_sides(unit, record["output"], context)
        except Exception as exc:  # noqa: BLE001 - an output that cannot be scored is listed in errors.jsonl
            log.info("no floor for %s/%s: %s", record["article"], record["unit"], exc)
    return floors_of_sides(stage, sides, context, per_item=per_item, seed=seed, progress=progress)


def floors_of_sides(
    stage: Stage[Any],
    sides: list[FloorSide],
    context: StageContext,
    *,
    per_item: int = PER_ITEM,
    seed: int = SEED,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Floor rows of the scored items ``sides``: each against up to ``per_item`` references of other articles
    (the stage's ``reference_pool`` when the items come from no more than ``per_item`` articles)."""
    keys = floor_keys(stage.metrics)
    if not keys or not sides:
        return []
    small = len({s.article for s in sides}) <= per_item  # too few other articles in the run to draw from
    own_pool = stage.reference_pool(context) if small else None
    pool = sorted(sides if own_pool is None else own_pool, key=lambda p: (p.article, p.item))
    draws = draw_others(
        [(s.article, s.item) for s in sides], [(p.article, p.item) for p in pool], per_item, seed
    )
    with sentence_vectors_kept():  # each text's sentence vectors looked up once (evaluators/similarity.py)
        return _floor_rows(stage, sides, pool, draws, context, keys, seed, progress)


def _floor_rows(
    stage: Stage[Any],
    sides: list[FloorSide],
    pool: list[FloorSide],
    draws: list[list[int]],
    context: StageContext,
    keys: tuple[str, ...],
    seed: int,
    progress: Callable[[int, int], None] | None,
) -> list[dict[str, Any]]:
    rows = []
    for done, (side, drawn) in enumerate(zip(sides, draws, strict=True), start=1):
        if drawn:
            scores = [stage.cross_score(side.generated, pool[j].reference, context) for j in drawn]
            metrics = {key: sum(s[key] for s in scores) / len(scores) for key in keys}
            rows.append(
                {
                    "stage": stage.name,
                    "article": side.article,
                    "item": side.item,
                    "metrics": metrics,
                    "seed": seed,
                    "against": [f"{pool[j].article}/{pool[j].item}" for j in drawn],
                }
            )
        if progress is not None:
            progress(done, len(sides))
    return rows
