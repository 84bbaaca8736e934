"""The writer as a registered stage, ``writer``: one unit per article, the title in, a whole cited article out.

It goes through the same registry and runner as the benchmark stages (``ruwikibench run stage writer`` with
``profile: writer`` in the config; ``ruwikibench write --dataset`` is the writer's own batch command with resume
per article and exports). Its records are the writer's batch scoring (:mod:`ruwikibench.writer.score`): the
outline against the reference outline, each reference section against the best-matching written section, and the
whole article (F1, ROUGE-L, sources); they land in the outline, sections and writer tables.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import StateGraph

from ruwikibench.config import RunConfig
from ruwikibench.context import StageContext
from ruwikibench.contract import Stage, StageScore, Unit
from ruwikibench.dataset import Article, Dataset
from ruwikibench.nodes.writer import WriterOutputModel
from ruwikibench.registry import instance_of, register_stage
from ruwikibench.rundir import RunDir
from ruwikibench.writer.score import ARTICLE_METRICS, generated_texts, score_written


@register_stage
class WriterStage(Stage[WriterOutputModel]):
    name = "writer"
    description = "a whole article from the title alone: sources, outline, sections"
    order = 4
    profiles = ("writer",)
    output_model = WriterOutputModel
    metrics = ARTICLE_METRICS
    subgraph_stages = ("ranking", "outline", "sections")  # overrides of these stages reach the writer too

    def build_graph(self) -> StateGraph:
        from ruwikibench.graphs.writer import build_writer_graph

        return build_writer_graph()  # type: ignore[return-value]

    def build_graph_from(self, subgraphs: dict[str, StateGraph]) -> StateGraph:
        from ruwikibench.graphs.writer import build_writer_graph

        return build_writer_graph(subgraphs)  # type: ignore[return-value]

    def units(self, dataset: Dataset, article: Article, config: RunConfig) -> list[Unit]:
        return [
            Unit(stage=self.name, article=article.name, unit_id="article", input={"title": article.title})
        ]

    def score(self, unit: Unit, output: WriterOutputModel, context: StageContext) -> StageScore:
        """The written article's outline, sections and whole-article records, with the written texts paired with
        the reference texts they were scored against."""
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


STAGE = instance_of(WriterStage)
