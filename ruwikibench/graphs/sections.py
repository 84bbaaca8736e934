"""Stage 3 (section generation) as LangGraph graphs, and its benchmark ``STAGE`` (see
ruwikibench/stage/contract.py).

``build_section_graph()`` writes one section: collect → group → compress (``Send`` per group) → write.
``build_sections_graph()`` takes an article title and its sections, fans them out with ``Send`` to the section
subgraph and returns the results in input order. Input (both modes)::

    {"article": "<article title>",
     "sections": [{"id": "s3", "title": "История", "level": 2,
                   "snippets": [{"id": "...", "text": "...", "source_id": "..."}],   # texts given, or
                   "snippet_ids": ["..."],                                           # ids via context.dataset
                   "reference": "<gold text>"}]}                                     # benchmark mode only

Output: ``{"article": ..., "results": [SectionResult, ...]}`` (text, status, groups with descriptions, calls).
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from ruwikibench.baselines.sections import SECTIONS_BASELINES
from ruwikibench.conf.builtin_options import SectionsConfig
from ruwikibench.conf.config import ModelRole, RunConfig
from ruwikibench.dataset import Article, Dataset
from ruwikibench.evaluators.coverage import coverage, has_content
from ruwikibench.evaluators.entities import prefetch_entities, warm_entities
from ruwikibench.evaluators.floor import FloorSide
from ruwikibench.evaluators.similarity import sentence_prf
from ruwikibench.evaluators.text_scores import section_scores
from ruwikibench.graphs.views import section_texts_view
from ruwikibench.nodes.sections import (
    CompressInput,
    SectionInput,
    SectionOutput,
    SectionResult,
    SectionsInput,
    SectionsOutput,
    SectionsOutputModel,
    SectionSpec,
    SectionsState,
    SectionState,
    SnippetText,
    collect,
    compress,
    finish,
    group,
    route_groups,
    route_sections,
    write,
)
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import GeneratedText, ScoreRecord, Stage, StageScore, Unit
from ruwikibench.stage.metric import Metric

NAME = "sections"


def build_section_graph() -> StateGraph[SectionState, StageContext, SectionInput, SectionOutput]:
    """One section: collect → group → compress (one Send per group) → write."""
    graph = StateGraph(
        SectionState, context_schema=StageContext, input_schema=SectionInput, output_schema=SectionOutput
    )
    graph.add_node("collect", collect)
    graph.add_node("group", group)
    graph.add_node("compress", compress, input_schema=CompressInput)
    graph.add_node("write", write)
    graph.add_edge(START, "collect")
    graph.add_edge("collect", "group")
    graph.add_conditional_edges("group", route_groups, ["compress", "write"])
    graph.add_edge("compress", "write")
    graph.add_edge("write", END)
    return graph


def build_sections_graph() -> StateGraph[SectionsState, StageContext, SectionsInput, SectionsOutput]:
    """An article's sections, each through the section subgraph (fanned out with Send), results in input
    order."""
    graph = StateGraph(
        SectionsState, context_schema=StageContext, input_schema=SectionsInput, output_schema=SectionsOutput
    )
    graph.add_node("section", build_section_graph().compile())
    graph.add_node("finish", finish)
    graph.add_conditional_edges(START, route_sections, ["section", "finish"])
    graph.add_edge("section", "finish")
    graph.add_edge("finish", END)
    return graph


# --------------------------------------------------------------------------- benchmark mode


def gold_sections(dataset: Dataset, article: Article) -> list[SectionSpec]:
    """Every section of the article (lead first) with the snippets of the sources its paragraphs cite."""
    specs = []
    for section in article.sections():
        snippets = [
            SnippetText(id=s.id, text=s.text, source_id=s.source_id)
            for s in dataset.section_snippets(article, section)
        ]
        specs.append(
            SectionSpec(
                id=section.id,
                title=section.title,
                level=section.level,
                snippets=snippets,
                reference=section.text(),
            )
        )
    return specs


def exclusion(spec: dict[str, Any], result: dict[str, Any]) -> str | None:
    """The paper's exclusions (no penalty, counted): no gold text, no source snippet, nothing left by the
    oracle."""
    if not has_content(spec.get("reference") or ""):
        return "no reference text"
    if result["status"] == "no_snippets":
        return "no source snippet"
    if result["status"] == "oracle_empty":
        return "no snippet passed the oracle filter"
    return None


def score_section(
    unit: Unit, spec: dict[str, Any], result: dict[str, Any], context: StageContext
) -> ScoreRecord:
    """Embedding P/R/F1 over sentences, ROUGE-L, BLEU and entity R/P/F1 (absent when the reference names no
    entity) of one section (+ ``*_authors`` P/R/F1 when ``embedder.authors_prompt`` is set), recalls scaled by
    the text's coverage (``info.coverage`` when below 1); an output with no word (empty, ".") scores 0 (not
    excluded)."""
    cfg = context.config.options(SectionsConfig)
    info: dict[str, Any] = {
        "title": result["title"],
        "level": result["level"],
        "status": result["status"],
        "snippets_total": result["snippets_total"],
        "snippets_used": len(result["snippet_ids"]),
        "groups": len(result["groups"]),
        "calls": result["calls"],
        "oracle": result.get("oracle_filter") is not None,
        "oracle_filter": result.get("oracle_filter"),
        "bleu_tokenize": cfg.bleu_tokenize,
    }
    record = ScoreRecord(stage=NAME, article=unit.article, item=result["id"], info=info)
    reason = exclusion(spec, result)
    if reason:
        record.excluded = reason
        return record
    text, reference = result["text"], spec["reference"]
    if not has_content(text):
        record.info["empty_output"] = True
    elif (share := coverage(text, reference)) < 1.0:
        record.info["coverage"] = round(share, 4)
    record.metrics = section_scores(
        text,
        reference,
        context.embedder,
        tokenize=cfg.bleu_tokenize,
        lemmatize=cfg.rouge_lemmatize,
        authors_prompt=context.config.embedder.authors_prompt,
    )
    return record


def _pairs(unit: Unit, results_list: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each section of the unit with its result (the output's ``results``, matched on the section id)."""
    results = {r["id"]: r for r in results_list}
    pairs = []
    for spec in unit.input["sections"]:
        if spec["id"] not in results:
            raise ValueError(
                f"article {unit.article!r}: the sections output has no result for section {spec['id']!r}"
            )
        pairs.append((spec, results[spec["id"]]))
    return pairs


