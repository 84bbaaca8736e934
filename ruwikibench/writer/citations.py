"""Citation faithfulness of a run's written articles (judged by
:mod:`ruwikibench.evaluators.judges.citations_run`), then each writer article's article.html re-rendered with
its sentences marked."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ruwikibench.conf.config import CitationsConfig
from ruwikibench.dataset import Dataset
from ruwikibench.evaluators.judges.citations import CheckRecord, TextScore
from ruwikibench.evaluators.judges.citations_run import CitedArticle, judge_run_citations
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.writer.export import to_html


async def judge_and_mark(
    run_dir: Path,
    llm: LLM,
    *,
    judge: str,
    options: CitationsConfig,
    prompts: PromptLibrary,
    dataset: Dataset | None = None,
    on_record: Callable[[CheckRecord], None] | None = None,
) -> dict[str, Any]:
    """Judge what is missing (:func:`judge_run_citations`), write citations.json, then mark the sentences in
    each writer article's article.html; returns the summary."""
    judged = await judge_run_citations(
        run_dir, llm, judge=judge, options=options, prompts=prompts, dataset=dataset, on_record=on_record
    )
    render_marked_html(judged.articles, judged.scores)
    return judged.summary


def render_marked_html(articles: list[CitedArticle], scores: list[TextScore]) -> None:
    """Re-write each writer article's article.html with its sentences marked (external articles have none)."""
    by_article: dict[str, dict[str, TextScore]] = defaultdict(dict)
    for score in scores:
        by_article[score.article][score.item] = score
    for item in articles:
        if item.folder is None or not (item.folder / "article.html").exists():
            continue
        page = to_html(item.article, item.snippet_texts, marks=by_article.get(item.name, {}))
        (item.folder / "article.html").write_text(page, encoding="utf-8")
