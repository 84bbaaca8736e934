"""A metric as one declared object, and everything derived from the declarations of a stage.

A stage declares ``metrics: ClassVar[tuple[Metric, ...]]`` (``from ruwikibench.plugin import Metric``): per
metric its key, label, one-line meaning, direction, scale, kind, and the parts of the run it takes part in.
This module is the one place that turns the declarations into what the runner and the reports use:

- :func:`floor_keys`: the metrics that get a permutation floor, each with a ``<key>_floor`` and a
  ``<key>_rescaled`` twin (:func:`twins`);
- :func:`table_metrics`: a stage table's columns (each floored metric followed by its floor and rescaled
  twins), hence the console tables, report.md, report.html and the per-stage CSV headers;
- :func:`baseline_keys`: the metrics compared with the no-LLM baselines (a floored one followed by its
  rescaled twin); :func:`paired_metrics`: the metrics of paired run comparisons; :func:`headline`: the stage's
  headline;
- :func:`ladder_keys`: the validity ladder's metrics; :func:`structure_keys`: those its structure rung
  decides; :func:`factor` and :func:`mark`: the printed scale and the direction mark (↑/↓) of a column;
  :func:`glossary`: one line of meaning per column.

Stages written before declarations (``columns``, ``count_keys``, ``floor_keys``, ``baseline_keys``,
``headline_key``) are adapted by :func:`from_attributes`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

FLOOR_SUFFIX = "_floor"
"""``<key>_floor``: the mean permutation floor of a floored metric (:mod:`ruwikibench.evaluators.floor`)."""
RESCALED_SUFFIX = "_rescaled"
"""``<key>_rescaled``: (score − floor) / (1 − floor)."""
Direction = Literal["higher", "lower", "neither"]
Scale = Literal["x100", "count", "seconds"]
Kind = Literal["embedding", "lexical", "entity", "ranking", "structure", "statistic"]

MARKS: dict[str, str] = {"higher": "↑", "lower": "↓", "neither": "·"}
"""The direction mark a column header carries: ↑ higher is better, ↓ lower is better, · neither (a count)."""
FACTORS: dict[str, float] = {"x100": 100.0, "count": 1.0, "seconds": 1.0}
SCALE_NOTES: dict[str, str] = {"x100": "×100", "count": "count", "seconds": "seconds"}


class Metric(BaseModel):
    """One metric of a stage, declared once. ``floor``: it gets a permutation floor and a rescaled twin (then
    the stage defines ``floor_sides()`` and ``cross_score()``); ``column``: it is shown in the stage's table
    (a metric only aggregated, e.g. an embedding precision kept for the floor, says False); ``vs_baselines``:
    compared with the no-LLM baselines; ``paired``: compared in paired run comparisons (None: every table
    metric that is not a count); ``ladder``: checked by the validity ladder (None: every floored metric; a
    floored metric of kind ``structure`` is checked on the ladder's structure rung whatever it says);
    ``headline``: the metric the HTML report's article index and per-article deltas rank by (at most one;
    none: the first column); ``paired_when_equal``: an ``info`` key of the item's score record that must be
    equal in two runs for their item to be paired on this metric (ranking: the candidate pool's digest, as
    NDCG and R-Precision are normalised inside the pool); items where both runs have it and it differs are
    left out of the pair and counted."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str = Field(min_length=1)
    label: str = Field(min_length=1)
    description: str = ""
    direction: Direction = "higher"
    scale: Scale = "x100"
    kind: Kind = "statistic"
    floor: bool = False
    column: bool = True
    vs_baselines: bool = False
    paired: bool | None = None
    ladder: bool | None = None
    headline: bool = False
    paired_when_equal: str | None = None

    @property
    def compared_in_pairs(self) -> bool:
        return self.paired if self.paired is not None else self.column and self.scale == "x100"

    @property
    def in_ladder(self) -> bool:
        return self.ladder if self.ladder is not None else self.floor


def is_twin(key: str) -> bool:
    """A ``<key>_floor`` or ``<key>_rescaled`` key (the twin of a floored metric)."""
    return key.endswith((FLOOR_SUFFIX, RESCALED_SUFFIX))


def floor_twin(metric: Metric) -> Metric:
    return Metric(
        key=metric.key + FLOOR_SUFFIX,
        label=f"{metric.label} floor",
        description=f"chance level of {metric.label}: each output against the references of other articles",
        direction="neither",
        scale=metric.scale,
        kind=metric.kind,
        paired=False,
    )


def rescaled_twin(metric: Metric) -> Metric:
    return Metric(
        key=metric.key + RESCALED_SUFFIX,
        label=f"{metric.label} rescaled",
        description=f"{metric.label} rescaled by its floor, "
        "(score − floor) / (1 − floor): 0 chance, 100 perfect",
        direction=metric.direction,
        scale=metric.scale,
        kind=metric.kind,
        paired=False,
    )


def twins(metric: Metric) -> list[Metric]:
    """The metric followed by its floor and rescaled twins when it has a floor."""
    return [metric, floor_twin(metric), rescaled_twin(metric)] if metric.floor else [metric]


def table_metrics(metrics: Sequence[Metric]) -> list[Metric]:
    """A stage table's columns: each declared column, a floored one followed by its floor and rescaled
    twins."""
    return [shown for metric in metrics if metric.column for shown in twins(metric)]


