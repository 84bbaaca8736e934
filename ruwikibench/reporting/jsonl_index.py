"""Read a run's large JSONL files (nodes.jsonl, outputs.jsonl) one article at a time.

One pass over the file records, per article, the byte offsets of its lines and each line's unit key; the
records are parsed again only when that article's page is built, so a report over hundreds of articles never
holds a whole file in memory.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ruwikibench.stage.contract import current_stage_name, with_current_stage

# Run files are written with "stage", "article", "unit" first; those are read from the line's head without
# parsing the whole (possibly long) record, and by a full parse when the head does not match.
_STRING = rb'"((?:[^"\\]|\\.)*)"'
_HEAD = re.compile(
    rb'\{"stage":\s*' + _STRING + rb',\s*"article":\s*' + _STRING + rb',\s*"unit":\s*' + _STRING
)
_HEAD_BYTES = 600

Key = tuple[str, str, str]  # (stage, article, unit); unit "" when the record names none


def _unquote(raw: bytes) -> str:
    return str(json.loads(b'"' + raw + b'"'))


def _key_of(line: bytes) -> Key | None:
    match = _HEAD.match(line, 0, _HEAD_BYTES)
    if match:
        stage, article, unit = (_unquote(group) for group in match.groups())
        return current_stage_name(stage), article, unit
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None  # a torn last line from a killed run (cut inside a character, too)
    if not isinstance(record, dict) or record.get("article") is None:
        return None
    return (
        current_stage_name(str(record.get("stage", ""))),
        str(record["article"]),
        str(record.get("unit", "")),
    )


class JsonlIndex:
    """Byte offsets and unit keys of each article's lines in one JSONL file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offsets: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.keys: set[Key] = set()
        if not path.exists():
            return
        with open(path, "rb") as handle:
            position = 0
            for line in handle:
                key = _key_of(line)
                if key is not None:
                    self.offsets[key[1]].append((position, len(line)))
                    self.keys.add(key)
                position += len(line)

    def articles(self) -> list[str]:
        return list(self.offsets)

    def units(self) -> list[dict[str, str]]:
        """Every (stage, article, unit) the file has a line for, as records (for open-error checks)."""
        return [{"stage": s, "article": a, "unit": u} for s, a, u in sorted(self.keys)]

    def records(self, article: str) -> Iterator[dict[str, Any]]:
        """The article's records in file order (torn lines skipped)."""
        spans = self.offsets.get(article, [])
        if not spans:
            return
        with open(self.path, "rb") as handle:
            for start, length in spans:
                handle.seek(start)
                try:
                    record = json.loads(handle.read(length))
                except (json.JSONDecodeError, UnicodeDecodeError):
                    continue
                yield with_current_stage(record) if isinstance(record, dict) else record
