"""The paper's filters, applied in order: short sources, uncited paragraphs, empty headings."""

from __future__ import annotations

from pydantic import BaseModel

from ruwikibench.dataset import Article, Section, Source

MIN_SOURCE_CHARS = 1500


class FilterReport(BaseModel):
    """What the filters removed from one article."""

    sources_in: int = 0
    sources_short: int = 0
    paragraphs_in: int = 0
    paragraphs_dropped: int = 0
    headings_in: int = 0
    headings_dropped: int = 0


def source_is_long_enough(source: Source, min_chars: int = MIN_SOURCE_CHARS) -> bool:
    """The paper keeps sources whose text has at least ``min_chars`` characters (surrounding blanks not
    counted)."""
    return len(source.text.strip()) >= min_chars


def filter_sources(sources: list[Source], min_chars: int = MIN_SOURCE_CHARS) -> list[Source]:
    """Filter 1: drop sources with fewer than ``min_chars`` characters of text."""
    return [s for s in sources if source_is_long_enough(s, min_chars)]


def filter_paragraphs(section: Section, kept_footnotes: set[str]) -> Section:
    """Filter 2 (whole tree): keep only paragraphs citing at least one footnote that has a kept source."""
    return section.model_copy(
        update={
            "paragraphs": [p for p in section.paragraphs if any(c in kept_footnotes for c in p.citations)],
            "children": [filter_paragraphs(c, kept_footnotes) for c in section.children],
        }
    )


def prune_headings(section: Section) -> Section | None:
    """Filter 3: drop a heading left with no paragraph unless a subsection survives (bottom-up)."""
    children = [kept for c in section.children if (kept := prune_headings(c)) is not None]
    if not section.paragraphs and not children:
        return None
    return section.model_copy(update={"children": children})


def filter_article(article: Article, kept_sources: list[Source]) -> tuple[Article, FilterReport]:
    """Filters 2 and 3 for one article given its kept sources; the lead (root) always stays."""
    kept_footnotes = {s.footnote_id for s in kept_sources}
    before = article.sections()
    root = filter_paragraphs(article.root, kept_footnotes)
    pruned = prune_headings(root)
    root = pruned if pruned is not None else root.model_copy(update={"children": []})
    after = list(root.walk())
    report = FilterReport(
        paragraphs_in=sum(len(s.paragraphs) for s in before),
        paragraphs_dropped=sum(len(s.paragraphs) for s in before) - sum(len(s.paragraphs) for s in after),
        headings_in=len(before) - 1,
        headings_dropped=len(before) - len(after),
    )
    updated = article.model_copy(update={"root": root, "source_ids": [s.id for s in kept_sources]})
    return updated, report
