"""Outline evaluators: heading-embedding P/R/F1 (paper), STORM's heading soft recall, structure statistics.

Pure functions over heading lists and their embeddings. Which headings take part is explicit:

- :class:`HeadingSelection` picks the REFERENCE headings by level (the article title is level 1, h2 = 2, …)
  and says whether the title counts. The default (``min_level=2``, no title) scores the section structure
  only: the title is an input of the stage, so a generated heading that repeats it would earn a free perfect
  match. The GENERATED side takes every parsed heading, except (default ``drop_title_echo``) a heading that
  merely repeats the article title.
- ``AUTHORS`` is the authors' variant: every reference heading including the h1 title, every generated
  heading. With ``authors_prompt`` (``EmbedderConfig.authors_prompt``; the authors' evaluator:
  ``'Classification'``) its headings are encoded as ``prompt + heading``, no task prefix, as their
  ``encode(..., prompt=...)`` does.

Cosines come from L2-normalized vectors (``Embedder.embed`` normalizes); note that e5-family encoders give
unrelated short texts cosines around 0.7–0.8, so absolute values are compressed towards 1.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from ruwikibench.dataset import Article
from ruwikibench.evaluators.outline_structure import structure_score
from ruwikibench.models.embeddings import Embedder, embed_prompted, normalize

if TYPE_CHECKING:  # numpy is imported where it is used: a run loads this module before its first request
    import numpy as np


class HeadingSelection(BaseModel):
    """Which headings take part in scoring."""

    model_config = ConfigDict(frozen=True)

    min_level: int = 2
    max_level: int | None = None
    include_title: bool = False
    drop_title_echo: bool = True


DEFAULT = HeadingSelection()
AUTHORS = HeadingSelection(min_level=1, include_title=True, drop_title_echo=False)
FLAT_LEVEL = 2
"""The level given to headings scored without levels (a plain list of titles: one flat level)."""


class PRF(BaseModel):
    precision: float
    recall: float
    f1: float


def heading_prf(generated: np.ndarray, reference: np.ndarray) -> PRF:
    """P = mean over generated rows of the best cosine to a reference row; R the reverse; F1 harmonic.

    Both inputs are (n, d) embedding matrices; they are L2-normalized here. An empty side gives 0/0/0.
    """
    if len(generated) == 0 or len(reference) == 0:
        return PRF(precision=0.0, recall=0.0, f1=0.0)
    sims = normalize(generated) @ normalize(reference).T
    precision = float(sims.max(axis=1).mean())
    recall = float(sims.max(axis=0).mean())
    denom = precision + recall
    f1 = 2 * precision * recall / denom if denom > 0 else 0.0
    return PRF(precision=precision, recall=recall, f1=f1)


def soft_cardinality(vectors: np.ndarray) -> float:
    """Soft cardinality (Fränti & Mariescu-Istodor 2023, as in STORM): sum_i 1 / sum_j cos(i, j)."""
    if len(vectors) == 0:
        return 0.0
    unit = normalize(vectors)
    return float((1.0 / (unit @ unit.T).sum(axis=1)).sum())


def heading_soft_recall(
    reference: Sequence[str], generated: Sequence[str], embed: dict[str, np.ndarray]
) -> float:
    """STORM's heading soft recall: card(G ∩ P) / card(G), card(G ∩ P) = card(G) + card(P) − card(G ∪ P).

    Headings are taken as sets of strings (duplicates collapse, as in STORM); ``embed`` maps each string
    to its vector. No generated heading gives 0; an empty reference gives 0.
    """
    import numpy as np

    ref_set, gen_set = list(dict.fromkeys(reference)), list(dict.fromkeys(generated))
    if not gen_set or not ref_set:
        return 0.0
    union = list(dict.fromkeys([*ref_set, *gen_set]))

    def card(items: list[str]) -> float:
        return soft_cardinality(np.stack([embed[t] for t in items]))

    card_g = card(ref_set)
    return (card_g + card(gen_set) - card(union)) / card_g


def structure_stats(levels: Sequence[int], deep_after: int = 3) -> dict[str, float]:
    """Number of headings, maximum level, share of headings deeper than ``deep_after``."""
    if not levels:
        return {"headings": 0.0, "max_depth": 0.0, "deep_share": 0.0}
    return {
        "headings": float(len(levels)),
        "max_depth": float(max(levels)),
        "deep_share": sum(1 for level in levels if level > deep_after) / len(levels),
    }


def _norm(text: str) -> str:
    return re.sub(r"[\W_]+", " ", text.casefold()).strip()


def reference_outline(article: Article, selection: HeadingSelection = DEFAULT) -> list[tuple[int, str]]:
    """(level, title) of the reference headings chosen by ``selection`` (the title is the level-1 root
    section), in document order."""
    chosen = []
    for section in article.sections():
        if section.level == 1:
            if selection.include_title:
                chosen.append((1, section.title))
            continue
        if section.level >= selection.min_level and (
            selection.max_level is None or section.level <= selection.max_level
        ):
            chosen.append((section.level, section.title))
    return chosen


def reference_headings(article: Article, selection: HeadingSelection = DEFAULT) -> list[str]:
    """Reference heading titles chosen by ``selection`` (:func:`reference_outline` without levels)."""
    return [title for _, title in reference_outline(article, selection)]


def generated_outline(
    headings: Sequence[tuple[int, str]], article_title: str, selection: HeadingSelection = DEFAULT
) -> list[tuple[int, str]]:
    """Generated (level, title) headings; with ``drop_title_echo`` the ones equal to the article title are
    left out."""
    if not selection.drop_title_echo:
        return list(headings)
    title = _norm(article_title)
    return [(level, t) for level, t in headings if _norm(t) != title]


def generated_headings(
    titles: Sequence[str], article_title: str, selection: HeadingSelection = DEFAULT
) -> list[str]:
    """Generated heading titles; with ``drop_title_echo`` the ones equal to the article title are left out."""
    return [t for _, t in generated_outline([(FLAT_LEVEL, t) for t in titles], article_title, selection)]


class OutlineScore(BaseModel):
    """Everything the outline stage reports for one article."""

    metrics: dict[str, float]
    info: dict[str, object]


SIMILARITY_KEYS = (
    "precision",
    "recall",
    "f1",
    "soft_recall",
    "precision_authors",
    "recall_authors",
    "f1_authors",
    "structure_f1",
)


class Similarity(BaseModel):
    """The embedding metrics of one outline against one reference outline, and how many headings took part
    (``structure``: the counts behind structure F1)."""

    metrics: dict[str, float]
    generated_scored: int
    reference_scored: int
    structure: dict[str, int] = {}


def _heading_vectors(
    sides: dict[str, tuple[list[str], list[str]]], embedder: Embedder, authors_prompt: str | None
) -> dict[str, dict[str, np.ndarray]]:
    """Per variant suffix, heading -> vector. Without a prompt one symmetric call serves both variants (as
    before the prompt existed); with one, the authors' headings are embedded apart as ``prompt + heading``."""
    import numpy as np

    groups: list[tuple[str | None, list[str]]] = (
        [(None, list(sides))] if authors_prompt is None else [(None, [""]), (authors_prompt, ["_authors"])]
    )
    out: dict[str, dict[str, np.ndarray]] = {}
    for prompt, suffixes in groups:
        texts = list(dict.fromkeys(t for s in suffixes for t in (*sides[s][0], *sides[s][1])))
        vectors = embed_prompted(embedder, texts, prompt) if texts else np.zeros((0, 1), dtype=np.float32)
        embed = dict(zip(texts, vectors, strict=True))
        out.update({s: embed for s in suffixes})
    return out


