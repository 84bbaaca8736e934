"""A run's results, typed and versioned: ``metrics.json`` as :class:`MetricsFile`, rows of ``results.jsonl``
as :class:`ResultRow` and rows of ``baselines.jsonl`` (and of the units' ``baseline_scores.jsonl``) as
:class:`BaselineRow`, each with a ``format_version``.

``metrics.json`` is written when a run is scored (:func:`metrics_json`) and read back by the reports, the CLI
and the Python API through :func:`read_metrics`.

The file is one object: ``format_version`` and, per stage, a :class:`StageMetrics` (counts, reasons, each
metric's estimate in both failure views, the floor, the no-LLM baselines and the comparison with them).
:func:`read_metrics` validates it and raises :class:`InvalidMetrics` naming the file and the field; a file
written before the format had a version (``format_version`` absent, read as 0) is upgraded in memory, never
rewritten — the guarantee :mod:`ruwikibench.storage.runspec` gives spec.json.

Rows are written with :func:`versioned` (``format_version`` last) and read with :func:`result_rows`: a row
written before rows had a version reads as version 0 (the same fields), one that does not fit raises
:class:`InvalidMetrics` naming the file, the item and the field.

Format versions of metrics.json:

- 0: no ``format_version``; per stage the same blocks as version 1 (``counts.zeroed`` absent in files written
  before failures were zeroed per metric: every failure zeroed everywhere).
- 1: ``format_version`` written first.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ruwikibench.evaluators.stats import Estimate
from ruwikibench.stage.contract import ScoreRecord
from ruwikibench.storage.rundir import NotARunDir, RunDir

METRICS_FORMAT_VERSION = 1
ROWS_FORMAT_VERSION = 1
"""Rows of results.jsonl and baselines.jsonl: 0 written without a version; 1 ``format_version`` written."""
METRICS_FILE = "metrics.json"
VERSION_KEY = "format_version"
View = Literal["failures_excluded", "failures_as_zero"]


class InvalidMetrics(NotARunDir):
    """metrics.json holds JSON that is not a run's metrics: the message names the file and the field."""


class _Block(BaseModel):
    """A block of metrics.json: its known fields typed, keys of other versions kept as they are."""

    model_config = ConfigDict(extra="allow")


class MetricViews(_Block):
    """One metric's mean [95% CI] in both failure views."""

    failures_excluded: Estimate
    failures_as_zero: Estimate

    def view(self, name: str) -> Estimate:
        return self.failures_as_zero if name == "failures_as_zero" else self.failures_excluded


class StageCounts(_Block):
    """What happened to every item: scored, excluded, failed units, articles; ``zeroed`` per metric (None: a
    file written before per-metric zeroing); the LLM judgements made inside units (ranking's relevance
    calls)."""

    evaluated: int = 0
    excluded: int = 0
    failed_units: int = 0
    articles: int = 0
    zeroed: dict[str, int] | None = None
    judgements: int = 0
    failed_judgements: int = 0
    judgement_sources: dict[str, int] = Field(default_factory=dict)


class FloorInfo(_Block):
    """How the permutation floors were measured."""

    method: str = ""
    items: int = 0
    pairs: int = 0
    per_item_max: int = 0
    seed: int | None = None
    copied: int = 0  # pairs left out: the output copies the reference (aggregation/floors.py COPY_SCORE)
    unfloored: int = 0  # items with no floor: every reference they could be floored against is copied


class BaselineSummary(_Block):
    """A no-LLM baseline's metrics and counts, as a run's."""

    metrics: dict[str, MetricViews] = Field(default_factory=dict)
    counts: StageCounts = Field(default_factory=StageCounts)
    excluded_reasons: dict[str, int] = Field(default_factory=dict)


class VersusBaseline(_Block):
    """The run minus its best baseline on one metric, paired over shared items, with a verdict."""

    baseline: str
    difference: Estimate
    p_value: float | None = None
    items: int = 0
    left_out: str = ""
    verdict: str
    reason: str | None = None  # why there is no difference (verdict 'no floor')


