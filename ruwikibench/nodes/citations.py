"""Citations of the writer: local ``[n]`` markers -> one global, deterministic numbering of snippets.

A section writer is shown numbered texts (``[1] …``, ``[2] …``); each local number stands for one or more
snippets (:class:`Shown`). After writing, every marker is checked against what that writer was shown:
numbers it was not shown are removed and counted, the rest are renumbered globally — one number per snippet,
in order of first citation through the article (sections in document order) — and one reference list is built
with each snippet's source URL and label when known. A marker therefore never points at a text the writer
did not see. The lead, written last from the body, may keep only markers present in the body it was shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from pydantic import BaseModel, Field

from ruwikibench.dataset import Dataset
from ruwikibench.prompts.render import numbered_texts

# [1], [1, 2], [1; 3], [1-3], [1–3]; a run like [1][2] is several markers next to each other.
MARKER = re.compile(r"\[(\s*\d{1,4}(?:\s*(?:[,;]|[-–—])\s*\d{1,4})*\s*)\]")
_RANGE = re.compile(r"(\d{1,4})\s*[-–—]\s*(\d{1,4})")
_MAX_RANGE = 20


class Shown(BaseModel):
    """A numbered text shown to a writer: local number ``n`` stands for these snippets."""

    n: int
    snippet_ids: list[str]


class Citation(BaseModel):
    """One entry of the article's reference list: a snippet the writers were shown and cited."""

    n: int = Field(description="global number, as in the text's [n] markers")
    snippet_id: str
    source_id: str
    url: str | None = None
    label: str = ""
    text: str = Field(default="", description="the snippet text (what the writer read)")


class MarkerStats(BaseModel):
    """Counts of one text's markers: kept, removed as out of range (not shown to the writer)."""

    kept: int = 0
    removed: int = 0
    removed_numbers: list[int] = Field(default_factory=list)


def marker_numbers(body: str) -> list[int]:
    """The numbers inside one marker body ('1, 3-4' -> [1, 3, 4]); a range longer than 20 counts as its
    ends."""
    numbers: list[int] = []
    for part in re.split(r"\s*[,;]\s*", body.strip()):
        match = _RANGE.fullmatch(part.strip())
        if match:
            low, high = int(match.group(1)), int(match.group(2))
            numbers += list(range(low, high + 1)) if 0 <= high - low <= _MAX_RANGE else [low, high]
        elif part.strip().isdigit():
            numbers.append(int(part))
    return numbers


def cited_numbers(text: str) -> list[int]:
    """Every number cited in ``text``, in order of first appearance, without duplicates."""
    seen: dict[int, None] = {}
    for match in MARKER.finditer(text):
        for number in marker_numbers(match.group(1)):
            seen.setdefault(number, None)
    return list(seen)


def attach_lone_markers(text: str) -> str:
    """Marker-only lines ("[1]", "[1][2]") joined to a sentence: small models often write the material number
    on a line of its own before the paragraph it sources, so it goes to the end of the next text line (or of
    the previous one when none follows); numbers the target line already cites are not repeated."""
    lines = text.split("\n")
    lone = [bool(MARKER.search(line)) and not MARKER.sub("", line).strip(" ,;.") for line in lines]
    prose = [j for j, line in enumerate(lines) if line.strip() and not lone[j]]
    out = list(lines)
    for index, line in enumerate(lines):
        if not lone[index]:
            continue
        after = next((j for j in prose if j > index), None)
        target = after if after is not None else next((j for j in reversed(prose) if j < index), None)
        if target is None:
            continue
        marker = "".join(m.group(0) for m in MARKER.finditer(line))
        if not set(cited_numbers(marker)) <= set(cited_numbers(out[target])):
            out[target] = out[target].rstrip() + " " + marker
        out[index] = ""
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def _render(numbers: Iterable[int]) -> str:
    return "".join(f"[{n}]" for n in numbers)


