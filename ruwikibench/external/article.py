"""A whole external article (Markdown with ``[n]`` markers + a sources map) as the writer's
``WrittenArticle``, so the writer's batch scoring (:mod:`ruwikibench.writer.score`) scores it unchanged.

Markdown: an optional ``# Title`` line, the lead (text before the first section heading), then ``##`` sections
(``###`` … nested). Articles whose sections are ``#`` headings (STORM's plain text) are read too: levels are
shifted so the top section level is 2. Sources: each number maps to a dataset source (by normalized URL, by
source id, or by snippet id); a number whose source the dataset does not hold stays in the reference list with
its URL only — it counts against the cited own share and is reported as unmatched, never an error.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, Field

from ruwikibench.dataset import Article, Dataset, Source
from ruwikibench.nodes.citations import Citation, MarkerStats, cited_numbers
from ruwikibench.writer.models import WrittenArticle, WrittenSection
from ruwikibench.writer.outline_file import items_from_headings

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def url_key(url: str) -> str:
    """A URL key that ignores scheme (http/https), 'www.', case of the host, default ports, percent-encoding,
    a trailing slash and the fragment: 'HTTPS://www.Example.org/а/' and 'http://example.org/%D0%B0' agree."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower().removeprefix("www.")
    port = f":{parts.port}" if parts.port and parts.port not in (80, 443) else ""
    path = unquote(parts.path).rstrip("/")
    query = f"?{unquote(parts.query)}" if parts.query else ""
    if not host:
        return unquote(url.strip()).rstrip("/").lower()
    return f"{host}{port}{path}{query}"


class SourceMatch(BaseModel):
    """What one number of the sources map points at in the dataset (``source_id`` None = not in the
    dataset)."""

    n: int
    given: str
    source_id: str | None = None
    source_ids: list[str] = Field(
        default_factory=list,
        description="every source the number stands for (several "
        "when a shared URL could not be narrowed down)",
    )
    snippet_ids: list[str] = Field(default_factory=list)
    how: str = Field(
        default="unmatched",
        description="url | url_snippets | url_shared | source_id | snippet_id | unmatched",
    )


_WORD = re.compile(r"\w{3,}")
MIN_OVERLAP = 0.5  # share of a recorded snippet's words that the chosen dataset snippet must hold


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold().replace("ё", "е")))


