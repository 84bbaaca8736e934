"""The permutation floor of a run's embedding metrics (see :mod:`ruwikibench.evaluators.floor`); floors.jsonl
is written by :mod:`ruwikibench.aggregation.derived`.

A stage takes part by declaring metrics with ``floor=True`` (its embedding metrics),
``floor_sides(unit, output, context)`` (each scored item's generated side and reference side) and
``cross_score(generated, reference, context)`` (the metric of any generated side against any reference side —
the stage scores its own pairs with the same code). The pool of references is the run's own scored items; a
stage may offer ``reference_pool(context)`` (the outline stage: every dataset article's outline) to draw from
instead when the run holds no more than ``per_item`` articles.

An output cannot poison its own floor: a drawn reference that the output copies — it scores
:data:`COPY_SCORE` or more against it on :func:`copy_key` (a verbatim, reordered or nearly verbatim copy of
another article's outline or section) — is left out and the next reference in the item's draw order taken in
its place; the row names it under ``copied``. An item whose every candidate is a copy has a row with no
metrics (no floor), and the vs-baseline line says so instead of printing a NaN.

The pairs reuse the texts the metric already embedded (the context's embedder caches vectors by text), so the
floor costs lookups and small matrix products, plus the few reference texts of a pool outside the run.
CPU-bound: call it from a worker thread, never on the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ruwikibench.evaluators.floor import FloorSide, OtherDraws
from ruwikibench.evaluators.similarity import sentence_vectors_kept
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Stage, Unit
from ruwikibench.stage.metric import floor_keys

log = logging.getLogger(__name__)

PER_ITEM = 8
SEED = 0
COPY_SCORE = 0.98
"""An output that scores this much or more against a reference of its floor pool (on :func:`copy_key`) copies
it, verbatim or nearly (reordered, a heading of a long outline swapped): that reference is left out of the
item's floor and the next one drawn. Measured with e5-int8 on the sample (``bench/metric_probes.py``): a
verbatim or reordered copy scores 1, one heading swapped for junk 0.926–0.996, the highest pairs that are not
copies 0.960 (the template against Python's two generic reference headings) and 0.967 (frequent headings) —
kept; docs/metrics.md, "Copies"."""


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
    (the stage's ``reference_pool`` when the items come from no more than ``per_item`` articles), a
    reference the item's output copies (:func:`copies`) left out and the next one drawn instead."""
    keys = floor_keys(stage.metrics)
    if not keys or not sides:
        return []
    small = len({s.article for s in sides}) <= per_item  # too few other articles in the run to draw from
    own_pool = stage.reference_pool(context) if small else None
    pool = sorted(sides if own_pool is None else own_pool, key=lambda p: (p.article, p.item))
    draws = OtherDraws([(p.article, p.item) for p in pool], seed)
    rows = []
    with sentence_vectors_kept():  # each text's sentence vectors looked up once (evaluators/similarity.py)
        for done, side in enumerate(sides, start=1):
            drawn = _drawn(stage, side, pool, draws, context, per_item)
            if drawn.scores or drawn.copied:
                rows.append(drawn.row(stage.name, side, keys, seed))
            if progress is not None:
                progress(done, len(sides))
    return rows


def copy_key(stage: Stage[Any]) -> str:
    """The metric that decides whether an output copies a reference: the stage's first floored metric
    compared with the baselines (heading F1 for outlines, sentence F1 for sections), else its first floored
    one."""
    floored = [m for m in stage.metrics if m.floor]
    return next((m.key for m in floored if m.vs_baselines), floored[0].key)


def copies(scores: dict[str, float], key: str) -> bool:
    """The output scores :data:`COPY_SCORE` or more against a reference on ``key``: it copies it."""
    return scores.get(key, 0.0) >= COPY_SCORE


@dataclass
class Drawn:
    """One item's floor pairs: the references kept (pool index, scores) and those its output copies."""

    pool: list[FloorSide]
    scores: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    copied: list[int] = field(default_factory=list)

    def name(self, index: int) -> str:
        return f"{self.pool[index].article}/{self.pool[index].item}"

    def row(self, stage: str, side: FloorSide, keys: tuple[str, ...], seed: int) -> dict[str, Any]:
        """The floors.jsonl row: metrics averaged over the kept references (in key order); ``copied`` only
        when some were left out (an item whose every candidate is a copy has no metrics)."""
        kept = sorted(self.scores, key=lambda pair: (self.pool[pair[0]].article, self.pool[pair[0]].item))
        metrics = {key: sum(s[key] for _, s in kept) / len(kept) for key in keys} if kept else {}
        row: dict[str, Any] = {
            "stage": stage,
            "article": side.article,
            "item": side.item,
            "metrics": metrics,
            "seed": seed,
            "against": [self.name(j) for j, _ in kept],
        }
        if self.copied:
            row["copied"] = sorted(self.name(j) for j in self.copied)
        return row


def _drawn(
    stage: Stage[Any],
    side: FloorSide,
    pool: list[FloorSide],
    draws: OtherDraws,
    context: StageContext,
    per_item: int,
) -> Drawn:
    """The item's ``per_item`` lowest-ranked references that its output does not copy, drawn deeper for each
    one it does."""
    key = copy_key(stage)
    drawn = Drawn(pool)
    seen: set[int] = set()
    while len(drawn.scores) < per_item:
        depth = per_item + len(drawn.copied)
        ranked = draws.ranked(side.article, side.item, depth)
        for j in ranked:
            if j in seen or len(drawn.scores) == per_item:
                continue
            seen.add(j)
            scores = stage.cross_score(side.generated, pool[j].reference, context)
            if copies(scores, key):
                drawn.copied.append(j)
            else:
                drawn.scores.append((j, scores))
        if len(ranked) < depth or per_item + len(drawn.copied) == depth:
            break  # every candidate seen, or none of this round's was a copy
    return drawn