class StageMetrics(_Block):
    """One stage of metrics.json."""

    counts: StageCounts = Field(default_factory=StageCounts)
    excluded_reasons: dict[str, int] = Field(default_factory=dict)
    failure_reasons: dict[str, int] = Field(default_factory=dict)
    metrics: dict[str, MetricViews] = Field(default_factory=dict)
    floor: FloorInfo | None = None
    baselines: dict[str, BaselineSummary] = Field(default_factory=dict)
    vs_baseline: dict[str, VersusBaseline] = Field(default_factory=dict)
    vs_baseline_error: str | None = None

    def estimate(self, key: str, view: str) -> Estimate | None:
        """The metric's estimate in ``view`` (None: the stage has no such metric)."""
        found = self.metrics.get(key)
        return None if found is None else found.view(view)

    @classmethod
    def of_baseline(cls, summary: BaselineSummary) -> StageMetrics:
        """A baseline's summary as a table row reads a run's (no failures: both views alike)."""
        return cls(metrics=summary.metrics, counts=summary.counts, excluded_reasons=summary.excluded_reasons)


class MetricsFile(BaseModel):
    """metrics.json: its format version and the metrics of each stage."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = METRICS_FORMAT_VERSION
    stages: dict[str, StageMetrics] = Field(default_factory=dict)


def upgrade(data: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(the version the file was written in, its stage blocks in the current format). 0 -> 1 adds only the
    version: the stage blocks are read as they are."""
    version = data.get(VERSION_KEY, 0)
    return version, {stage: block for stage, block in data.items() if stage != VERSION_KEY}


def parse_metrics(data: Any, source: str = METRICS_FILE) -> MetricsFile:
    """The metrics of ``data`` (a metrics.json object, any version) validated, upgraded in memory."""
    if not isinstance(data, dict):
        raise InvalidMetrics(f"{source}: expected a JSON object of stages, got {type(data).__name__}")
    version, stages = upgrade(data)
    if not isinstance(version, int) or version > METRICS_FORMAT_VERSION:
        raise InvalidMetrics(
            f"{source}: format_version {version!r} is not one this version reads (0-{METRICS_FORMAT_VERSION})"
        )
    try:
        return MetricsFile(stages=stages)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"][1:]) or "(file)"
        raise InvalidMetrics(f"{source}: {where}: {first['msg']}") from None


def read_metrics(rundir: RunDir) -> MetricsFile:
    """The run's metrics.json, validated (:class:`InvalidMetrics`) and upgraded in memory; the file is
    untouched."""
    return parse_metrics(rundir.read_json(METRICS_FILE), str(rundir.file(METRICS_FILE)))


def metrics_json(stages: dict[str, Any]) -> dict[str, Any]:
    """The object metrics.json holds: ``format_version`` first, then the stages as aggregated (checked against
    :class:`StageMetrics` so a file that could not be read back is never written)."""
    parse_metrics(stages, "metrics.json being written")
    return {VERSION_KEY: METRICS_FORMAT_VERSION, **stages}


def stage_dicts(metrics: MetricsFile) -> dict[str, dict[str, Any]]:
    """The stages as plain dicts, as the file holds them (for the Python API and metrics.csv)."""
    return {
        stage: block.model_dump(mode="python", exclude_unset=True) for stage, block in metrics.stages.items()
    }


class ResultRow(ScoreRecord):
    """A row of results.jsonl: a :class:`~ruwikibench.stage.contract.ScoreRecord` with the unit it came
    from."""

    model_config = ConfigDict(extra="allow")

    metrics: dict[str, float | None] = Field(default_factory=dict)  # type: ignore[assignment]
    unit: str | None = None
    format_version: int = 0


class BaselineRow(ResultRow):
    """A row of baselines.jsonl: a no-LLM baseline's score of one item, with its item floor where it has
    one."""

    baseline: str
    floor: dict[str, float] | None = None


def versioned(row: dict[str, Any]) -> dict[str, Any]:
    """A results or baselines row as written: its fields, then ``format_version``."""
    return {**row, VERSION_KEY: ROWS_FORMAT_VERSION}


def result_rows(rows: Any, source: str, model: type[ResultRow] = ResultRow) -> list[Any]:
    """``rows`` (dicts of results.jsonl or baselines.jsonl, any version) validated as ``model``."""
    typed = []
    for row in rows:
        try:
            found = model.model_validate(row)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(row)"
            item = (
                "/".join(str(row.get(k, "?")) for k in ("stage", "article", "item"))
                if isinstance(row, dict)
                else "?"
            )
            raise InvalidMetrics(f"{source}: row {item}: {where}: {first['msg']}") from None
        if found.format_version > ROWS_FORMAT_VERSION:
            raise InvalidMetrics(
                f"{source}: row format_version {found.format_version} is newer than this version"
            )
        typed.append(found)
    return typed
