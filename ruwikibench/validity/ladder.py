"""The planted outputs of the validity ladder (``ruwikibench check-metrics``): outputs of known order per
item.

Rungs, best first (:data:`RUNGS`):

- ``reference``: the reference itself, verbatim (the identity rung: 100 by construction, reported, never
  decides);
- ``restated``: every reference unit (heading / sentence) stood in for by a *proxy* — different words on the
  same topic (below), nothing replaced;
- ``25%`` / ``50%`` / ``75%``: that many of the proxies replaced by proxies of other articles;
- ``title template``: generic encyclopedia headings / sentences that only mention the titles;
- ``wrong article``: every proxy replaced (100 %), the same replacement material as the partial rungs;
- ``shuffled words``: the wrong article's words shuffled (word salad of the same length).

Why proxies and not the reference's own headings and sentences: a rung that kept reference text verbatim would
be ranked correctly by an embedder of random vectors too — identical strings get identical vectors (cosine 1),
so "25 % replaced" beats "50 % replaced" by construction and the check could not fail. A proxy is a different
string with the same meaning, so only an embedder that captures meaning can rank the rungs:

- outline: a heading's proxy is the opening words of its section's text (of the first section below it that
  has text, for a heading with none of its own);
- sections: a sentence's proxy is a sentence of the section's cited source snippets (the texts the reference
  was written from) — the one sharing the most word stems with it, never a sentence equal to a reference
  sentence.

Replacements are the proxies of other articles (the next articles of the chosen ones, in order), so a replaced
unit differs from a kept one in topic only, not in kind. Which units a rung replaces is drawn once per item
from a hash of its key, and the rungs are nested (75 % replaces the 50 % units and more). Items need at least
:data:`MIN_UNITS` units, so each 25-point rung replaces at least one more unit than the one above it.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ruwikibench.dataset import Article, Dataset, Section
from ruwikibench.evaluators.similarity import split_sentences

RUNGS = ("reference", "restated", "25%", "50%", "75%", "title template", "wrong article", "shuffled words")
REPLACED = {"restated": 0.0, "25%": 0.25, "50%": 0.5, "75%": 0.75, "wrong article": 1.0}
MIN_UNITS = 4
PROXY_WORDS = 8
MAX_SENTENCE_WORDS = 60
OUTLINE_TEMPLATE = (
    "{title}: история",
    "{title}: описание",
    "Описание",
    "Применение",
    "Критика",
    "Примечания",
    "Литература",
    "Ссылки",
)
SECTION_TEMPLATE = (
    "Раздел «{section}» статьи «{title}» посвящён этой теме.",
    "В нём приводятся основные сведения о предмете «{title}».",
    "Подробности изложены в источниках, указанных в примечаниях.",
    "Этот раздел статьи «{title}» можно дополнить.",
)


class PlantedItem(BaseModel):
    """One item (an article's outline, a section): its reference side and the generated side of every rung."""

    article: str
    item: str
    reference: Any
    outputs: dict[str, Any]


def item_rng(*keys: str) -> random.Random:
    """A generator seeded from a hash of the item's keys (independent of the order items are built in)."""
    digest = hashlib.sha256("\x1f".join(keys).encode("utf-8")).hexdigest()
    return random.Random(int(digest[:16], 16))


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


def replaced_count(fraction: float, units: int) -> int:
    """How many of ``units`` a rung replacing ``fraction`` of them replaces (half rounds up)."""
    return int(fraction * units + 0.5)


def ladder(proxies: Sequence[str], foreign: Sequence[str], order: Sequence[int]) -> dict[str, list[str]]:
    """The replacement rungs: position ``order[i]`` takes ``foreign[order[i]]`` for the first ``k`` of
    ``order``."""
    rungs = {}
    for rung, fraction in REPLACED.items():
        swap = set(order[: replaced_count(fraction, len(proxies))])
        rungs[rung] = [foreign[i] if i in swap else p for i, p in enumerate(proxies)]
    return rungs


def _stems(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r"\w+", text.casefold()) if len(w) > 2}


def _words(text: str, limit: int) -> str:
    return " ".join(text.split()[:limit])


# --------------------------------------------------------------------------- outline


