"""What the sections stage is asked to write: one :class:`SectionSpec` per section, with its snippets."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SnippetText(BaseModel):
    """A snippet handed to the stage: id, text and (for round-robin capping) the source it comes from."""

    id: str
    text: str
    source_id: str = ""


class SectionSpec(BaseModel):
    """One section to write. Benchmark mode fills ``snippets`` and ``reference`` from gold data; writer mode
    gives the assigned snippets (texts, or ids resolved through the context's dataset) and no reference."""

    model_config = ConfigDict(extra="forbid")

    id: str
    title: str
    level: int = 2
    snippets: list[SnippetText] = Field(default_factory=list)
    snippet_ids: list[str] = Field(default_factory=list, description="ids resolved via StageContext.dataset")
    reference: str | None = Field(default=None, description="gold section text (benchmark mode only)")
