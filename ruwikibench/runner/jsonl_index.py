"""Read a run's large JSONL files (nodes.jsonl, outputs.jsonl) one article at a time.

One pass over the file records, per article, the byte offsets of its lines; the records are parsed again only when
that article's page is built, so a report over hundreds of articles never holds a whole file in memory.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Run files are written with "stage" then "article" first; the article name is read from the line's head
# without parsing the whole (possibly long) record, and by a full parse when the head does not match.
_ARTICLE_FIELD = re.compile(rb'"article":\s*("(?:[^"\\]|\\.)*")')
_HEAD_BYTES = 400


def _article_of(line: bytes) -> str | None:
    match = _ARTICLE_FIELD.search(line, 0, _HEAD_BYTES)
    if match and line.startswith(b'{"stage"'):
        return str(json.loads(match.group(1)))
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None  # a torn last line from a killed run
    article = record.get("article") if isinstance(record, dict) else None
    return str(article) if article is not None else None


class JsonlIndex:
    """Byte offsets of each article's lines in one JSONL file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offsets: dict[str, list[tuple[int, int]]] = defaultdict(list)
        if not path.exists():
            return
        with open(path, "rb") as handle:
            position = 0
            for line in handle:
                article = _article_of(line)
                if article is not None:
                    self.offsets[article].append((position, len(line)))
                position += len(line)

    def articles(self) -> list[str]:
        return list(self.offsets)

    def records(self, article: str) -> Iterator[dict[str, Any]]:
        """The article's records in file order (torn lines skipped)."""
        spans = self.offsets.get(article, [])
        if not spans:
            return
        with open(self.path, "rb") as handle:
            for start, length in spans:
                handle.seek(start)
                try:
                    yield json.loads(handle.read(length))
                except json.JSONDecodeError:
                    continue