def rewrite_markers(text: str, mapping: Callable[[int], list[int] | None]) -> tuple[str, MarkerStats]:
    """Replace each marker by the markers of ``mapping(n)``; ``None`` means out of range (removed, counted).

    A marker left with no number is deleted together with the space before it.
    """
    stats = MarkerStats()

    def replace(match: re.Match[str]) -> str:
        out: dict[int, None] = {}
        for number in marker_numbers(match.group(1)):
            target = mapping(number)
            if target is None:
                stats.removed += 1
                stats.removed_numbers.append(number)
                continue
            stats.kept += 1
            for each in target:
                out.setdefault(each, None)
        return _render(out) if out else "\x00"

    rewritten = MARKER.sub(replace, text)
    rewritten = re.sub(r"[ \t]*\x00", "", rewritten)
    return rewritten, stats


class SectionDraft(BaseModel):
    """A section as written, before global numbering: its text with local markers and what it was shown."""

    section_id: str
    text: str
    shown: list[Shown] = Field(default_factory=list)


class NumberedSection(BaseModel):
    section_id: str
    text: str = Field(description="text with global [n] markers")
    cited: list[int] = Field(default_factory=list, description="global numbers cited, in order")
    shown_snippets: list[str] = Field(default_factory=list, description="every snippet the writer was shown")
    markers: MarkerStats = Field(default_factory=MarkerStats)


class Numbering:
    """Assigns global numbers to snippets in order of first citation; builds the reference list."""

    def __init__(self) -> None:
        self.number_of: dict[str, int] = {}

    def number(self, snippet_id: str) -> int:
        if snippet_id not in self.number_of:
            self.number_of[snippet_id] = len(self.number_of) + 1
        return self.number_of[snippet_id]

    def section(self, draft: SectionDraft) -> NumberedSection:
        """Renumber one section's markers; local numbers not shown to its writer are removed."""
        local = {item.n: item.snippet_ids for item in draft.shown}

        def mapping(n: int) -> list[int] | None:
            ids = local.get(n)
            return [self.number(s) for s in ids] if ids else None

        text, stats = rewrite_markers(draft.text, mapping)
        shown = list(dict.fromkeys(s for item in draft.shown for s in item.snippet_ids))
        return NumberedSection(
            section_id=draft.section_id,
            text=text,
            cited=cited_numbers(text),
            shown_snippets=shown,
            markers=stats,
        )

    def references(self, dataset: Dataset | None, texts: dict[str, str] | None = None) -> list[Citation]:
        """The reference list in number order; URL and label from the dataset when it knows the source."""
        return [citation_for(n, sid, dataset, (texts or {}).get(sid)) for sid, n in self.number_of.items()]


def restrict_markers(text: str, allowed: set[int]) -> tuple[str, MarkerStats]:
    """Keep only markers whose number is in ``allowed`` (the lead may cite what the body it saw cites)."""
    return rewrite_markers(text, lambda n: [n] if n in allowed else None)


def strip_markers(text: str) -> tuple[str, MarkerStats]:
    return rewrite_markers(text, lambda n: None)


def citation_for(n: int, snippet_id: str, dataset: Dataset | None, text: str | None = None) -> Citation:
    """A reference entry for a snippet: source URL, and the label of the footnote that cites the source."""
    source_id = snippet_id.split("#", 1)[0]
    url, label, body = None, "", text or ""
    if dataset is not None:
        try:
            snippet = dataset.snippet(snippet_id)
            source = dataset.source(snippet.source_id)
        except KeyError:
            return Citation(n=n, snippet_id=snippet_id, source_id=source_id, text=body)
        source_id, url, body = source.id, source.url, text or snippet.text
        label = _label(dataset, source.article, source.footnote_id)
    return Citation(n=n, snippet_id=snippet_id, source_id=source_id, url=url, label=label, text=body)


def _label(dataset: Dataset, article_name: str, footnote_id: str) -> str:
    """The bibliographic label of a source (its footnote's text), or '' when unknown."""
    try:
        article = dataset.article(article_name)
    except KeyError:
        return ""
    for reference in article.references:
        if reference.id == footnote_id:
            return reference.label
    return ""


def numbered_block(items: list[tuple[int, str]], chars: int) -> str:
    """The numbered texts a writer is shown: '[n] text' blocks separated by blank lines, each cut to
    ``chars``."""
    return numbered_texts([text for _, text in items], chars, numbers=[n for n, _ in items])
