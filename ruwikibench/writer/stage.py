"""The writer as a registered stage, ``writer``: one unit per article, the title in, a whole cited article
out.

It goes through the same registry and runner as the benchmark stages (``ruwikibench run stage writer`` with
``profile: writer`` in the config; ``ruwikibench write --dataset`` is the writer's own batch command with
resume per article and exports). Its records are the writer's batch scoring (:mod:`ruwikibench.writer.score`):
the outline against the reference outline, each reference section against the best-matching written section,
and the whole article (F1, ROUGE-L, sources); they land in the outline, sections and writer tables, and so
do the records of its no-LLM baseline (:mod:`ruwikibench.baselines.writer`), each table with its paired
verdict of the run against it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from langgraph.graph import StateGraph
from pydantic import BaseModel

from ruwikibench.baselines.writer import WRITER_BASELINES
from ruwikibench.conf.builtin_options import OutlineConfig, RankingConfig, SectionsConfig, WriterConfig
from ruwikibench.conf.config import ModelRole, RunConfig
from ruwikibench.dataset import Article, Dataset
from ruwikibench.evaluators.entities import warm_entities
from ruwikibench.nodes.writer import WriterOutputModel
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Stage, StageScore, Unit
from ruwikibench.storage.rundir import RunDir
from ruwikibench.writer.score import ARTICLE_METRICS, generated_texts, score_written

OptionsT = TypeVar("OptionsT", bound=BaseModel)


WRITER_PROFILE = "writer"
"""The writer's profile: the stage configs in writer mode (no gold data); ``ruwikibench write`` runs under
it."""


class WriterStage(Stage[WriterOutputModel]):
    name = "writer"
    description = "a whole article from the title alone: sources, outline, sections"
    order = 4
    profiles = (WRITER_PROFILE,)
    output_model = WriterOutputModel
    options_model = WriterConfig
    options_alias = True  # `writer:` at the top of a config
    table_label = "whole article, not in the paper"
    doc_page = "writer.md"
    roles = (
        ModelRole("writer", general_rank=1),
    )  # the writer's lead; the first to answer an unconfigured role
    metrics = ARTICLE_METRICS
    baselines = WRITER_BASELINES  # scored by score() as the written articles are: outline, sections, writer
    subgraph_stages = ("ranking", "outline", "sections")  # overrides of these stages reach the writer too

    def profile_options(self, profile: str, options: dict[str, BaseModel]) -> dict[str, BaseModel]:
        """Under the writer's profile, the stage options in writer mode (no gold data): ranking with the
        writer's query mode ('generated' or 'title', never the stored 'reference' query written from gold
        headings); outline centroids chosen from the data; sections without the oracle filter (it reads the
        gold text), with the write prompt that shows numbered materials and asks for [n] markers, the writer's
        grouping, and a chunk size that fits every assigned snippet into one write prompt."""
        if profile != WRITER_PROFILE:
            return options
        writer = _typed(options, self.name, WriterConfig)
        ranking = _typed(options, "ranking", RankingConfig)
        outline = _typed(options, "outline", OutlineConfig)
        sections = _typed(options, "sections", SectionsConfig)
        sections_update: dict[str, object] = {
            "oracle_filter": None,
            "prompt_write": writer.prompt_section,
            "chunk_size": max(sections.chunk_size, writer.per_section),
        }
        if writer.group_threshold is not None:
            sections_update["group_threshold"] = writer.group_threshold
        if writer.section_max_tokens is not None:
            sections_update["write_max_tokens"] = writer.section_max_tokens
        return {
            **options,
            "ranking": ranking.model_copy(update={"query_mode": writer.query_mode}),
            "outline": outline.model_copy(update={"centroids": "data"}),
            "sections": sections.model_copy(update=sections_update),
        }

    def build_graph(self) -> StateGraph:
        from ruwikibench.graphs.writer import build_writer_graph

        return build_writer_graph()  # type: ignore[return-value]

    def build_graph_from(self, subgraphs: dict[str, StateGraph]) -> StateGraph:
        from ruwikibench.graphs.writer import build_writer_graph

        return build_writer_graph(subgraphs)  # type: ignore[return-value]

    def warm_up(self, config: RunConfig, *, scoring: bool) -> None:
        """The NER model of the entity metrics, when units are scored in this process."""
        if scoring:
            warm_entities()

    def units(self, dataset: Dataset, article: Article, config: RunConfig) -> list[Unit]:
        return [
            Unit(stage=self.name, article=article.name, unit_id="article", input={"title": article.title})
        ]

    def score(self, unit: Unit, output: WriterOutputModel, context: StageContext) -> StageScore:
        """The written article's outline, sections and whole-article records, with the written texts paired
        with the reference texts they were scored against."""
        if context.dataset is None:
            raise ValueError("scoring articles needs StageContext.dataset")
        article = context.dataset.article(unit.article)
        written = output.article
        selected = [s["snippet_id"] for s in output.sources or []]
        records = score_written(article, written, selected, context)
        return StageScore(records=records, texts=generated_texts(article, written, records))

    def run_floors(
        self, rundir: RunDir, context: StageContext, *, per_item: int, seed: int
    ) -> list[dict[str, Any]]:
        """Floor rows of the written articles' outline and sections records (called by ``compute_floors``)."""
        from ruwikibench.writer.floors import writer_floor_rows

        return writer_floor_rows(rundir, context, per_item=per_item, seed=seed)


def _typed(options: dict[str, BaseModel], name: str, model: type[OptionsT]) -> OptionsT:
    value = options.get(name)
    return value if isinstance(value, model) else model()


STAGE = WriterStage()
"""The stage object the ``ruwikibench.stages`` entry point names (pyproject.toml)."""
