"""The contract between a stage and the runner (bottom layer: graphs implement it, evaluators and the runner
consume it).

A stage is an object registered by name in :mod:`ruwikibench.registry` (``@register_stage`` in the package, the
``ruwikibench.stages`` entry-point group for installed packages), with:

- ``name``: e.g. "ranking" | "outline" | "sections" | "writer"
- ``build_graph()``: the uncompiled StateGraph (input/output schemas, ``context_schema=StageContext``)
- ``units(dataset, article, config)``: the graph inputs built from GOLD data (benchmark mode), one
  :class:`Unit` per independently resumable piece of work (an article for ranking/outline, an article's
  sections for sections)
- ``score(unit, output, context)``: evaluator records for the captured output (``output`` is the graph's output
  state as a JSON-able dict); pure apart from embedding texts; raises nothing for paper exclusions — it returns a
  record with ``excluded`` set instead
- ``texts(unit, output)``: generated texts for judges and reports (:class:`GeneratedText`)
- ``columns``: the paper's table layout for this stage as (column header, metric key) pairs; the runner
  aggregates every metric key over items (mean, bootstrap 95% CI) and prints one row per run with these columns
- ``count_keys`` (optional): the metric keys that are counts (headings, depth); reports print them as they are,
  every other metric is a fraction shown ×100
- ``floor_keys``, ``floor_sides(unit, output, context)``, ``cross_score(generated, reference, context)`` and
  ``reference_pool(context)`` (all optional): the embedding metrics that get a permutation floor and a rescaled
  score, see :mod:`ruwikibench.runner.floors`
- ``run_floors(rundir, context, *, per_item, seed)`` (optional): floor rows a stage computes over the whole run
  directory, for records it files under other stages (the writer's outline and sections records)
- ``failure_keys(reason, keys)`` (optional): the metric keys a failed unit zeroes in the failures-as-zero view
  (default: all)
- ``order`` (optional): where the stage's table comes in reports (lower first; default 100)
- ``description`` (optional): one line saying what the stage does; the console, report.md and report.html
  title a stage's table with it when the stage has no table of the paper (default: the bare name)
- ``headline_key`` (optional): the metric the HTML report's article index and per-article deltas show
  (default: the first column's)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from langgraph.graph import StateGraph
from pydantic import BaseModel, Field

from ruwikibench.config import RunConfig
from ruwikibench.dataset import Article, Dataset

RENAMED_STAGES: dict[str, str] = {"article": "writer"}  # an earlier name -> the stage's name now


def current_stage_name(name: str) -> str:
    """The stage's name now: run files, configs and commands from before a rename still name the old one."""
    return RENAMED_STAGES.get(name, name)


def with_current_stage(record: dict[str, Any]) -> dict[str, Any]:
    """A run-file record with its ``stage`` under the current name (the record itself, renamed in place)."""
    stage = record.get("stage")
    if isinstance(stage, str) and stage in RENAMED_STAGES:
        record["stage"] = RENAMED_STAGES[stage]
    return record


if TYPE_CHECKING:
    from ruwikibench.context import StageContext


class Unit(BaseModel):
    stage: str
    article: str = Field(description="Article.name")
    unit_id: str = Field(description="unique within (stage, article), e.g. 'article' or a section id")
    input: dict[str, Any] = Field(description="the graph input state, JSON-able")


class ScoreRecord(BaseModel):
    """One scored item: an article (ranking, outline) or a section (sections)."""

    stage: str
    article: str
    item: str
    metrics: dict[str, float] = Field(default_factory=dict)
    excluded: str | None = Field(default=None, description="paper exclusion reason; metrics then empty")
    info: dict[str, Any] = Field(default_factory=dict)


class GeneratedText(BaseModel):
    """A generated text with what it should be judged against (written by runs to generated.jsonl)."""

    stage: str
    article: str
    item: str
    title: str
    text: str
    reference: str = ""
    sources: list[str] = Field(default_factory=list)
    category: str | None = None


class Stage(Protocol):
    name: str
    columns: list[tuple[str, str]]

    def build_graph(self) -> StateGraph: ...

    def units(self, dataset: Dataset, article: Article, config: RunConfig) -> list[Unit]: ...

    def score(self, unit: Unit, output: dict[str, Any], context: StageContext) -> list[ScoreRecord]: ...

    def texts(self, unit: Unit, output: dict[str, Any]) -> list[GeneratedText]: ...

