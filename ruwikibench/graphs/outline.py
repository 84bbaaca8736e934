"""Stage 2 (article outline) as a LangGraph graph, plus its benchmark ``STAGE`` for the runner.

cluster → select (``Send``, one per cluster) → [describe] → mini_outline → merge → parse; the picture:
``ruwikibench graph outline``.

The mode comes from ``OutlineConfig.mode``: ``direct`` (texts of the 5 nearest snippets), ``neighbors``
(the same plus one neighbouring snippet of the same source on each side), ``description`` (describe the
cluster first, then outline from the description) — the three columns of the paper's Table 5.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from ruwikibench.baselines.outline import OUTLINE_BASELINES
from ruwikibench.conf.builtin_options import OutlineConfig
from ruwikibench.conf.config import ModelRole, RunConfig
from ruwikibench.dataset import Article, Dataset, Section
from ruwikibench.evaluators.entities import warm_entities
from ruwikibench.evaluators.floor import FloorSide
from ruwikibench.evaluators.outline import (
    HeadingSelection,
    generated_headings,
    outline_similarity,
    reference_headings,
    score_outline,
)
from ruwikibench.graphs.views import headings_view
from ruwikibench.nodes.outline import (
    OutlineInput,
    OutlineOutput,
    OutlineSnippet,
    OutlineState,
    cluster,
    describe,
    fan_out,
    merge,
    mini_outline,
    parse,
    select,
)
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import GeneratedText, ScoreRecord, Stage, StageScore, Unit
from ruwikibench.stage.metric import Metric

NAME = "outline"


def build_outline_graph() -> StateGraph[OutlineState, StageContext, OutlineInput, OutlineOutput]:
    """The uncompiled outline graph (input :class:`OutlineInput`, output :class:`OutlineOutput`)."""
    graph = StateGraph(
        OutlineState, context_schema=StageContext, input_schema=OutlineInput, output_schema=OutlineOutput
    )
    graph.add_node("cluster", cluster)
    graph.add_node("select", select, destinations=("describe", "mini_outline"))
    graph.add_node("describe", describe, destinations=("mini_outline",))
    graph.add_node("mini_outline", mini_outline)
    graph.add_node("merge", merge)
    graph.add_node("parse", parse)
    graph.add_edge(START, "cluster")
    graph.add_conditional_edges("cluster", fan_out, ["select", "merge"])
    graph.add_edge("mini_outline", "merge")
    graph.add_edge("merge", "parse")
    graph.add_edge("parse", END)
    return graph


def first_cited_snippet(
    dataset: Dataset, article: Article, section: Section, descend: bool = True
) -> str | None:
    """Authors' centroid: the first snippet of the first kept source cited in the block (section +
    subsections; ``descend=False``: the section's own paragraphs only, as for the lead)."""
    sources = dataset.sources_of(article.name)
    for sub in section.walk() if descend else [section]:
        for footnote in sub.cited_footnotes():
            for source in sources:
                if source.footnote_id != footnote:
                    continue
                chunks = sorted(dataset.snippets_of_source(source.id), key=lambda s: s.index)
                if chunks:
                    return chunks[0].id
    return None


def selection(config: OutlineConfig) -> HeadingSelection:
    return HeadingSelection(
        min_level=config.eval_min_level,
        max_level=config.eval_max_level,
        include_title=config.eval_include_title,
        drop_title_echo=config.eval_drop_title_echo,
    )


def _heading_prf(suffix: str, f1_label: str, variant: str) -> list[Metric]:
    """Heading precision, recall (floored, aggregated, not shown) and F1 (shown) of one heading selection."""
    return [
        Metric(
            key=f"{key}{suffix}",
            label=label,
            description=f"heading {key.replace('f1', 'F1')}: generated and reference headings matched "
            f"greedily by embedding cosine ({variant})",
            kind="embedding",
            floor=True,
            column=key == "f1",
            vs_baselines=not suffix and key == "f1",
        )
        for key, label in (("precision", f"P{suffix}"), ("recall", f"R{suffix}"), ("f1", f1_label))
    ]


