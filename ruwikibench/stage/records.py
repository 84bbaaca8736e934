"""What a stage and the runner exchange: a :class:`Unit` of work, its :class:`ScoreRecord` rows and
:class:`GeneratedText` texts (together a :class:`StageScore`), and the errors of a stage that breaks the
contract. :mod:`ruwikibench.stage.contract` re-exports them all.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Unit(BaseModel):
    stage: str
    article: str = Field(description="Article.name")
    unit_id: str = Field(description="unique within (stage, article), e.g. 'article' or a section id")
    input: dict[str, Any] = Field(description="the graph input state, JSON-able")
    fan_out: int = Field(
        default=1,
        ge=1,
        description="LLM requests the unit may have waiting at once (its "
        "widest fan-out); the runner starts units while their fan-outs fit its budget",
    )


class ScoreRecord(BaseModel):
    """One scored item: an article (ranking, outline) or a section (sections)."""

    stage: str
    article: str
    item: str
    metrics: dict[str, float] = Field(default_factory=dict)
    excluded: str | None = Field(default=None, description="paper exclusion reason; metrics then empty")
    info: dict[str, Any] = Field(default_factory=dict)


class GeneratedText(BaseModel):
    """A generated text with what it should be judged against (written by runs to generated.jsonl)."""

    stage: str
    article: str
    item: str
    title: str
    text: str
    reference: str = ""
    sources: list[str] = Field(default_factory=list)
    category: str | None = None


class StageScore(BaseModel):
    """What ``score()`` returns: the unit's score records and its generated texts (for judges and reports)."""

    records: list[ScoreRecord]
    texts: list[GeneratedText] = Field(default_factory=list)


class StageReturnError(TypeError):
    """A stage method returned something the contract does not allow (one line naming the stage and the
    method)."""


class StageOutputError(ValueError):
    """A captured output that does not fit the stage's ``output_model``."""
