"""A robust parser from model text to a heading tree.

Models asked for a Markdown outline answer in many shapes: ``#`` headings (sometimes without the space,
sometimes with bold or numbering inside), numbered lines (``1.``, ``1.2.``, ``2)``, ``IV.``), bold lines
(``**История**``), bullet lists, code fences around the whole answer, an introduction ("Вот план статьи:"),
explanations after each heading, and the ``**END**`` marker the merge prompt asks for. The rules:

- Everything after an END marker (``**END**``, ``END``, ``**КОНЕЦ**``, alone or at the end of a line) is cut.
- Code fence lines (```` ``` ````, ``~~~``), horizontal rules and table rows are ignored; fenced content is
  kept.
- ``#``-lines are headings of level = number of ``#`` (1..6), as written — depth statistics need the
  model's own levels.
- Numbered lines are headings of level ``base + depth`` where ``depth`` is the number of number components
  (``1.2.`` → 2; roman numerals → 1) and ``base`` is the level of the last ``#`` heading (0 before any).
- A line that is only bold text (``**Title**`` / ``__Title__``, optional colon) is a heading of level
  ``base + 1``.
- ``1. **Title**: explanation`` / ``- **Title** — explanation``: the bold part is the title, the rest is
  prose.
- Bullets (``-``, ``*``, ``+``, ``•``) are headings when ``bullets="headings"``, or, with the default
  ``"auto"``, when the text has fewer than two other headings (a title plus a list: the list IS the outline;
  with ``#``/numbered/bold structure present, bullets are notes under it, as the authors' ``#``-only reading
  treats them); a bullet's level is one below the last non-bullet heading plus its indentation depth.
  Bullets that are not headings are recorded as dropped prose.
- A candidate with more than ``max_words`` words, or ending like a sentence after several words, is prose.
- Anything else is prose: kept in ``dropped`` for inspection, never a heading.
Titles are cleaned of emphasis, links, numbering, "Раздел 2:"-style prefixes and trailing colons/periods.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

BulletPolicy = Literal["auto", "headings", "prose"]

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_END_WORD = r"(?:END|КОНЕЦ|КОНЕЦ ПЛАНА|END OF OUTLINE)"
_END_LINE = re.compile(rf"^[\s#>*_`]*{_END_WORD}[\s*_`.!]*$", re.IGNORECASE)
_END_INLINE = re.compile(rf"(\*\*|__)\s*{_END_WORD}\s*(\*\*|__)", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(```|~~~)")
_RULE = re.compile(r"^\s*([-*_=])(\s*\1){2,}\s*$")
_HASH = re.compile(r"^\s*(#{1,9})\s*(.*?)\s*#*\s*$")
_NUMBER = re.compile(r"^\s*(\d{1,3}(?:\.\d{1,3})+\.?|\d{1,3}[.)])\s+(.+)$")
_ROMAN = re.compile(r"^\s*([IVXLC]{1,6})[.)]\s+(.+)$")
_BULLET = re.compile(r"^(\s*)[-*+•–]\s+(.+)$")
_BOLD_LINE = re.compile(r"^\s*(\*\*|__)(.+?)\1\s*[:：.]?\s*$")
_BOLD_LEAD = re.compile(r"^\s*(\*\*|__)(.+?)\1\s*(?:[:：—–-]\s*)?(.*)$")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
_PREFIX = re.compile(
    r"^(?:(?:раздел|глава|часть|подраздел|пункт|section|chapter|part)\s*\d+(?:\.\d+)*\s*[.:)—–-]\s*"
    r"|(?:заголовок|heading|title|название)\s*\d*\s*[:—–-]\s*)",
    re.IGNORECASE,
)
_LEAD_NUMBER = re.compile(r"^\s*(?:\d{1,3}(?:\.\d{1,3})*[.)]?|[IVXLC]{1,6}[.)])\s+")
_META = re.compile(
    r"^(?P<adj>(?:итоговый|объединённый|объединенный|общий|окончательный|финальный|полный|мини-?)\s*)?"
    r"(?P<word>план|структура|outline|оглавление)(?P<qual>\s+(?:статьи|раздела|article|section))?\s*(?P<colon>[:：])?\s*",
    re.IGNORECASE,
)


class Heading(BaseModel):
    """One heading of a parsed outline; ``level`` as written by the model (``#`` = 1)."""

    level: int
    title: str


class OutlineNode(BaseModel):
    level: int
    title: str
    children: list[OutlineNode] = Field(default_factory=list)


class ParsedOutline(BaseModel):
    headings: list[Heading] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list, description="non-empty lines that were not headings")
    ended: bool = Field(default=False, description="an END marker was found (the answer was not cut off)")

    def markdown(self) -> str:
        return to_markdown(self.headings)


def clean_title(raw: str) -> str:
    """Strip emphasis, links, numbering, 'Раздел 2:'-style prefixes and trailing punctuation."""
    text = _LINK.sub(r"\1", raw)
    text = _EMPHASIS.sub("", text).strip()
    text = _LEAD_NUMBER.sub("", text)
    stripped = _PREFIX.sub("", text).strip()
    text = stripped or text
    text = re.sub(r"\s+", " ", text).strip(" \t:：;,-–—")
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1].rstrip()
    return text