class SourceIndex:
    """Dataset sources by normalized URL (the article's own sources win over another article's)."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self.by_url: dict[str, list[Source]] = {}
        for source in dataset.sources:
            if source.url:
                self.by_url.setdefault(url_key(source.url), []).append(source)

    def match(self, n: int, given: str, article: Article, snippets: list[str] | None = None) -> SourceMatch:
        """The dataset source(s) of one number: by snippet id, source id or URL. A URL several sources share
        is narrowed down by ``snippets`` (the texts the system recorded for it): each goes to the source
        holding the dataset snippet with most of its words; when none does, the number stands for all of
        them."""
        value = given.strip()
        try:
            snippet = self.dataset.snippet(value)
            return SourceMatch(
                n=n,
                given=given,
                source_id=snippet.source_id,
                source_ids=[snippet.source_id],
                snippet_ids=[snippet.id],
                how="snippet_id",
            )
        except KeyError:
            pass
        try:
            return self._sources(n, given, [self.dataset.source(value)], "source_id")
        except KeyError:
            pass
        found = self.by_url.get(url_key(value), []) if "://" in value or value.startswith("www.") else []
        candidates = [s for s in found if s.article == article.name] or found
        if len(candidates) > 1:
            chosen = self.by_snippets(candidates, snippets or [])
            if chosen:
                return self._sources(n, given, chosen, "url_snippets")
            return self._sources(n, given, candidates, "url_shared")
        if candidates:
            return self._sources(n, given, candidates, "url")
        return SourceMatch(n=n, given=given)

    def by_snippets(self, candidates: list[Source], recorded: list[str]) -> list[Source]:
        """The candidates that best hold at least one recorded snippet (a tie or a weak overlap chooses
        none)."""
        texts = {s.id: [_words(x.text) for x in self.dataset.snippets_of_source(s.id)] for s in candidates}
        chosen: dict[str, Source] = {}
        for text in recorded:
            words = _words(text)
            if not words:
                continue
            scores = sorted(
                (
                    (max((len(words & w) / len(words) for w in texts[s.id]), default=0.0), i)
                    for i, s in enumerate(candidates)
                ),
                reverse=True,
            )
            best, index = scores[0]
            if best >= MIN_OVERLAP and (len(scores) == 1 or best > scores[1][0]):
                chosen.setdefault(candidates[index].id, candidates[index])
        return [s for s in candidates if s.id in chosen]

    def _sources(self, n: int, given: str, sources: list[Source], how: str) -> SourceMatch:
        snippet_ids = [
            s.id
            for source in sources
            for s in sorted(self.dataset.snippets_of_source(source.id), key=lambda s: s.index)
        ]
        return SourceMatch(
            n=n,
            given=given,
            source_id=sources[0].id,
            source_ids=[s.id for s in sources],
            snippet_ids=snippet_ids,
            how=how,
        )


def split_markdown(text: str) -> tuple[str, list[tuple[int, str, str]]]:
    """(text before the first heading, [(level, heading, text under it)]) of a Markdown document."""
    head: list[str] = []
    blocks: list[tuple[int, str, list[str]]] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        match = _HEADING.match(line.strip())
        if match and match.group(2).strip():
            blocks.append((len(match.group(1)), match.group(2).strip(), []))
        elif blocks:
            blocks[-1][2].append(line)
        else:
            head.append(line)
    return "\n".join(head).strip(), [(level, title, "\n".join(body).strip()) for level, title, body in blocks]


def _same(a: str, b: str) -> bool:
    return " ".join(a.casefold().replace("ё", "е").split()) == " ".join(
        b.casefold().replace("ё", "е").split()
    )


def is_title_heading(blocks: list[tuple[int, str, str]], lead: str, title: str) -> bool:
    """Is the first heading the article's title line? Yes when it is a level-1 heading that repeats the title,
    or — with no text before it — the only level-1 heading with deeper headings after it."""
    level, heading, _ = blocks[0]
    if level != 1:
        return False
    lone_top = sum(1 for b in blocks if b[0] == 1) == 1 and len(blocks) > 1
    return _same(heading, title) or (not lead and lone_top)


def written_article(
    article: Article, markdown: str, matches: list[SourceMatch], outline: str | None = None
) -> WrittenArticle:
    """The external article as a WrittenArticle: lead, outline, sections (markers kept), reference list.
    ``outline`` (Markdown headings), when given, is the outline scored instead of the article's headings."""
    lead, blocks = split_markdown(markdown)
    if blocks and is_title_heading(blocks, lead, article.title):  # its text is the lead
        lead = "\n\n".join(t for t in (lead, blocks[0][2]) if t)
        blocks = blocks[1:]
    top = min((level for level, _, _ in blocks), default=2)
    items = items_from_headings([(level + 2 - top, title) for level, title, _ in blocks])
    sections = [
        WrittenSection(
            id=item.id,
            level=item.level,
            title=item.title,
            text=body,
            cited=cited_numbers(body),
            markers=MarkerStats(kept=len(cited_numbers(body))),
        )
        for item, (_, _, body) in zip(items, blocks, strict=True)
    ]
    references = [_citation(m) for m in sorted(matches, key=lambda m: m.n)]
    cited = set(cited_numbers(lead)) | {n for s in sections for n in s.cited}
    known = {m.n for m in matches}
    stats = {
        "references": float(len(references)),
        "sections_with_text": float(sum(1 for s in sections if s.text.strip())),
        "markers_unresolved": float(len(cited - known)),
        "sources_unmatched": float(sum(1 for m in matches if m.source_id is None)),
    }
    if outline is not None:
        items = items_from_headings(
            [(level, title) for level, title, _ in split_markdown(outline)[1]], article.title
        )
    return WrittenArticle(
        title=article.title,
        lead=lead,
        lead_cited=cited_numbers(lead),
        outline=items,
        sections=sections,
        references=references,
        stats=stats,
    )


def _citation(match: SourceMatch) -> Citation:
    url = match.given if "://" in match.given else None
    if match.source_id is None:
        return Citation(n=match.n, snippet_id="", source_id="", url=url)
    first = match.snippet_ids[0] if match.snippet_ids else ""
    return Citation(n=match.n, snippet_id=first, source_id=match.source_id, url=url)


def selected_snippets(matches: list[SourceMatch]) -> list[str]:
    """The snippets an external article drew on: every snippet of each matched source (or the cited
    snippet)."""
    return list(dict.fromkeys(s for m in matches for s in m.snippet_ids))
