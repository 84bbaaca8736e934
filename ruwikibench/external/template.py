"""Template rows of the external formats: one per unit the dataset expects, to be filled by another system."""

from __future__ import annotations

from typing import Any

from ruwikibench.dataset import Article, Dataset


def template_rows(dataset: Dataset, articles: list[Article], stage: str) -> list[dict[str, Any]]:
    """Empty rows for ``stage`` (sections: every section with reference text and source snippets)."""
    rows: list[dict[str, Any]] = []
    for article in articles:
        if stage == "ranking":
            rows.append({"article": article.title, "ranking": []})
        elif stage == "outline":
            rows.append({"article": article.title, "outline": f"# {article.title}\n"})
        elif stage == "writer":
            rows.append({"article": article.title, "markdown": f"# {article.title}\n", "sources": {}})
        else:
            rows += [
                {"article": article.title, "section": s.id, "title": s.title, "level": s.level, "text": ""}
                for s in article.sections()
                if s.text().strip() and dataset.section_snippets(article, s)
            ]
    return rows
