"""Outlines as Markdown heading files (what a user edits between `--stop-after-outline` and `--resume`)."""

from __future__ import annotations

import re
from pathlib import Path

from ruwikibench.nodes.written import OutlineItem

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


class OutlineFileError(ValueError):
    pass


def items_from_headings(headings: list[tuple[int, str]], title: str | None = None) -> list[OutlineItem]:
    """Outline items from (level, title) pairs. A leading level-1 heading is taken for the article title and
    dropped when it is the title, or when it is the only level-1 heading and deeper headings follow it; other
    level-1 headings become h2. Levels are shifted so the top is 2 and never jump by more than one."""
    pairs = [(level, text.strip()) for level, text in headings if text.strip()]
    if pairs and pairs[0][0] == 1:
        only_top = sum(1 for level, _ in pairs if level == 1) == 1
        if (title is not None and _same(pairs[0][1], title)) or (only_top and len(pairs) > 1):
            pairs = pairs[1:]
    if not pairs:
        return []
    shift = 2 - min(level for level, _ in pairs)
    items: list[OutlineItem] = []
    stack: list[OutlineItem] = []
    for index, (level, text) in enumerate(pairs, start=1):
        level = level + shift
        level = min(level, (stack[-1].level + 1) if stack else 2)
        while stack and stack[-1].level >= level:
            stack.pop()
        item = OutlineItem(id=f"s{index}", level=level, title=text, parents=[s.title for s in stack])
        items.append(item)
        stack.append(item)
    return items


def _same(a: str, b: str) -> bool:
    return a.strip().casefold().replace("ё", "е") == b.strip().casefold().replace("ё", "е")


def parse_outline_markdown(
    text: str, title: str | None = None, *, origin: str = "outline"
) -> list[OutlineItem]:
    """Read ``#`` headings from Markdown; other lines are ignored. Raises with the origin named if none."""
    headings = []
    for line in text.replace("\r\n", "\n").split("\n"):
        match = _HEADING.match(line.strip())
        if match:
            headings.append((len(match.group(1)), match.group(2)))
    items = items_from_headings(headings, title)
    if not items:
        raise OutlineFileError(f"{origin}: no Markdown headings ('## Heading') below the title")
    return items


def read_outline_file(path: str | Path, title: str | None = None) -> list[OutlineItem]:
    path = Path(path)
    if not path.is_file():
        raise OutlineFileError(f"{path}: outline file not found")
    return parse_outline_markdown(path.read_text(encoding="utf-8"), title, origin=str(path))


def outline_markdown(title: str, items: list[OutlineItem]) -> str:
    """The outline as an editable Markdown file: '# Title' then the headings."""
    lines = [f"# {title}", ""]
    lines += [f"{'#' * min(item.level, 6)} {item.title}" for item in items]
    return "\n".join(lines) + "\n"
