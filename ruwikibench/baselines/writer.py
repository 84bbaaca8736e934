"""The writer's baseline: an extractive article, no LLM call.

``extractive``: the article's own snippets ranked by BM25 for the title (the ranking stage's index and
normalizer; snippets sharing no term with the title follow in corpus order). The lead is the first
``LEAD_SENTENCES`` sentences of the top snippet; the sections are the title-template headings of the outline
baselines (``История <title>``, ``Описание <title>``, …), each filled, in rank order, with the next
``writer.per_section`` snippets, ``SECTION_SENTENCES`` first sentences of each. A heading left without a
snippet is dropped.

It reads the article's own sources, which the writer must find in the whole corpus: the baseline is given the
right sources (its source columns are 100 by construction and not compared), so an article that beats it on
text beats the best extract of the right material, not a lucky retrieval.
"""

from __future__ import annotations

from typing import Any

from ruwikibench.baselines.outline import TITLE_TEMPLATE
from ruwikibench.conf.builtin_options import RankingConfig, WriterConfig
from ruwikibench.dataset import Dataset, Snippet
from ruwikibench.evaluators.similarity import split_sentences
from ruwikibench.nodes.written import OutlineItem, WrittenArticle, WrittenSection
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Baseline, BaselineSkipped, Unit

LEAD_SENTENCES = 3
SECTION_SENTENCES = 2
HEADINGS = tuple(t for t in TITLE_TEMPLATE if t != "{title}")  # a title echo is no heading


def ranked_snippets(article: str, title: str, context: StageContext) -> list[Snippet]:
    """The article's own snippets by BM25 score for the title over the whole corpus (highest first; ties and
    unmatched snippets in corpus order)."""
    dataset: Dataset | None = context.dataset
    if dataset is None:
        raise BaselineSkipped("no dataset in the context")
    own = dataset.snippets_of(article)
    if not own:
        raise BaselineSkipped("the article has no snippets (no kept source)")
    index = context.indexes.get(
        dataset, context.config.options(RankingConfig).normalizer, context.config.cache_path
    )
    scores = dict(zip(index.doc_ids, index.scores(title).tolist(), strict=True))
    order = {s.id: n for n, s in enumerate(dataset.snippets)}
    return sorted(own, key=lambda s: (-scores.get(s.id, 0.0), order.get(s.id, 0)))


def first_sentences(snippet: Snippet, count: int) -> str:
    return " ".join(split_sentences(snippet.text)[:count])


def extractive_article(title: str, ranked: list[Snippet], per_section: int) -> WrittenArticle:
    """Lead from the top snippet, then the title-template sections filled with the next snippets in rank
    order."""
    lead = first_sentences(ranked[0], LEAD_SENTENCES)
    rest = ranked[1:]
    sections: list[WrittenSection] = []
    for number, heading in enumerate(HEADINGS):
        chunk = rest[number * per_section : (number + 1) * per_section]
        text = " ".join(t for t in (first_sentences(s, SECTION_SENTENCES) for s in chunk) if t)
        if text:
            sections.append(
                WrittenSection(
                    id=f"s{len(sections) + 1}",
                    level=2,
                    title=heading.format(title=title),
                    text=text,
                    shown_snippets=[s.id for s in chunk],
                )
            )
    return WrittenArticle(
        title=title,
        lead=lead,
        outline=[OutlineItem(id=s.id, level=2, title=s.title) for s in sections],
        sections=sections,
        stats={"sections_with_text": float(len(sections))},
    )


def extractive(unit: Unit, output: dict[str, Any], context: StageContext) -> dict[str, Any]:
    """The extractive article of the unit's title, in the writer's output schema ({article, sources})."""
    title = str(unit.input.get("title") or unit.article)
    per_section = max(1, context.config.options(WriterConfig).per_section)
    ranked = ranked_snippets(unit.article, title, context)
    used = ranked[: 1 + per_section * len(HEADINGS)]
    article = extractive_article(title, used, per_section)
    article.stats["sources_selected"] = float(len(used))
    return {
        "article": article.model_dump(mode="json"),
        "sources": [{"snippet_id": s.id, "rank": n} for n, s in enumerate(used, start=1)],
    }


# built from the unit's input and the dataset alone: scored ahead, before the unit runs
WRITER_BASELINES = (
    Baseline(
        "extractive",
        "lead and title-template sections from the article's own snippets, top BM25 for the title first",
        extractive,
        reads_output=False,
    ),
)
"""The writer stage's baselines (its ``baselines``)."""