def _strip_meta(title: str) -> str:
    """'План статьи: Python' -> 'Python'; 'План статьи' -> '' (model talk); a bare 'Структура' stays."""
    match = _META.match(title)
    if not match:
        return title
    rest = title[match.end() :].strip(" «»\"'")
    talk = match.group("adj") or match.group("qual") or match.group("word").lower() != "структура"
    if match.group("colon") or (talk and not rest):
        return rest
    return title


def _looks_like_prose(title: str, max_words: int) -> bool:
    words = title.split()
    if len(words) > max_words:
        return True
    return len(words) >= 6 and title.rstrip().endswith((".", "!", "?")) and not title.endswith("..")


def _cut_at_end(text: str) -> tuple[str, bool]:
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if _END_LINE.match(line):
            return "\n".join(lines[:i]), True
        inline = _END_INLINE.search(line)
        if inline:
            return "\n".join([*lines[:i], line[: inline.start()]]), True
    return text, False


def _indent_width(whitespace: str) -> int:
    return len(whitespace.replace("\t", "    "))


class _Candidate(BaseModel):
    kind: Literal["hash", "number", "bold", "bullet"]
    title: str
    depth: int = 1
    line: str


def _classify(line: str, max_words: int) -> _Candidate | None:
    """A heading candidate for one line, or None for prose."""
    match = _HASH.match(line)
    if match and match.group(2):
        bold = _BOLD_LEAD.match(match.group(2))
        raw = bold.group(2) if bold and bold.group(3) and len(bold.group(3).split()) > 2 else match.group(2)
        return _Candidate(kind="hash", title=raw, depth=len(match.group(1)), line=line)
    for kind, pattern in (("number", _NUMBER), ("number", _ROMAN), ("bullet", _BULLET)):
        match = pattern.match(line)
        if not match:
            continue
        marker, body = match.group(1), match.group(2)
        bold = _BOLD_LEAD.match(body)
        title = bold.group(2) if bold else body
        if not bold and _looks_like_prose(clean_title(body), max_words):
            return None
        if kind == "bullet":
            depth = _indent_width(marker)
        elif pattern is _ROMAN:
            depth = 1
        else:
            depth = len(marker.rstrip(".)").split("."))
        return _Candidate(kind=kind, title=title, depth=depth, line=line)  # type: ignore[arg-type]
    match = _BOLD_LINE.match(line)
    if match:
        return _Candidate(kind="bold", title=match.group(2), line=line)
    match = _BOLD_LEAD.match(line)
    if match and match.group(3) and len(match.group(2).split()) <= max_words:
        return _Candidate(kind="bold", title=match.group(2), line=line)
    return None


def parse_outline(text: str, *, max_words: int = 14, bullets: BulletPolicy = "auto") -> ParsedOutline:
    """Parse model text into headings (see the module docstring for the rules)."""
    text = _THINK.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    text, ended = _cut_at_end(text)
    candidates: list[_Candidate | str] = []
    for line in text.split("\n"):
        if not line.strip() or _FENCE.match(line) or _RULE.match(line) or line.lstrip().startswith("|"):
            continue
        found = _classify(line, max_words)
        candidates.append(found if found else line.strip())
    titled: list[tuple[_Candidate, str] | str] = []
    for item in candidates:
        if isinstance(item, str):
            titled.append(item)
            continue
        title = _strip_meta(clean_title(item.title))
        titled.append((item, title) if title else item.line.strip())
    headings_written = sum(1 for t in titled if not isinstance(t, str) and t[0].kind != "bullet")
    use_bullets = bullets == "headings" or (bullets == "auto" and headings_written < 2)
    bullet_unit = min(
        (c.depth for c in candidates if isinstance(c, _Candidate) and c.kind == "bullet" and c.depth > 0),
        default=2,
    )
    result = ParsedOutline(ended=ended)
    hash_level = 0
    anchor = 0
    for entry in titled:
        if isinstance(entry, str):
            result.dropped.append(entry)
            continue
        candidate, title = entry
        if candidate.kind == "bullet" and not use_bullets:
            result.dropped.append(candidate.line.strip())
            continue
        if _END_LINE.match(title):
            result.ended = True
            break
        if candidate.kind == "hash":
            level = min(candidate.depth, 6)
            hash_level = level
        elif candidate.kind == "number":
            level = hash_level + candidate.depth
        elif candidate.kind == "bold":
            level = hash_level + 1
        else:
            level = anchor + 1 + candidate.depth // bullet_unit
        if candidate.kind != "bullet":
            anchor = level
        result.headings.append(Heading(level=min(level, 9), title=title))
    return result


def build_tree(headings: list[Heading]) -> list[OutlineNode]:
    """Nest headings: a heading's parent is the nearest earlier heading of a lower level."""
    roots: list[OutlineNode] = []
    stack: list[OutlineNode] = []
    for heading in headings:
        node = OutlineNode(level=heading.level, title=heading.title)
        while stack and stack[-1].level >= node.level:
            stack.pop()
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    return roots


def to_markdown(headings: list[Heading]) -> str:
    return "\n".join(f"{'#' * min(h.level, 6)} {h.title}" for h in headings)