def _sentence_metric(key: str, label: str, what: str, column: bool = True) -> Metric:
    return Metric(
        key=key,
        label=label,
        description=f"sentence {what}: generated and reference "
        "sentences matched greedily by embedding cosine",
        kind="embedding",
        floor=True,
        column=column,
        vs_baselines=key == "f1",
    )


METRICS = (
    _sentence_metric("f1", "Mean F1", "F1"),
    Metric(
        key="rouge_l",
        label="Mean ROUGE-L",
        description="ROUGE-L F: the longest common word subsequence of the text and the reference",
        kind="lexical",
        vs_baselines=True,
    ),
    Metric(
        key="bleu",
        label="Mean BLEU",
        description="sentence BLEU of the text against the reference (word n-grams up to 4)",
        kind="lexical",
        vs_baselines=True,
    ),
    _sentence_metric("p", "P", "precision"),
    _sentence_metric("r", "R", "recall"),
    Metric(
        key="entity_recall",
        label="Entity R",
        description="share of the reference text's named entities that the generated text names",
        kind="entity",
        vs_baselines=True,
        ladder=True,
    ),
    Metric(
        key="entity_precision",
        label="Entity P",
        description="share of the generated text's named entities that the reference names",
        kind="entity",
    ),
    Metric(
        key="entity_f1",
        label="Entity F1",
        description="harmonic mean of entity P and R",
        kind="entity",
        ladder=True,
    ),
)
"""The section metrics, in table order."""


