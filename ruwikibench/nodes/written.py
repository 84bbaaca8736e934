"""Typed results of the writer: outline items, written sections, the whole cited article."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ruwikibench.nodes.citations import Citation, MarkerStats


class OutlineItem(BaseModel):
    """A heading of the writer's outline. ``level`` 2 = h2 (the article title is level 1 and not an item)."""

    id: str = Field(description="unique in the outline: s1, s2, …")
    level: int
    title: str
    parents: list[str] = Field(
        default_factory=list, description="titles of the enclosing headings, outermost first"
    )


class WrittenSection(BaseModel):
    id: str
    level: int
    title: str
    text: str = Field(
        default="", description="with global [n] markers; '' for a heading with no text of its own"
    )
    cited: list[int] = Field(default_factory=list)
    shown_snippets: list[str] = Field(default_factory=list, description="snippets its writer was shown")
    markers: MarkerStats = Field(default_factory=MarkerStats)


class WrittenArticle(BaseModel):
    title: str
    lead: str = ""
    lead_cited: list[int] = Field(default_factory=list)
    outline: list[OutlineItem] = Field(default_factory=list)
    sections: list[WrittenSection] = Field(default_factory=list)
    references: list[Citation] = Field(default_factory=list)
    stats: dict[str, float] = Field(default_factory=dict)

    def body(self) -> str:
        """Headings and section texts as Markdown (no lead, no reference list)."""
        parts = []
        for section in self.sections:
            parts.append(f"{'#' * min(section.level, 6)} {section.title}")
            if section.text:
                parts.append(section.text)
        return "\n\n".join(parts)

    def plain_text(self) -> str:
        """Lead and section texts without headings and markers (for whole-article scoring)."""
        from ruwikibench.nodes.citations import strip_markers

        texts = [self.lead, *(s.text for s in self.sections)]
        return "\n\n".join(strip_markers(t)[0] for t in texts if t.strip())