def _structure(prefix: str, labels: tuple[str, str, str], whose: str) -> list[Metric]:
    """The outline's shape: heading count, deepest level, share of deep headings (no better direction)."""
    headings, depth, share = labels
    return [
        Metric(
            key=f"{prefix}_headings",
            label=headings,
            description=f"number of headings of the {whose} outline",
            direction="neither",
            scale="count",
            kind="structure",
        ),
        Metric(
            key=f"{prefix}_max_depth",
            label=depth,
            description=f"deepest heading level of the {whose} outline (# = 1)",
            direction="neither",
            scale="count",
            kind="structure",
        ),
        Metric(
            key=f"{prefix}_deep_share",
            label=share,
            description=f"share of the {whose} outline's headings deeper than level 3",
            direction="neither",
            kind="structure",
        ),
    ]


STRUCTURE_F1 = Metric(
    key="structure_f1",
    label="Structure F1",
    description="headings matched by embedding (each the other's best cosine) that sit at the reference's "
    "depth and in its order, as F1 over both outlines' headings (unmatched ones count against it)",
    kind="structure",
    floor=True,
    vs_baselines=True,
    ladder=False,  # the chain plants flat heading lists; checked on its own rung (validity/structure.py)
)
"""Order and hierarchy (:mod:`ruwikibench.evaluators.outline_structure`): heading P/R/F1 score the reference's
headings shuffled and flattened as the reference itself; this one does not."""

ENTITY_METRICS = (
    Metric(
        key="entity_recall",
        label="Entity R",
        description="share of the named entities of the reference headings that the generated headings name",
        kind="entity",
        vs_baselines=True,
        ladder=True,
    ),
    Metric(
        key="entity_precision",
        label="Entity P",
        description="share of the named entities of the generated headings that the reference headings name",
        kind="entity",
    ),
    Metric(
        key="entity_f1",
        label="Entity F1",
        description="harmonic mean of entity P and R over the headings",
        kind="entity",
        ladder=True,
    ),
)

METRICS = (
    *_heading_prf("", "Mean F1", "the configured heading selection"),
    *_heading_prf("_authors", "F1 (authors)", "the paper authors' selection and prompt"),
    Metric(
        key="soft_recall",
        label="Soft recall",
        description="STORM's heading soft recall: how much of the "
        "reference headings the generated ones cover",
        kind="embedding",
        floor=True,
    ),
    STRUCTURE_F1,
    *ENTITY_METRICS,
    *_structure("gen", ("Headings", "Max depth", "Share > 3"), "generated"),
    *_structure("ref", ("Ref headings", "Ref max depth", "Ref share > 3"), "reference"),
)
"""The outline metrics, in table order (precision and recall are floored and aggregated, not shown)."""


