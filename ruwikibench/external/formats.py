"""The JSONL formats of outputs produced by other systems, one row per article (per section for ``sections``).

Every row names its article by ``article``: the dataset's article title (or its file-safe name).

- ``ranking``:  ``{"article": T, "ranking": [snippet ids, best first], "pool": [the same ids in first-stage
  order] (optional)}``
- ``outline``:  ``{"article": T, "outline": "# T\\n## Heading\\n### Subheading"}`` (Markdown headings)
- ``sections``: ``{"article": T, "section": "s3" (section id, or its exact heading when unique), "text":
  "..."}``
- ``writer``:   ``{"article": T, "markdown": "# T\\n\\nLead [1].\\n\\n## Heading\\n\\nText [2]...",
  "sources": {"1": "https://…" | source id | snippet id, …}, "outline": "## …" (optional),
  "source_snippets": {"1": ["text read from that source", …]} (optional)}``

``article``, the writer stage's earlier name, is read as ``writer``.

Reading fails on the first bad row with one line naming the file, the line number and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ruwikibench.stage.contract import current_stage_name

StageName = Literal["ranking", "outline", "sections", "writer"]
STAGES: tuple[str, ...] = ("ranking", "outline", "sections", "writer")


class ExternalFormatError(ValueError):
    """A malformed external outputs file; the message names the file, line and field."""


class _Row(BaseModel):
    model_config = ConfigDict(extra="allow")

    article: str = Field(min_length=1, description="the dataset article's title (or file-safe name)")


class RankingRow(_Row):
    ranking: list[str] = Field(description="snippet ids, best first")
    pool: list[str] | None = Field(default=None, description="the same ids in first-stage (e.g. BM25) order")
    query: str | None = Field(
        default=None, description="the query the system ranked for (kept in outputs.jsonl)"
    )

    @field_validator("ranking", "pool")
    @classmethod
    def _unique(cls, ids: list[str] | None) -> list[str] | None:
        if ids is None:
            return ids
        seen: set[str] = set()
        for index, snippet in enumerate(ids):
            if not snippet.strip():
                raise ValueError(f"item {index} is an empty snippet id")
            if snippet in seen:
                raise ValueError(f"snippet id {snippet!r} appears twice")
            seen.add(snippet)
        return ids


class OutlineRow(_Row):
    outline: str = Field(description="Markdown headings")


class SectionsRow(_Row):
    section: str = Field(min_length=1, description="section id of the dataset (or its exact heading)")
    text: str


class ArticleRow(_Row):
    markdown: str = Field(description="the whole article: lead, '## ' headings, texts with [n] markers")
    sources: dict[str, str] = Field(
        default_factory=dict, description="n -> source URL, source id or snippet id"
    )
    outline: str | None = Field(
        default=None,
        description="Markdown headings scored as the outline (default: the article's own headings)",
    )
    source_snippets: dict[str, list[str]] = Field(
        default_factory=dict,
        description="n -> the texts the system read from that source (optional; they pick "
        "the right source of a URL that several dataset sources share)",
    )

    @field_validator("sources")
    @classmethod
    def _numbered(cls, sources: dict[str, str]) -> dict[str, str]:
        for key, value in sources.items():
            if not key.strip().isdigit():
                raise ValueError(f"key {key!r} is not a citation number")
            if not value.strip():
                raise ValueError(f"source {key} is empty")
        return sources


ROW_MODELS: dict[str, type[_Row]] = {
    "ranking": RankingRow,
    "outline": OutlineRow,
    "sections": SectionsRow,
    "writer": ArticleRow,
}


def parse_row(stage: str, data: Any, origin: str) -> _Row:
    """Validate one decoded row; ``origin`` ('FILE:LINE') starts the error message."""
    stage = current_stage_name(stage)
    if stage not in ROW_MODELS:
        raise ExternalFormatError(f"unknown stage {stage!r}; known: {', '.join(STAGES)}")
    if not isinstance(data, dict):
        raise ExternalFormatError(f"{origin}: a row must be a JSON object, got {type(data).__name__}")
    try:
        return ROW_MODELS[stage].model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "row"
        raise ExternalFormatError(f"{origin}: field {field!r}: {first['msg']}") from exc


def read_rows(path: str | Path, stage: str) -> list[tuple[int, _Row]]:
    """(line number, row) for every non-blank line of a JSONL file of ``stage`` rows."""
    path = Path(path)
    if not path.is_file():
        raise ExternalFormatError(f"{path}: outputs file not found")
    rows: list[tuple[int, _Row]] = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ExternalFormatError(f"{path}:{number}: not valid JSON: {exc.msg}") from exc
            rows.append((number, parse_row(stage, data, f"{path}:{number}")))
    return rows
