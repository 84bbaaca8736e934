"""Score outputs produced elsewhere into a normal run directory.

Each external row becomes what the native graph would have output for the same unit (the stage's own
``units()`` build the unit from gold data), and the stage's own ``score()``/``texts()`` score it; whole
articles go through the writer's batch scoring. The run directory has the runner's layout (``spec.json`` with
``external`` = the file and its sha256, ``outputs.jsonl``, ``results.jsonl``, ``generated.jsonl``,
``errors.jsonl``, ``metrics.json``/``.csv`` with both failure views, ``report.md``), so ``ruwikibench report``
puts an external system beside native runs. A selected article with no row is a failed unit (scored 0 in the
``failures_as_zero`` view), never dropped; a row for an article the dataset lacks is an error.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field

from ruwikibench.aggregation.baselines import BASELINES_FILE, UNIT_BASELINES_FILE
from ruwikibench.aggregation.derived import compute_floors_and_baselines
from ruwikibench.conf.builtin_options import OutlineConfig
from ruwikibench.dataset import Article, Dataset
from ruwikibench.external.formats import (
    ArticleRow,
    ExternalFormatError,
    OutlineRow,
    RankingRow,
    SectionsRow,
    read_rows,
)
from ruwikibench.external.shapes import (
    add_source_info,
    check_ranking_row,
    drop_first_stage_metrics,
    ranking_output,
    section_result,
)
from ruwikibench.runner.execute import RunOptions, finalize, new_spec, select_articles
from ruwikibench.runner.open_run import OpenRun, external_key, open_run, run_id, run_path
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Unit, current_stage_name, score_failure
from ruwikibench.stage.registry import get_stage
from ruwikibench.storage.results import versioned
from ruwikibench.storage.rundir import FLOORS_FILE, RunDir
from ruwikibench.storage.runspec import ExternalRecord, InvalidSpec, RunSpec, read_spec
from ruwikibench.writer.score import WRITER_TABLES

FORMAT_VERSION = 1
COPY = "external_outputs.jsonl"
RUN_FILES = (
    "outputs.jsonl",
    "results.jsonl",
    "generated.jsonl",
    "errors.jsonl",
    "nodes.jsonl",
    FLOORS_FILE,
    BASELINES_FILE,
    UNIT_BASELINES_FILE,
)


class ExternalOptions(BaseModel):
    stage: Annotated[str, AfterValidator(current_stage_name)] = Field(
        description="ranking | outline | sections | writer (``article``, its earlier name, is read as writer)"
    )
    outputs: Path
    out: Path = Path("runs")
    name: str | None = Field(
        default=None, description="run directory name (default: derived from the inputs)"
    )
    articles: int | None = None
    article_names: list[str] | None = None
    system: str | None = Field(default=None, description="what produced the outputs (shown in spec.json)")
    origin: dict[str, Any] = Field(
        default_factory=dict, description="extra provenance (e.g. the STORM folder)"
    )
    label: str | None = Field(default=None, description="how errors name the input (default: the file name)")


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def resolve_articles(dataset: Dataset, rows: list[tuple[int, Any]], path: Path) -> dict[int, Article]:
    """The dataset article of every row (by title or name); an unknown one is an error naming it."""
    found: dict[int, Article] = {}
    for line, row in rows:
        try:
            found[line] = dataset.article(row.article)
        except KeyError:
            raise ExternalFormatError(
                f"{path}:{line}: field 'article': {row.article!r} is not an article of the dataset"
            ) from None
    return found


class ExternalScorer:
    """Scores one stage's external rows for the selected articles into ``rundir``."""

    def __init__(self, context: StageContext, rundir: RunDir, options: ExternalOptions) -> None:
        assert context.dataset is not None, "scoring external outputs needs StageContext.dataset"
        self.context = context
        self.dataset: Dataset = context.dataset
        self.rundir = rundir
        self.options = options
        self.path = options.outputs

    # ------------------------------------------------------------------ shared

    def fail(self, stage: str, article: str, unit: str, reason: str) -> None:
        self.rundir.append(
            "errors.jsonl",
            {"stage": stage, "article": article, "unit": unit, "reason": reason, "attempts": 0},
        )

    def missing(self, stage: str, article: Article, unit: str = "article", what: str = "") -> None:
        label = self.options.label or self.path.name
        self.fail(stage, article.name, unit, f"missing: {label} has no row for {article.title!r}{what}")

    def score_unit(
        self,
        unit: Unit,
        output: dict[str, Any],
        line: int,
        adjust: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> None:
        """Append the unit's output and its scores (the stage's own score()/texts(); ``adjust`` edits the
        records before they are written)."""
        stage = get_stage(unit.stage)
        self.rundir.append(
            "outputs.jsonl",
            {
                "stage": unit.stage,
                "article": unit.article,
                "unit": unit.unit_id,
                "input": unit.input,
                "output": output,
                "external_line": line,
            },
        )
        try:
            scored = stage.checked_score(unit, output, self.context)
            records = [r.model_dump(mode="json") for r in scored.records]
            texts = [t.model_dump(mode="json") for t in scored.texts]
        except Exception as exc:  # noqa: BLE001 - recorded like a native scoring failure
            self.fail(unit.stage, unit.article, unit.unit_id, f"score: {score_failure(exc)}")
            return
        if adjust is not None:
            adjust(records)
        for record in records:
            self.rundir.append("results.jsonl", versioned(record))
        for text in texts:
            self.rundir.append("generated.jsonl", text)

    def units(self, name: str, article: Article) -> list[Unit]:
        """The stage's units of the article from gold data; bad gold data is a failed unit, as in native
        runs."""
        try:
            return get_stage(name).units(self.dataset, article, self.context.config)
        except Exception as exc:  # noqa: BLE001 - recorded, the other articles are scored
            self.fail(name, article.name, "*", f"input: {exc}")
            return []

    def one_per_article(
        self, rows: list[tuple[int, Any]], articles: dict[int, Article]
    ) -> dict[str, tuple[int, Any]]:
        by_article: dict[str, tuple[int, Any]] = {}
        for line, row in rows:
            name = articles[line].name
            if name in by_article:
                raise ExternalFormatError(
                    f"{self.path}:{line}: field 'article': a second row for {articles[line].title!r} "
                    f"(the first is line {by_article[name][0]})"
                )
            by_article[name] = (line, row)
        return by_article

    def check(self, stage: str, rows: list[tuple[int, Any]], articles: dict[int, Article]) -> dict[Any, Any]:
        """Validate every row against the dataset; returns the rows keyed by article (by article and
        section)."""
        if stage == "sections":
            return self._section_texts(rows, articles)
        by_article = self.one_per_article(rows, articles)
        if stage == "ranking":
            known = {s.id for s in self.dataset.snippets}
            for line, row in by_article.values():
                check_ranking_row(row, known, self.path, line)
        return by_article

    # ------------------------------------------------------------------ stages

    def ranking(self, selected: list[Article], by_article: dict[str, tuple[int, RankingRow]]) -> None:
        for article in selected:
            if article.name not in by_article:
                self.missing("ranking", article)
                continue
            line, row = by_article[article.name]
            for unit in self.units("ranking", article):
                output = ranking_output(article, row)
                self.score_unit(
                    unit, output, line, None if row.pool is not None else drop_first_stage_metrics
                )

    def outline(self, selected: list[Article], by_article: dict[str, tuple[int, OutlineRow]]) -> None:
        from ruwikibench.nodes.outline_parser import parse_outline

        for article in selected:
            if article.name not in by_article:
                self.missing("outline", article)
                continue
            line, row = by_article[article.name]
            parsed = parse_outline(row.outline, bullets=self.context.config.options(OutlineConfig).bullets)
            output = {
                "k": 0,
                "k_method": "external",
                "outline": [h.model_dump() for h in parsed.headings],
                "outline_markdown": parsed.markdown(),
                "dropped": parsed.dropped,
                "ended": True,
                "notes": ["external"],
                "merged_text": row.outline,
            }
            for unit in self.units("outline", article):
                self.score_unit(unit, output, line)

    def sections(self, selected: list[Article], texts: dict[tuple[str, str], tuple[int, str]]) -> None:
        for article in selected:
            for unit in self.units("sections", article):
                results, missing, lines = [], [], []
                for spec in unit.input["sections"]:
                    found = texts.get((article.name, spec["id"]))
                    scorable = bool((spec.get("reference") or "").strip() and spec.get("snippets"))
                    if found is None and scorable:
                        missing.append(spec["id"])
                    lines.append(found[0] if found else 0)
                    results.append(section_result(spec, found[1] if found else ""))
                if missing:
                    self.missing("sections", article, unit.unit_id, f", section {', '.join(missing)}")
                    continue
                output = {"article": article.title, "results": results}
                self.score_unit(unit, output, max(lines))

    def _section_texts(
        self, rows: list[tuple[int, SectionsRow]], articles: dict[int, Article]
    ) -> dict[tuple[str, str], tuple[int, str]]:
        texts: dict[tuple[str, str], tuple[int, str]] = {}
        for line, row in rows:
            article = articles[line]
            section_id = self._section_id(article, row.section, line)
            if (article.name, section_id) in texts:
                raise ExternalFormatError(
                    f"{self.path}:{line}: field 'section': a second row for {article.title!r} section "
                    f"{section_id!r} (the first is line {texts[(article.name, section_id)][0]})"
                )
            texts[(article.name, section_id)] = (line, row.text)
        return texts

    def _section_id(self, article: Article, given: str, line: int) -> str:
        sections = article.sections()
        if any(s.id == given for s in sections):
            return given
        titled = [s for s in sections if s.title.strip() == given.strip()]
        if len(titled) == 1:
            return titled[0].id
        reason = (
            "names several sections; use the section id"
            if titled
            else "is neither a section id nor a heading"
        )
        raise ExternalFormatError(
            f"{self.path}:{line}: field 'section': {given!r} {reason} of {article.title!r}"
        )

    def writer(self, selected: list[Article], by_article: dict[str, tuple[int, ArticleRow]]) -> None:
        from ruwikibench.external.article import SourceIndex, selected_snippets, written_article
        from ruwikibench.writer.score import generated_texts, score_written, writer_outputs

        index = SourceIndex(self.dataset)
        for article in selected:
            if article.name not in by_article:
                for stage in WRITER_TABLES:
                    self.missing(stage, article)
                continue
            line, row = by_article[article.name]
            matches = [
                index.match(int(n), value, article, row.source_snippets.get(n))
                for n, value in row.sources.items()
            ]
            written = written_article(article, row.markdown, matches, row.outline)
            selected_ids = selected_snippets(matches)
            written.stats["sources_selected"] = float(len(selected_ids))
            try:
                records = score_written(article, written, selected_ids, self.context)
            except Exception as exc:  # noqa: BLE001 - a failure of the article in every stage, as in the batch
                for stage in WRITER_TABLES:
                    self.fail(stage, article.name, "article", f"score: {type(exc).__name__}: {exc}")
                continue
            for record in records:
                if record.stage == "writer" and not record.excluded:
                    add_source_info(
                        record, written.stats, matches, (row.model_extra or {}).get("storm_markers")
                    )
            for record in records:
                self.rundir.append("results.jsonl", versioned(record.model_dump(mode="json")))
            for text in generated_texts(article, written, records):
                self.rundir.append("generated.jsonl", text.model_dump(mode="json"))
            output = {
                "external_line": line,
                "written": written.model_dump(mode="json"),
                "matches": [m.model_dump() for m in matches],
            }
            for saved in writer_outputs(article.name, article.title, output):
                self.rundir.append("outputs.jsonl", saved)


def external_run_id(stage: str, sha: str, dataset: Dataset, options: ExternalOptions) -> str:
    """The run id of scored external outputs (:func:`ruwikibench.runner.open_run.external_key`)."""
    return run_id(external_key(stage, sha, dataset, options.articles, options.article_names))


def score_outputs(context: StageContext, dataset_path: str, options: ExternalOptions) -> RunDir:
    """Read, check and score an external outputs file; writes the whole run directory and returns it.

    Whole articles are scored as the writer's are, under the config's ``writer`` profile (shown in
    spec.json)."""
    if options.stage == "writer":
        context = context.with_profile("writer")
    dataset = context.dataset
    assert dataset is not None
    stage = options.stage
    rows = read_rows(options.outputs, stage)
    articles = resolve_articles(dataset, rows, options.outputs)
    sha = file_sha256(options.outputs)
    stages = list(WRITER_TABLES) if stage == "writer" else [stage]
    run_options = RunOptions(
        stages=stages,
        articles=options.articles,
        article_names=options.article_names,
        out=options.out,
        run_id=options.name,
        progress=False,
    )
    try:
        selected = select_articles(dataset, run_options)
    except KeyError as exc:
        raise ExternalFormatError(f"--article: {exc.args[0]}") from None
    path = run_path(
        options.out, options.name, external_key(stage, sha, dataset, options.articles, options.article_names)
    )
    scorer = ExternalScorer(context, RunDir(path), options)
    checked = scorer.check(stage, rows, articles)  # every row checked before the run directory is touched
    with open_run(path) as opened:  # nobody else writes the run directory meanwhile
        rundir = opened.rundir
        spec = new_spec(opened.run_id, context.config, dataset, dataset_path, run_options, mode="external")
        selected_names = {a.name for a in selected}
        spec.external = ExternalRecord.model_validate(
            {
                "stage": stage,
                "file": str(options.outputs),
                "sha256": sha,
                "rows": len(rows),
                "rows_outside_selection": sum(1 for a in articles.values() if a.name not in selected_names),
                "copy": COPY,
                "format_version": FORMAT_VERSION,
                "system": options.system,
                "label": options.label,
                **options.origin,
            }
        )
        _prepare(opened, spec)
        if options.outputs.resolve() != rundir.file(COPY).resolve():
            shutil.copyfile(options.outputs, rundir.file(COPY))
        started = time.perf_counter()
        getattr(scorer, stage)(selected, checked)
        spec.last_session = {"wall_time_s": round(time.perf_counter() - started, 2), "llm": {}}
        opened.write_spec(spec)
        # the floor of the embedding metrics (for whole articles: of the outline and section metrics, as for
        # writer runs) and the no-LLM baselines, as for native runs
        compute_floors_and_baselines(rundir, context)
        finalize(rundir)
        if stage == "writer":
            _append_unmatched(rundir)
    return rundir


def _append_unmatched(rundir: RunDir) -> None:
    """One line under the article table: cited sources the dataset does not hold."""
    records = [r for r in rundir.results() if r["stage"] == "writer" and not r.get("excluded")]
    given = sum(r["info"].get("sources_given", 0) for r in records)
    unmatched = sum(len(r["info"].get("unmatched_sources", [])) for r in records)
    with open(rundir.file("report.md"), "a", encoding="utf-8") as handle:
        handle.write(
            f"Cited sources not in the dataset: {unmatched} of {given} (per article: `unmatched_sources` "
            "in results.jsonl).\n"
        )


def rescore_external(rundir: RunDir, context: StageContext, dataset_path: str) -> RunDir:
    """Score an external run again from its copy of the outputs (what `ruwikibench score` does for it)."""
    spec = read_spec(rundir.path)
    external, options = spec.external, spec.options
    if external is None:
        raise InvalidSpec(f"{rundir.file('spec.json')}: field 'external' missing (not an external run)")
    again = ExternalOptions(
        stage=external.stage,
        outputs=rundir.file(COPY),
        out=rundir.path.parent,
        name=rundir.path.name,
        articles=options.articles,
        article_names=options.article_names,
        system=external.system,
        label=external.label,
        origin={"file": external.file, **(external.model_extra or {})},
    )
    return score_outputs(context, dataset_path, again)


def _prepare(opened: OpenRun, spec: RunSpec) -> None:
    """A fresh run directory, or the same external run scored again (its files are rewritten, not
    appended)."""
    opened.check_resume(spec, _check_same_outputs)
    for name in RUN_FILES:
        opened.rundir.rewrite(name, [])
    opened.write_spec(spec)


def _check_same_outputs(rundir: RunDir, old: RunSpec, spec: RunSpec) -> None:
    """Only the same outputs file on the same dataset is scored again into an external run's directory."""
    same_file = (
        old.external is not None and spec.external is not None and old.external.sha256 == spec.external.sha256
    )
    if old.mode != "external" or not same_file or old.dataset_id != spec.dataset_id:
        raise ExternalFormatError(
            f"{rundir.path}: holds another run (other outputs file or dataset); choose another --name"
        )