def _openings(text: str, words: int) -> list[str]:
    """Stand-ins cut from a text, best first: its opening words, the opening words from each later sentence
    on, then ``words``-word windows further into it."""
    text = " ".join(text.split())
    if not text:
        return []
    sentences = split_sentences(text)
    tokens = text.split()
    starts = [_words(" ".join(sentences[k:]), words) for k in range(len(sentences))]
    windows = [" ".join(tokens[k : k + words]) for k in range(words, len(tokens) - words // 2, words)]
    return list(dict.fromkeys(starts + windows))


def proxy_candidates(section: Section, words: int = PROXY_WORDS) -> list[str]:
    """What may stand in for the section's heading, best first: :func:`_openings` of its own text, or, when it
    has none, of the text of the sections below it (document order)."""
    own = _openings(section.text(), words)
    if own:
        return own
    return [opening for node in list(section.walk())[1:] for opening in _openings(node.text(), words)]


def heading_proxies(article: Article, words: int = PROXY_WORDS) -> list[tuple[str, str]]:
    """(heading, proxy) for every heading below the title that gets a proxy, in document order; proxies are
    distinct. A heading with text of its own takes the opening words of that text; one without (a parent of
    subsections), the deepest first, then takes the first stand-in below it that no heading took — the
    opening of a later sentence of its first subsection, say — so a parent and its first child never share
    one string (which would plant the same unit twice and shrink the replacements to the distinct ones). A
    candidate equal to a heading of the article is skipped; a heading left with no candidate is dropped."""
    titles = {s.title for s in article.sections()}
    headings = [s for s in article.sections() if s.level >= 2]
    with_text = [s for s in headings if s.text().strip()]
    parents = sorted((s for s in headings if not s.text().strip()), key=lambda s: -s.level)  # stable
    taken: dict[str, str] = {}
    for section in with_text + parents:
        used = set(taken.values())
        fresh = (c for c in proxy_candidates(section, words) if c not in used and c not in titles)
        if (proxy := next(fresh, None)) is not None:
            taken[section.id] = proxy
    return [(s.title, taken[s.id]) for s in headings if s.id in taken]


def _foreign(own: int, pools: Sequence[Sequence[str]], count: int, exclude: set[str]) -> list[str]:
    """Up to ``count`` distinct units of the other pools, the next pool after ``own`` first (wrapping
    around)."""
    found: list[str] = []
    for step in range(1, len(pools)):
        for unit in pools[(own + step) % len(pools)]:
            if len(found) == count:
                return found
            if unit not in exclude and unit not in found:
                found.append(unit)
    return found


def outline_items(dataset: Dataset, articles: int, stage: str) -> list[PlantedItem]:
    """The ladder for the first ``articles`` articles with at least :data:`MIN_UNITS` headings that have text;
    replacements are the proxies of the dataset's other articles (the following ones first). An article with
    more headings than the others can replace keeps its first ones only (the reference keeps them all)."""
    proxied = [(a, heading_proxies(a)) for a in dataset.articles]
    chosen = [i for i, (_, pairs) in enumerate(proxied) if len(pairs) >= MIN_UNITS][:articles]
    if len(chosen) < 2:
        raise ValueError(
            f"check-metrics (outline): the dataset needs two articles with {MIN_UNITS}+ headings"
        )
    pools = [[proxy for _, proxy in pairs] for _, pairs in proxied]
    titles = [{s.title for s in a.sections()} for a, _ in proxied]
    return [
        _outline_item(*proxied[i], _foreign(i, pools, len(pools[i]), set(pools[i]) | titles[i]), stage)
        for i in chosen
    ]


def _outline_item(
    article: Article, pairs: list[tuple[str, str]], foreign: list[str], stage: str
) -> PlantedItem:
    own = [title for title, _ in pairs]
    proxies = [proxy for _, proxy in pairs][: len(foreign)]
    rng = item_rng(article.name, stage)  # the stage's name seeds its draws
    rungs: dict[str, list[str]] = {
        "reference": own,
        **ladder(proxies, foreign, rng.sample(range(len(proxies)), len(proxies))),
    }
    rungs["title template"] = [t.format(title=article.title) for t in OUTLINE_TEMPLATE]
    rungs["shuffled words"] = shuffle_words(rungs["wrong article"], rng)
    outputs = {rung: (article.title, rungs[rung]) for rung in RUNGS}
    return PlantedItem(article=article.name, item="article", reference=article.name, outputs=outputs)


# --------------------------------------------------------------------------- sections


def _sentence(text: str) -> str:
    """``text`` cut to :data:`MAX_SENTENCE_WORDS` words, ending in terminal punctuation (so joined proxies
    split back into the same sentences)."""
    cut = _words(text, MAX_SENTENCE_WORDS)
    return cut if cut[-1:] in (".", "!", "?", "…") and cut == text else f"{cut.rstrip(' .,;:—-')}."


def _candidates(snippets: Sequence[str], banned: set[str]) -> list[str]:
    """Sentences of the snippets usable as proxies: 4+ words, starting with a capital letter or a digit, not a
    reference sentence, one sentence when split again."""
    found: list[str] = []
    for text in snippets:
        for sentence in map(_sentence, split_sentences(text)):
            fresh = (
                sentence not in banned
                and sentence not in found
                and sentence[:1].isupper() | sentence[:1].isdigit()
            )
            if len(sentence.split()) >= 4 and fresh and split_sentences(sentence) == [sentence]:
                found.append(sentence)
    return found


def sentence_proxies(sentences: Sequence[str], snippets: Sequence[str]) -> list[str] | None:
    """For each reference sentence the unused snippet sentence sharing the most word stems with it (ties: the
    first); None when the snippets hold fewer usable sentences than the reference."""
    pool = _candidates(snippets, set(sentences))
    if len(pool) < len(sentences):
        return None
    stems = [_stems(c) for c in pool]
    used: set[int] = set()
    chosen = []
    for sentence in sentences:
        own = _stems(sentence)
        best = max((i for i in range(len(pool)) if i not in used), key=lambda i: len(own & stems[i]))
        used.add(best)
        chosen.append(pool[best])
    return chosen


@dataclass(frozen=True)
class _Section:
    article: Article
    id: str
    title: str
    sentences: list[str]
    proxies: list[str]


def _article_sections(dataset: Dataset, article: Article, per_article: int, sentences: int) -> list[_Section]:
    found = []
    for section in article.sections():
        cut = split_sentences(section.text())[:sentences]
        if len(cut) < sentences:
            continue
        snippets = [s.text for s in dataset.section_snippets(article, section)]
        proxies = sentence_proxies(cut, snippets)
        if proxies is not None:
            found.append(
                _Section(article=article, id=section.id, title=section.title, sentences=cut, proxies=proxies)
            )
        if len(found) == per_article:
            break
    return found


def _salad(sentences: list[str], rng: random.Random) -> str:
    """The sentences' words shuffled across them, as as many capitalised sentences without inner full
    stops."""
    parts = [" ".join(w.rstrip(".!?…") for w in part.split()) for part in shuffle_words(sentences, rng)]
    return " ".join(f"{part[:1].upper()}{part[1:]}." for part in parts)


def section_items(
    dataset: Dataset, articles: int, per_article: int, sentences: int = MIN_UNITS
) -> list[PlantedItem]:
    """The ladder for up to ``per_article`` sections of each of the first ``articles`` articles that have
    ``sentences`` sentences and as many usable source sentences; replacements come from the next articles."""
    if sentences < MIN_UNITS:
        raise ValueError(f"check-metrics (sections): --sentences must be at least {MIN_UNITS}")
    chosen: list[list[_Section]] = []
    for article in dataset.articles:
        if found := _article_sections(dataset, article, per_article, sentences):
            chosen.append(found)
        if len(chosen) == articles:
            break
    if len(chosen) < 2:
        raise ValueError("check-metrics (sections): the dataset needs two articles with sourced section text")
    pools = [[p for s in group for p in s.proxies] for group in chosen]
    items = []
    for index, group in enumerate(chosen):
        for section in group:
            foreign = _foreign(index, pools, sentences, {*section.proxies, *section.sentences})
            if len(foreign) < sentences:
                raise ValueError("check-metrics (sections): the other articles hold too few source sentences")
            items.append(_section_item(section, foreign))
    return items


def _section_item(section: _Section, foreign: list[str]) -> PlantedItem:
    rng = item_rng(section.article.name, section.id)
    units = len(section.sentences)
    rungs: dict[str, Any] = ladder(section.proxies, foreign, rng.sample(range(units), units))
    template = [t.format(section=section.title, title=section.article.title) for t in SECTION_TEMPLATE]
    texts: dict[str, str] = {rung: " ".join(parts) for rung, parts in rungs.items()}
    texts["reference"] = " ".join(section.sentences)
    texts["title template"] = " ".join(template[i % len(template)] for i in range(units))
    texts["shuffled words"] = _salad(rungs["wrong article"], rng)
    return PlantedItem(
        article=section.article.name,
        item=section.id,
        reference=texts["reference"],
        outputs={rung: texts[rung] for rung in RUNGS},
    )