class OutlineStage(Stage[OutlineOutput]):
    """The benchmark contract of :mod:`ruwikibench.stage.contract` for stage 2."""

    name = NAME
    description = "outline: cluster the snippets -> mini-outlines -> merge"
    order = 2
    output_model = OutlineOutput
    options_model = OutlineConfig
    options_alias = True  # `outline:` at the top of a config
    runs_by_default = True
    planted_output = "headings"  # check-metrics plants its outputs
    paper_table = "Table 5"
    doc_page = "outline.md"
    warm_modules = ("sklearn.cluster", "sklearn.metrics", "razdel", "ruwikibench.evaluators.outline")
    roles = (ModelRole("outline", general_rank=2),)
    baselines = OUTLINE_BASELINES
    metrics = METRICS

    def build_graph(self) -> StateGraph:
        return build_outline_graph()  # type: ignore[return-value]

    def warm_up(self, config: RunConfig, *, scoring: bool) -> None:
        """The NER model of the entity metrics, when units are scored in this process."""
        if scoring:
            warm_entities()

    def article_view(self, records: Any) -> dict[str, Any] | None:
        return headings_view(records)

    def units(self, dataset: Dataset, article: Article, config: RunConfig) -> list[Unit]:
        """One unit per article: title, all the article's snippets, its H2 headings (+ first cited snippets).

        With ``centroids="first_snippet"`` (the authors' variant) the lead is a block too when it cites a kept
        source: their k is the number of h1/h2 blocks, the lead's centroid its first cited snippet.
        """
        snippets = [
            OutlineSnippet(id=s.id, source_id=s.source_id, index=s.index, text=s.text)
            for s in dataset.snippets_of(article.name)
        ]
        headings = article.h2_titles()
        firsts = [first_cited_snippet(dataset, article, s) for s in article.root.children]
        lead = first_cited_snippet(dataset, article, article.root, descend=False)
        if config.options(OutlineConfig).centroids == "first_snippet" and lead is not None:
            headings, firsts = [article.title, *headings], [lead, *firsts]
        data = OutlineInput(title=article.title, snippets=snippets, headings=headings, first_snippets=firsts)
        return [Unit(stage=NAME, article=article.name, unit_id="article", input=data.model_dump(mode="json"))]

    def score(self, unit: Unit, output: OutlineOutput, context: StageContext) -> StageScore:
        """Heading P/R/F1 (configured selection and the authors' variant), soft recall, structure F1 and
        statistics; the generated outline as Markdown."""
        return StageScore(
            records=[self.outline_record(unit, output, context)], texts=self.texts(unit, output)
        )

    def outline_record(self, unit: Unit, result: OutlineOutput, context: StageContext) -> ScoreRecord:
        if context.dataset is None:
            raise ValueError(
                f"outline scoring of {unit.article!r}: StageContext.dataset is needed (reference outline)"
            )
        article = context.dataset.article(unit.article)
        record = ScoreRecord(stage=NAME, article=article.name, item=unit.unit_id)
        if not unit.input.get("snippets"):
            return record.model_copy(update={"excluded": "article has no snippets"})
        if not article.root.children:
            return record.model_copy(update={"excluded": "reference outline has no sections"})
        scored = score_outline(
            article,
            [(h.level, h.title) for h in result.outline],
            context.embedder,
            selection(context.config.options(OutlineConfig)),
            context.config.embedder.authors_prompt,
        )
        info = {**scored.info, "k": result.k, "k_method": result.k_method, "ended": result.ended}
        info["notes"] = result.notes
        return record.model_copy(update={"metrics": scored.metrics, "info": info})

    def floor_sides(self, unit: Unit, output: dict[str, Any], context: StageContext) -> list[FloorSide]:
        """The scored outline (title + generated headings) with its article as reference; none when the
        article is excluded or nothing is left of the outline once the scorer drops what it does not score
        (:func:`generated_headings`: title echoes): such an output scores 0 by convention, as an empty one,
        and is floored as one — an outline of a single ``## <title>`` cannot lower the run's floor."""
        if context.dataset is None or not unit.input.get("snippets"):
            return []
        article = context.dataset.article(unit.article)
        outline = OutlineOutput.model_validate(output).outline
        titles = [h.title for h in outline]
        scored = generated_headings(titles, article.title, selection(context.config.options(OutlineConfig)))
        if not article.root.children or not scored:
            return []
        return [
            FloorSide(
                article=article.name,
                item=unit.unit_id,
                generated=(article.title, titles, [h.level for h in outline]),
                reference=article.name,
            )
        ]

    def reference_pool(self, context: StageContext) -> list[FloorSide]:
        """Every dataset article with reference headings (a few short strings each, cheap to embed)."""
        if context.dataset is None:
            return []
        chosen = selection(context.config.options(OutlineConfig))
        return [
            FloorSide(article=a.name, item="article", generated=None, reference=a.name)
            for a in context.dataset.articles
            if a.root.children and reference_headings(a, chosen)
        ]

    def cross_score(
        self, generated: tuple[Any, ...], reference: str, context: StageContext
    ) -> dict[str, float]:
        """The outline metrics of generated headings — ``(own title, titles)`` or ``(own title, titles,
        levels)``; without levels the headings are one flat level — against the outline of the article named
        ``reference``."""
        assert context.dataset is not None
        own_title, titles, *levels = generated
        return outline_similarity(
            titles,
            own_title,
            context.dataset.article(reference),
            context.embedder,
            selection(context.config.options(OutlineConfig)),
            context.config.embedder.authors_prompt,
            levels=levels[0] if levels else None,
        ).metrics

    def texts(self, unit: Unit, output: OutlineOutput) -> list[GeneratedText]:
        """The generated outline as Markdown; the reference given is the article's H2 headings."""
        result = output
        sources = list(dict.fromkeys(sid for r in result.cluster_results for sid in r.context))
        return [
            GeneratedText(
                stage=NAME,
                article=unit.article,
                item=unit.unit_id,
                title=str(unit.input.get("title", unit.article)),
                text=result.outline_markdown,
                reference="\n".join(f"## {h}" for h in unit.input.get("headings") or []),
                sources=sources,
            )
        ]


STAGE = OutlineStage()
"""The stage object the ``ruwikibench.stages`` entry point names (pyproject.toml)."""