class SectionsStage(Stage[SectionsOutputModel]):
    """Stage 3 for the runner: units from gold data, per-section scores, generated texts for the judges."""

    name = NAME
    description = "section texts: group the snippets -> iterative summaries -> text"
    order = 3
    output_model = SectionsOutputModel
    options_model = SectionsConfig
    options_alias = True  # `sections:` at the top of a config
    runs_by_default = True
    planted_output = "text"  # check-metrics plants its outputs
    paper_table = "Table 7"
    doc_page = "sections.md"
    warm_modules = (
        "scipy.sparse.csgraph",
        "sacrebleu",
        "razdel",
        "ruwikibench.evaluators.lexical",
        "ruwikibench.evaluators.similarity",
    )
    roles = (
        ModelRole("sections", fallbacks=("writer",)),
    )  # describe / extend / write calls, here and in the writer
    baselines = SECTIONS_BASELINES
    metrics = METRICS

    def build_graph(self) -> StateGraph[SectionsState, StageContext, SectionsInput, SectionsOutput]:
        return build_sections_graph()

    def warm_up(self, config: RunConfig, *, scoring: bool) -> None:
        """The NER model of the entity metrics, when units are scored in this process."""
        if scoring:
            warm_entities()

    def article_view(self, records: Any) -> dict[str, Any] | None:
        return section_texts_view(records)

    def units(self, dataset: Dataset, article: Article, config: RunConfig) -> list[Unit]:
        """One unit per section (resumable), or one per article when ``sections.unit`` is 'article'."""
        specs = [s.model_dump(mode="json", exclude={"snippet_ids"}) for s in gold_sections(dataset, article)]
        if config.options(SectionsConfig).unit == "article":
            return [
                Unit(
                    stage=NAME,
                    article=article.name,
                    unit_id="article",
                    input={"article": article.title, "sections": specs},
                )
            ]
        return [
            Unit(
                stage=NAME,
                article=article.name,
                unit_id=s["id"],
                input={"article": article.title, "sections": [s]},
            )
            for s in specs
        ]

    def score(self, unit: Unit, output: SectionsOutputModel, context: StageContext) -> StageScore:
        """One record per section; the written sections as texts."""
        pairs = _pairs(unit, output.results)
        prefetch_entities(
            [
                text
                for spec, result in pairs
                if exclusion(spec, result) is None
                for text in (spec["reference"], result["text"])
            ]
        )  # one NER pass for the unit's texts
        records = [score_section(unit, spec, result, context) for spec, result in pairs]
        return StageScore(records=records, texts=self.texts(unit, output))

    def floor_sides(self, unit: Unit, output: dict[str, Any], context: StageContext) -> list[FloorSide]:
        """Each scored section with a word in it: its text and its reference text (the floor's pool: the run's
        sections). A text with no word (empty, ".") scores 0 as an empty one and is floored as one: it adds
        no floor."""
        return [
            FloorSide(
                article=unit.article, item=result["id"], generated=result["text"], reference=spec["reference"]
            )
            for spec, result in _pairs(unit, output.get("results", []))
            if exclusion(spec, result) is None and has_content(result["text"])
        ]

    def cross_score(self, generated: str, reference: str, context: StageContext) -> dict[str, float]:
        """Sentence P/R/F1 of a section text against a reference text (the metric's similarity, on another
        pair; without the coverage, which reads two lengths and has no chance level)."""
        return sentence_prf(generated, reference, context.embedder)

    def texts(self, unit: Unit, output: SectionsOutputModel) -> list[GeneratedText]:
        """Each written section with its gold text and the snippet texts it was written from."""
        generated = []
        for spec, result in _pairs(unit, output.results):
            if not has_content(result["text"]):
                continue
            by_id = {s["id"]: s["text"] for s in spec.get("snippets", [])}
            generated.append(
                GeneratedText(
                    stage=NAME,
                    article=unit.article,
                    item=result["id"],
                    title=result["title"],
                    text=result["text"],
                    reference=spec.get("reference") or "",
                    sources=[by_id[i] for i in result["snippet_ids"] if i in by_id],
                )
            )
        return generated


STAGE = SectionsStage()
"""The stage object the ``ruwikibench.stages`` entry point names (pyproject.toml)."""
build_graph = build_sections_graph

__all__ = [
    "STAGE",
    "SectionResult",
    "SectionSpec",
    "SectionsStage",
    "build_graph",
    "build_section_graph",
    "build_sections_graph",
    "gold_sections",
]
