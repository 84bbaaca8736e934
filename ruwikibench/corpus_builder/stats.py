"""Dataset statistics: the rows of the paper's Table 1 (plus a few details), overall and per article.

Definitions (the paper does not spell them out; these are ours, see docs/corpus.md):

* outline size = number of headings of the filtered outline (h2 and deeper; the article title is not counted);
* section size = words (whitespace-separated) in a section's own paragraphs, averaged over every section that
  has at least one paragraph, the lead included, pooled over all articles.
"""

from __future__ import annotations

from statistics import fmean

from pydantic import BaseModel

from ruwikibench.dataset import Article, Dataset


class ArticleStats(BaseModel):
    article: str
    sources: int
    snippets: int
    headings: int
    h2_headings: int
    max_depth: int
    paragraphs: int
    sections_with_text: int
    words: int


class DatasetStats(BaseModel):
    """Paper Table 1 rows first, then details."""

    articles: int
    sources: int
    snippets: int
    mean_outline_headings: float
    mean_section_words: float
    paragraphs: int
    sources_uncited: int
    mean_h2_headings: float
    per_article: list[ArticleStats]

    def table1_rows(self) -> list[tuple[str, str]]:
        """(metric, value) rows in the order of the paper's Table 1."""
        return [
            ("Number of articles", f"{self.articles:,}"),
            ("Number of sources", f"{self.sources:,}"),
            ("Total number of snippets", f"{self.snippets:,}"),
            ("Average outline size (headings)", f"{self.mean_outline_headings:.1f}"),
            ("Average section size (words)", f"{self.mean_section_words:.1f}"),
        ]

    def detail_rows(self) -> list[tuple[str, str]]:
        return [
            ("Paragraphs kept", f"{self.paragraphs:,}"),
            ("Sources cited by no kept paragraph", f"{self.sources_uncited:,}"),
            ("Average number of H2 headings", f"{self.mean_h2_headings:.1f}"),
        ]


def _section_word_counts(article: Article) -> list[int]:
    return [sum(len(p.text.split()) for p in s.paragraphs) for s in article.sections() if s.paragraphs]


def article_stats(dataset: Dataset, article: Article) -> ArticleStats:
    sections = article.sections()
    counts = _section_word_counts(article)
    return ArticleStats(
        article=article.name,
        sources=len(dataset.sources_of(article.name)),
        snippets=len(dataset.snippets_of(article.name)),
        headings=len(sections) - 1,
        h2_headings=len(article.root.children),
        max_depth=max(s.level for s in sections),
        paragraphs=sum(len(s.paragraphs) for s in sections),
        sections_with_text=len(counts),
        words=sum(counts),
    )


def dataset_stats(dataset: Dataset) -> DatasetStats:
    """Table 1 figures for a processed dataset."""
    per_article = [article_stats(dataset, a) for a in dataset.articles]
    section_words = [n for a in dataset.articles for n in _section_word_counts(a)]
    cited = {
        (a.name, c) for a in dataset.articles for s in a.sections() for p in s.paragraphs for c in p.citations
    }
    return DatasetStats(
        articles=len(dataset.articles),
        sources=len(dataset.sources),
        snippets=len(dataset.snippets),
        mean_outline_headings=fmean(a.headings for a in per_article) if per_article else 0.0,
        mean_section_words=fmean(section_words) if section_words else 0.0,
        paragraphs=sum(a.paragraphs for a in per_article),
        sources_uncited=sum(1 for s in dataset.sources if (s.article, s.footnote_id) not in cited),
        mean_h2_headings=fmean(a.h2_headings for a in per_article) if per_article else 0.0,
        per_article=per_article,
    )