def outline_similarity(
    titles: Sequence[str],
    own_title: str,
    reference: Article,
    embedder: Embedder,
    selection: HeadingSelection = DEFAULT,
    authors_prompt: str | None = None,
    levels: Sequence[int] | None = None,
) -> Similarity:
    """Heading P/R/F1 under ``selection`` and the authors' variant, soft recall and structure F1, of generated
    heading ``titles`` (written for the article titled ``own_title``, whose echoes are dropped) against the
    outline of ``reference`` — the article's own for the metric, another article's for its permutation floor.
    ``levels``: the generated headings' levels (None: one flat level, :data:`FLAT_LEVEL`); only structure F1
    reads them. ``authors_prompt``: the authors' variant encodes ``prompt + heading`` (see
    :func:`embed_prompted`)."""
    import numpy as np

    variants = {"": selection, "_authors": AUTHORS}
    written = list(zip(levels if levels is not None else [FLAT_LEVEL] * len(titles), titles, strict=True))
    generated = {suffix: generated_outline(written, own_title, sel) for suffix, sel in variants.items()}
    outlines = {suffix: reference_outline(reference, sel) for suffix, sel in variants.items()}
    sides = {
        suffix: ([t for _, t in generated[suffix]], [t for _, t in outlines[suffix]]) for suffix in variants
    }
    vectors = _heading_vectors(sides, embedder, authors_prompt)

    def matrix(items: list[str], embed: dict[str, np.ndarray]) -> np.ndarray:
        return np.stack([embed[t] for t in items]) if items else np.zeros((0, 1), dtype=np.float32)

    metrics: dict[str, float] = {}
    for suffix, (gen, ref) in sides.items():
        prf = heading_prf(matrix(gen, vectors[suffix]), matrix(ref, vectors[suffix]))
        metrics.update(
            {f"precision{suffix}": prf.precision, f"recall{suffix}": prf.recall, f"f1{suffix}": prf.f1}
        )
    gen, ref = sides[""]
    metrics["soft_recall"] = heading_soft_recall(ref, gen, vectors[""])
    sims = (
        normalize(matrix(gen, vectors[""])) @ normalize(matrix(ref, vectors[""])).T
        if gen and ref
        else np.zeros((len(gen), len(ref)), dtype=np.float32)
    )
    structure = structure_score(
        [level for level, _ in generated[""]], [level for level, _ in outlines[""]], sims
    )
    metrics["structure_f1"] = structure.f1
    return Similarity(
        metrics=metrics, generated_scored=len(gen), reference_scored=len(ref), structure=structure.info()
    )


