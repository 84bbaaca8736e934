"""Outline baselines: headings written without reading a single source.

- ``template``: generic encyclopedia headings (no title);
- ``title template``: the same headings with the article's title in them;
- ``frequent headings``: the most frequent H2 headings of the OTHER articles of the dataset (leave-one-out),
  as many as the reference has H2 headings (the pipeline is given that number too); skipped, with the reason,
  when fewer than :data:`MIN_OTHER_ARTICLES` other articles have H2 headings — on a tiny dataset it would be
  one other article's outline, the very reference its floor is measured against, not a frequency.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ruwikibench.nodes.outline import OutlineOutput
from ruwikibench.nodes.outline_parser import Heading
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Baseline, BaselineSkipped, Unit

MIN_OTHER_ARTICLES = 5
"""``frequent headings`` needs this many other articles with H2 headings (below it, a heading's frequency is
one or two articles' choice)."""
TEMPLATE = ("Определение", "История", "Описание", "Применение", "Критика", "Значение")
TITLE_TEMPLATE = (
    "{title}",
    "История {title}",
    "Описание {title}",
    "Применение {title}",
    "Критика {title}",
    "Значение {title}",
)


def outline_output(titles: list[str], method: str) -> dict[str, Any]:
    headings = [Heading(level=2, title=t) for t in titles]
    markdown = "\n".join(f"## {t}" for t in titles)
    return OutlineOutput(
        k=len(titles), k_method=method, outline=headings, outline_markdown=markdown, ended=True
    ).model_dump(mode="json")


def template(unit: Unit, output: dict[str, Any], context: StageContext) -> dict[str, Any]:
    return outline_output(list(TEMPLATE), "baseline: template")


def title_template(unit: Unit, output: dict[str, Any], context: StageContext) -> dict[str, Any]:
    title = str(unit.input.get("title") or unit.article)
    return outline_output([t.format(title=title) for t in TITLE_TEMPLATE], "baseline: title template")


def _normalized(title: str) -> str:
    return " ".join(title.lower().replace("ё", "е").split())


def frequent_headings(unit: Unit, output: dict[str, Any], context: StageContext) -> dict[str, Any]:
    """The reference H2 headings of the other articles, most frequent first (ties: alphabetical), k of
    them."""
    if context.dataset is None:
        raise BaselineSkipped("no dataset in the context")
    counts: Counter[str] = Counter()
    spelling: dict[str, str] = {}
    for article in context.dataset.articles:
        if article.name == unit.article:
            continue
        for title in dict.fromkeys(_normalized(t) for t in article.h2_titles()):
            counts[title] += 1
        for title in article.h2_titles():
            spelling.setdefault(_normalized(title), title)
    others = sum(
        1 for article in context.dataset.articles if article.name != unit.article and article.h2_titles()
    )
    if others < MIN_OTHER_ARTICLES:
        raise BaselineSkipped(
            f"needs at least {MIN_OTHER_ARTICLES} other articles with H2 headings, the dataset has {others}"
        )
    k = max(1, len(unit.input.get("headings") or []))
    ranked = sorted(counts, key=lambda t: (-counts[t], t))[:k]
    return outline_output([spelling[t] for t in ranked], "baseline: frequent headings")


# built from the unit's input and the dataset alone: scored ahead, before the unit runs
# (runner/score_process.py)
OUTLINE_BASELINES = (
    Baseline("template", "generic encyclopedia headings, no title", template, reads_output=False),
    Baseline("title template", "generic headings with the title", title_template, reads_output=False),
    Baseline(
        "frequent headings",
        "most frequent H2 headings of the other articles",
        frequent_headings,
        reads_output=False,
    ),
)
"""The outline stage's baselines (its ``baselines``)."""
