"""Planted checks of the embedding metrics: does the configured embedder tell good output from junk?

On real articles, each stage's embedding metrics score three planted outputs per item:

- ``reference``: the reference itself (the best possible output),
- ``wrong article``: the reference of an item of another article,
- ``shuffled words``: that wrong reference's words shuffled (word salad of the same length),

with the stage's own scoring code (``cross_score``). The permutation floor is measured as in a run (each
reference-condition output against the references of other articles, :mod:`ruwikibench.runner.floors`), every
condition is rescaled by it, and the separation is rescaled(reference) − the best rescaled worse condition. An
embedder is fit for a metric when the separation is wide and the CIs do not overlap.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from ruwikibench.context import StageContext
from ruwikibench.dataset import Article, Dataset
from ruwikibench.evaluators.floor import FloorSide, draw_others, rescaled_estimate
from ruwikibench.evaluators.similarity import split_sentences
from ruwikibench.evaluators.stats import Estimate, bootstrap_ci
from ruwikibench.runner.floors import PER_ITEM, SEED
from ruwikibench.runner.stage import get_stage

CONDITIONS = ("reference", "wrong article", "shuffled words")
WORSE = CONDITIONS[1:]


class PlantedItem(BaseModel):
    """One item (an article's outline, a section) with its reference side and a generated side per condition."""

    article: str
    item: str
    reference: Any
    outputs: dict[str, Any]


class MetricCheck(BaseModel):
    stage: str
    metric: str
    floor: Estimate
    raw: dict[str, Estimate]
    rescaled: dict[str, Estimate]

    @property
    def separation(self) -> float:
        """rescaled(reference) − the highest rescaled worse condition (means)."""
        return self.rescaled["reference"].mean - max(self.rescaled[c].mean for c in WORSE)

    @property
    def separated(self) -> bool:
        """The reference's CI lies wholly above every worse condition's CI."""
        return all(self.rescaled["reference"].low > self.rescaled[c].high for c in WORSE)


def shuffle_words(parts: list[str], rng: random.Random) -> list[str]:
    """The words of ``parts`` shuffled across them, each part keeping its number of words."""
    words = [w for p in parts for w in p.split()]
    rng.shuffle(words)
    out, start = [], 0
    for part in parts:
        size = len(part.split())
        out.append(" ".join(words[start : start + size]))
        start += size
    return out


def _usable(article: Article) -> bool:
    return len([s for s in article.sections() if s.level >= 2]) >= 2


def outline_items(dataset: Dataset, articles: int, seed: int = SEED) -> list[PlantedItem]:
    """The first ``articles`` articles with at least two headings; the wrong article is the next one."""
    chosen = [a for a in dataset.articles if _usable(a)][:articles]
    if len(chosen) < 2:
        raise ValueError("check-metrics (outline): the dataset needs two articles with two or more headings")
    rng = random.Random(seed)
    items = []
    for index, article in enumerate(chosen):
        other = chosen[(index + 1) % len(chosen)]
        own = [s.title for s in article.sections()]
        theirs = [s.title for s in other.sections()]
        outputs = {
            "reference": (article.title, own),
            "wrong article": (article.title, theirs),
            "shuffled words": (article.title, shuffle_words(theirs, rng)),
        }
        items.append(PlantedItem(article=article.name, item="article", reference=article.name, outputs=outputs))
    return items


def _cut(text: str, sentences: int) -> str:
    return " ".join(split_sentences(text)[:sentences])


def section_items(
    dataset: Dataset, articles: int, per_article: int, sentences: int = 6, seed: int = SEED
) -> list[PlantedItem]:
    """Up to ``per_article`` sections with text from each of the first ``articles`` articles (texts cut to
    ``sentences`` sentences to keep embedding cheap); the wrong section is one of the next article."""
    chosen = []
    for article in dataset.articles:
        texts = [(s.id, _cut(s.text(), sentences)) for s in article.sections() if split_sentences(s.text())]
        if texts:
            chosen.append((article, texts[:per_article]))
        if len(chosen) == articles:
            break
    if len(chosen) < 2:
        raise ValueError("check-metrics (sections): the dataset needs two articles with section text")
    rng = random.Random(seed)
    items = []
    for index, (article, texts) in enumerate(chosen):
        other_texts = chosen[(index + 1) % len(chosen)][1]
        for position, (section_id, text) in enumerate(texts):
            wrong = other_texts[position % len(other_texts)][1]
            salad = " ".join(shuffle_words([wrong], rng))
            words = salad.split()
            salad = " ".join(" ".join(words[i : i + 12]) + "." for i in range(0, len(words), 12))
            outputs = {"reference": text, "wrong article": wrong, "shuffled words": salad}
            items.append(PlantedItem(article=article.name, item=section_id, reference=text, outputs=outputs))
    return items


def check_stage(
    stage_name: str,
    items: list[PlantedItem],
    context: StageContext,
    *,
    per_item: int = PER_ITEM,
    seed: int = SEED,
    progress: Callable[[int, int], None] | None = None,
) -> list[MetricCheck]:
    """Floor, raw and rescaled estimates of every floor metric of the stage over the planted items."""
    stage = get_stage(stage_name)
    keys = tuple(stage.floor_keys)  # type: ignore[attr-defined]
    pool = [FloorSide(article=i.article, item=i.item, generated=None, reference=i.reference) for i in items]
    draws = draw_others([(i.article, i.item) for i in items], [(p.article, p.item) for p in pool], per_item, seed)
    total = len(items) * (len(CONDITIONS) + 1)
    done = 0
    raw: dict[str, dict[str, list[float]]] = {c: {k: [] for k in keys} for c in CONDITIONS}
    floors: dict[str, list[float]] = {k: [] for k in keys}
    score: Callable[..., dict[str, float]] = stage.cross_score  # type: ignore[attr-defined]
    for item, drawn in zip(items, draws, strict=True):
        for condition in CONDITIONS:
            metrics = score(item.outputs[condition], item.reference, context)
            for key in keys:
                raw[condition][key].append(metrics[key])
            done += 1
            if progress:
                progress(done, total)
        if drawn:
            cross = [score(item.outputs["reference"], pool[j].reference, context) for j in drawn]
            for key in keys:
                floors[key].append(sum(c[key] for c in cross) / len(cross))
        done += 1
        if progress:
            progress(done, total)
    return [
        MetricCheck(
            stage=stage_name,
            metric=key,
            floor=bootstrap_ci(floors[key]),
            raw={c: bootstrap_ci(raw[c][key]) for c in CONDITIONS},
            rescaled={c: rescaled_estimate(raw[c][key], floors[key]) for c in CONDITIONS},
        )
        for key in keys
    ]


def check_rows(checks: list[MetricCheck], scale: float = 100.0) -> list[list[str]]:
    """Table rows (header first): metric, floor, rescaled per condition, separation, verdict."""
    header = ["stage", "metric", "floor", *[f"rescaled: {c}" for c in CONDITIONS], "separation", "verdict"]
    rows = [header]
    for check in checks:
        rows.append(
            [
                check.stage,
                check.metric,
                check.floor.fmt(scale),
                *[check.rescaled[c].fmt(scale) for c in CONDITIONS],
                f"{check.separation * scale:.2f}",
                "separates" if check.separated and check.separation >= 0.5 else "WEAK",
            ]
        )
    return rows