def score_outline(
    article: Article,
    generated: Sequence[tuple[int, str]],
    embedder: Embedder,
    selection: HeadingSelection = DEFAULT,
    authors_prompt: str | None = None,
) -> OutlineScore:
    """Score (level, title) headings against the article's reference outline.

    Metrics: ``precision``/``recall``/``f1``, ``soft_recall`` and ``structure_f1`` (levels as written) under
    ``selection``; ``*_authors`` under the authors' variant (see :func:`outline_similarity`, also for
    ``authors_prompt``); structure stats
    ``gen_*`` (all generated headings, levels as written) and ``ref_*`` (every reference heading, the title
    counted as level 1); ``entity_*`` (:func:`heading_entity_scores`, absent when the reference headings name
    no entity).
    """
    titles = [t for _, t in generated]
    levels = [level for level, _ in generated]
    similarity = outline_similarity(
        titles, article.title, article, embedder, selection, authors_prompt, levels=levels
    )
    metrics = dict(similarity.metrics)
    for key, value in structure_stats([level for level, _ in generated]).items():
        metrics[f"gen_{key}"] = value
    for key, value in structure_stats([s.level for s in article.sections()]).items():
        metrics[f"ref_{key}"] = value
    info: dict[str, object] = {
        "selection": selection.model_dump(),
        "generated_scored": similarity.generated_scored,
        "reference_scored": similarity.reference_scored,
        "empty_outline": not titles,
        "structure": similarity.structure,
    }
    metrics.update(heading_entity_scores(titles, article, selection))
    return OutlineScore(metrics=metrics, info=info)


def heading_entity_scores(
    titles: Sequence[str], reference: Article, selection: HeadingSelection = DEFAULT
) -> dict[str, float]:
    """Entity recall / precision / F1 of the generated headings (joined, title echoes dropped) against the
    reference headings under ``selection`` (joined); no key when the reference headings name no entity."""
    from ruwikibench.evaluators.entities import entity_scores, headings_text

    generated = generated_headings(titles, reference.title, selection)
    return entity_scores(headings_text(generated), headings_text(reference_headings(reference, selection)))