def all_metrics(metrics: Sequence[Metric]) -> list[Metric]:
    """Every declared metric with its twins (columns or not): what a key of metrics.json may be."""
    return [shown for metric in metrics for shown in twins(metric)]


def floor_keys(metrics: Sequence[Metric]) -> tuple[str, ...]:
    return tuple(m.key for m in metrics if m.floor)


def count_keys(metrics: Sequence[Metric]) -> frozenset[str]:
    """Keys printed as they are (counts, seconds), never ×100 — with their twins."""
    return frozenset(m.key for m in all_metrics(metrics) if m.scale != "x100")


def factor(metric: Metric | None) -> float:
    """The printed scale of a value: ×100 for fractions, 1 for counts and seconds (an undeclared key:
    ×100)."""
    return FACTORS["x100"] if metric is None else FACTORS[metric.scale]


def mark(metric: Metric | None) -> str:
    """↑ (higher is better), ↓ (lower is better), · (neither); '' for an undeclared key."""
    return "" if metric is None else MARKS[metric.direction]


def by_key(metrics: Sequence[Metric]) -> dict[str, Metric]:
    """Every declared metric and twin by key."""
    return {m.key: m for m in all_metrics(metrics)}


def headline(metrics: Sequence[Metric]) -> Metric | None:
    """The declared headline, else the first column (None: no columns)."""
    flagged = [m for m in metrics if m.headline]
    columns = [m for m in metrics if m.column]
    return flagged[0] if flagged else (columns[0] if columns else None)


def paired_metrics(metrics: Sequence[Metric]) -> list[Metric]:
    """The metrics a paired run comparison covers (a floored one is followed by its rescaled difference)."""
    return [m for m in metrics if m.compared_in_pairs]


def baseline_keys(metrics: Sequence[Metric]) -> list[str]:
    """The keys compared with the no-LLM baselines, each floored one followed by its rescaled key; a stage
    that flags none: its paired metrics."""
    chosen = [m for m in metrics if m.vs_baselines] or paired_metrics(metrics)
    return [key for m in chosen for key in (m.key, *([m.key + RESCALED_SUFFIX] if m.floor else []))]


def ladder_keys(metrics: Sequence[Metric], kind: Kind | None = None) -> tuple[str, ...]:
    """The validity ladder's metrics: the floored ones (``kind=None``) or those of one kind (e.g. entity)."""
    if kind is None:
        return tuple(m.key for m in metrics if m.in_ladder and m.floor)
    return tuple(m.key for m in metrics if m.in_ladder and m.kind == kind and not m.floor)


def structure_keys(metrics: Sequence[Metric]) -> tuple[str, ...]:
    """The floored metrics of kind ``structure``: those the validity ladder's structure rung decides
    (:mod:`ruwikibench.validity.structure`)."""
    return tuple(m.key for m in metrics if m.floor and m.kind == "structure")


def header(metric: Metric) -> str:
    """A column header with its direction mark: 'Mean F1 ↑'."""
    return f"{metric.label} {mark(metric)}".strip()


def glossary(metrics: Sequence[Metric]) -> list[tuple[str, str, str]]:
    """(header with its mark, scale, one-line meaning) for every column of a stage table."""
    return [
        (header(m), SCALE_NOTES[m.scale], m.description or "no description declared")
        for m in table_metrics(metrics)
    ]


def from_attributes(
    columns: Iterable[tuple[str, str]],
    count_keys: Iterable[str] = (),
    floor_keys: Iterable[str] = (),
    baseline_keys: Iterable[str] = (),
    headline_key: str | None = None,
) -> tuple[Metric, ...]:
    """Declarations equivalent to the attributes of a stage written before :class:`Metric` (deprecated):
    ``columns`` (header, key) shown, ``count_keys`` printed as counts, ``floor_keys`` floored (those not in
    ``columns`` aggregated but not shown), ``baseline_keys`` compared with the baselines."""
    counts, floors = set(count_keys), tuple(floor_keys)
    compared = {key.removesuffix(RESCALED_SUFFIX) for key in baseline_keys}
    shown = [(str(title), str(key)) for title, key in columns]
    hidden = [(key, key) for key in floors if key not in {k for _, k in shown}]
    return tuple(
        Metric(
            key=key,
            label=title,
            scale="count" if key in counts else "x100",
            direction="neither" if key in counts else "higher",
            kind="embedding" if key in floors else "statistic",
            floor=key in floors,
            column=(title, key) in shown,
            vs_baselines=key in compared,
            headline=key == headline_key,
        )
        for title, key in [*shown, *hidden]
    )


LEGACY_ATTRIBUTES = ("columns", "count_keys", "floor_keys", "baseline_keys", "headline_key")
"""The attributes :func:`from_attributes` reads (a stage that sets any of them and no ``metrics`` is
adapted)."""


def legacy_metrics(source: object) -> tuple[Metric, ...]:
    """:func:`from_attributes` of an object's old-style attributes."""
    return from_attributes(
        getattr(source, "columns", None) or (),
        getattr(source, "count_keys", None) or (),
        getattr(source, "floor_keys", None) or (),
        getattr(source, "baseline_keys", None) or (),
        getattr(source, "headline_key", None),
    )
