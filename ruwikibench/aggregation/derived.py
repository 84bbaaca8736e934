"""floors.jsonl and baselines.jsonl of a run, computed from its files in one streamed pass.

What a run's finish needs from its outputs is small: each scored item's floor sides (its generated side and
its reference) and, for each baseline, the unit's baseline score rows and floor sides. The outputs themselves
(snippets, candidate pools, descriptions: hundreds of MB at the paper's size) are read one unit at a time
(:meth:`RunDir.iter_outputs`) and dropped.

The baselines of a unit are scored when the unit is scored (:meth:`Runner.score_output`, off the event loop)
and kept in ``baseline_scores.jsonl`` (:func:`ruwikibench.aggregation.baselines.unit_baselines`): one record
per unit with its rows, the baseline outputs a floor reads, and the digest of the output they were built from.
A unit whose record is missing or was built from another output or another set of baselines (a run from before
this file, a kill between the two writes, a resumed unit) gets it here, appended, so the next pass finds it.
Floors stay here: an item's floor draws from every item of the run.

CPU-bound (embedding look-ups, scoring): call it from a worker thread, never on the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ruwikibench.aggregation.baselines import (
    BASELINES_FILE,
    STAMP_FILE,
    UNIT_BASELINES_FILE,
    baseline_names,
    current_record,
    inputs_digest,
    unit_baselines,
)
from ruwikibench.aggregation.floors import PER_ITEM, SEED, floors_of_sides
from ruwikibench.evaluators.floor import FloorSide
from ruwikibench.runtime.faults import fault_point
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Stage, Unit
from ruwikibench.stage.metric import floor_keys
from ruwikibench.stage.registry import get_stage
from ruwikibench.storage.jsonl import item_key, unit_key
from ruwikibench.storage.rundir import FLOORS_FILE, RunDir

log = logging.getLogger(__name__)

APPEND_BATCH = 256  # baseline records computed here are appended in batches (one fsync each)


@dataclass
class StageItems:
    """What the floors and baselines of one stage need from the run: floor sides, baseline rows and sides."""

    stage: Stage[Any]
    sides: list[FloorSide] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    baseline_sides: dict[str, list[FloorSide]] = field(default_factory=dict)


class Collected:
    """The run's floor sides and baseline rows by stage (:func:`collect`), and the floors and rows made of
    them."""

    def __init__(self) -> None:
        self.stages: dict[
            str, StageItems | None
        ] = {}  # None: a stage not registered here (its records are skipped)
        self._texts: dict[str, str] = {}
        self.failed: list[str] = []  # floors not computed: the stamp is not written, the next run tries again

    def stage(self, name: str) -> StageItems | None:
        if name not in self.stages:
            try:
                self.stages[name] = StageItems(get_stage(name))
            except KeyError:
                self.stages[name] = None
        return self.stages[name]

    def shared(self, sides: list[FloorSide]) -> list[FloorSide]:
        """The sides with equal reference texts held once (a section's reference is on the run's side and on
        every baseline's)."""
        return [
            FloorSide(
                article=s.article,
                item=s.item,
                generated=s.generated,
                reference=self._texts.setdefault(s.reference, s.reference)
                if isinstance(s.reference, str)
                else s.reference,
            )
            for s in sides
        ]

    def floor_rows(
        self, rundir: RunDir, context: StageContext, *, per_item: int = PER_ITEM, seed: int = SEED
    ) -> list[dict[str, Any]]:
        """floors.jsonl's rows: each stage's floors, and the rows a stage computes over the run directory."""
        rows: list[dict[str, Any]] = []
        for name, items in self.stages.items():
            if items is None:
                continue
            try:
                with one_blas_thread():
                    rows += floors_of_sides(items.stage, items.sides, context, per_item=per_item, seed=seed)
                    rows += items.stage.run_floors(rundir, context, per_item=per_item, seed=seed)
            except Exception as exc:  # noqa: BLE001 - the run's scores stand; its tables show no floor
                log.warning("floor of stage %s not computed: %s: %s", name, type(exc).__name__, exc)
                self.failed.append(f"floor of stage {name}")
        rows.sort(key=item_key)  # the file reads the same however the units finished
        return rows

    def baseline_rows(
        self, context: StageContext, *, per_item: int = PER_ITEM, seed: int = SEED
    ) -> list[dict[str, Any]]:
        """baselines.jsonl's rows: every baseline row of every unit, with its item's floor where it has
        one."""
        rows: list[dict[str, Any]] = []
        for name, items in self.stages.items():
            if items is None:
                continue
            for baseline, sides in items.baseline_sides.items():
                try:
                    with one_blas_thread():
                        floors = floors_of_sides(items.stage, sides, context, per_item=per_item, seed=seed)
                except Exception as exc:  # noqa: BLE001 - the baseline's scores stand without a floor
                    log.warning("floor of baseline %s of stage %s not computed: %s", baseline, name, exc)
                    self.failed.append(f"floor of baseline {baseline} of stage {name}")
                    continue
                _attach_floors(baseline, items.rows, floors)
            rows += items.rows
        rows.sort(key=lambda r: (r["baseline"], *item_key(r)))
        return rows


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS on one thread while floors are computed: their tens of thousands of matrix products are small
    (a section's sentences against another's, an outline's headings), and OpenBLAS wakes a second thread for
    each one above ~260k multiply-adds — ~1 ms per product on a busy machine, 3× the floors' time at 64
    articles. The numbers agree with threaded BLAS to float32 rounding; whether they agree to the bit depends
    on the BLAS build and the CPU (OpenBLAS's Haswell kernels on an AMD EPYC differ in the last bits: its
    single-thread path sums in another order). Floors are computed under one thread wherever they run (here or
    in the scoring process), so a run's floors never depend on it. Process-wide: the finish is the only work
    then (every unit done)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # scikit-learn's dependency; without it, BLAS keeps its threads
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _attach_floors(name: str, rows: list[dict[str, Any]], floors: list[dict[str, Any]]) -> None:
    by_item = {item_key(row): row for row in floors}
    for row in rows:
        found = by_item.get(item_key(row)) if row["baseline"] == name else None
        if found and found["metrics"]:
            row["floor"] = found["metrics"]
        if found and found.get("copied"):
            row["floor_copied"] = found["copied"]  # references left out: the baseline's output copies them


def _floor_sides(
    stage: Stage[Any], unit: Unit, output: dict[str, Any], context: StageContext
) -> list[FloorSide]:
    if not floor_keys(stage.metrics):
        return []
    try:
        return stage.floor_sides(unit, output, context)
    except Exception as exc:  # noqa: BLE001 - an output that cannot be scored is listed in errors.jsonl
        log.info("no floor for %s/%s: %s", unit.article, unit.unit_id, exc)
        return []


def _stored_baselines(rundir: RunDir) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The latest baseline record of each unit in ``baseline_scores.jsonl``."""
    return {unit_key(record): record for record in rundir.read(UNIT_BASELINES_FILE)}


def collect(rundir: RunDir, context: StageContext, *, baselines: bool = True) -> Collected:
    """One pass over the run's outputs: floor sides of every scored item and (``baselines``) every unit's
    baseline rows and floor sides, scoring the baselines of units that have no current record (appended to
    ``baseline_scores.jsonl``)."""
    collected = Collected()
    stored = _stored_baselines(rundir) if baselines else {}
    fresh: list[dict[str, Any]] = []
    for record in rundir.iter_outputs():
        items = collected.stage(record["stage"])
        if items is None or "input" not in record:  # a writer run's article records: the writer's run_floors
            continue
        unit = Unit(
            stage=record["stage"], article=record["article"], unit_id=record["unit"], input=record["input"]
        )
        items.sides += collected.shared(_floor_sides(items.stage, unit, record["output"], context))
        if not baselines or not baseline_names(items.stage):
            continue
        base = current_record(stored.pop(unit_key(record), None), items.stage, record["output"])
        if base is None:
            base = unit_baselines(items.stage, unit, record["output"], context)
            fresh.append(base)
            if len(fresh) >= APPEND_BATCH:
                rundir.append_many(UNIT_BASELINES_FILE, fresh)
                fresh = []
        _add_baselines(collected, items, unit, base, context)
    if fresh:
        rundir.append_many(UNIT_BASELINES_FILE, fresh)
    return collected


def _add_baselines(
    collected: Collected, items: StageItems, unit: Unit, base: dict[str, Any], context: StageContext
) -> None:
    items.rows += base["rows"]
    for name in base["baselines"]:
        made = base["outputs"].get(name)
        sides = _floor_sides(items.stage, unit, made, context) if made is not None else []
        items.baseline_sides.setdefault(name, []).extend(collected.shared(sides))


def compute_floors_and_baselines(rundir: RunDir, context: StageContext) -> None:
    """floors.jsonl, then baselines.jsonl: what a scoring pass writes beside results.jsonl; then the stamp
    (:data:`STAMP_FILE`) naming the outputs and results they were computed from — only when every floor was
    computed (else a stamp naming no inputs: the next run tries again). A kill anywhere before the stamp
    leaves the old stamp (or none), so the next run recomputes both; so does a fault raised here (a full
    disk)."""
    digest: str | None = inputs_digest(rundir)
    fault_point("before_floors")
    collected = collect(rundir, context)
    rundir.rewrite(FLOORS_FILE, collected.floor_rows(rundir, context))
    fault_point("before_baselines")
    rundir.rewrite(BASELINES_FILE, collected.baseline_rows(context))
    fault_point("before_stamp")
    if collected.failed:
        log.warning(
            "%s: not stamped (%s failed); computed again by the next run", STAMP_FILE, collected.failed[0]
        )
        digest = None
    # "metrics": None until metrics.json is written from the same inputs (ruwikibench/storage/stamps.py)
    rundir.write_json(
        STAMP_FILE, {"inputs_sha256": digest, "files": [FLOORS_FILE, BASELINES_FILE], "metrics": None}
    )


def compute_floors(
    rundir: RunDir, context: StageContext, *, per_item: int = PER_ITEM, seed: int = SEED
) -> list[dict[str, Any]]:
    """Recompute floors.jsonl from outputs.jsonl for every stage that declares floored metrics."""
    rows = collect(rundir, context, baselines=False).floor_rows(rundir, context, per_item=per_item, seed=seed)
    rundir.rewrite(FLOORS_FILE, rows)
    return rows


def compute_baselines(rundir: RunDir, context: StageContext) -> list[dict[str, Any]]:
    """Recompute baselines.jsonl (scoring the baselines of units without a current record)."""
    rows = collect(rundir, context).baseline_rows(context)
    rundir.rewrite(BASELINES_FILE, rows)
    return rows
