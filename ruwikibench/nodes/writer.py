"""Writer nodes: the STORM-like article writer around the three stage graphs.

::

    ranking (subgraph) -> select_sources -> outline (subgraph, skipped for a user outline) -> review_outline
    -> assign -> sections (subgraph) -> cite -> write_lead -> assemble

The stage graphs are invoked as subgraphs from the nodes ``ranking``, ``outline`` and ``sections``, which map
the writer state into each stage's input schema and its output back (the graphs' own nodes run unchanged,
under their own checkpoint namespace, captured like any node). No gold data is used: the ranking query is
generated from the title (or is the title), the outline's cluster count is chosen from the data, the sections
get the snippets ``assign`` retrieved for their headings. The stage configs are in writer mode because the
writer runs under the config's ``writer`` profile (:meth:`ruwikibench.conf.config.RunConfig.with_profile`: no
oracle filter, no reference query, data-chosen centroids, the citing write prompt); the nodes read the config,
never rewrite it.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired, TypedDict

from langgraph.runtime import Runtime
from langgraph.types import interrupt
from pydantic import BaseModel, ConfigDict

from ruwikibench.conf.builtin_options import WriterConfig
from ruwikibench.dataset import safe_name
from ruwikibench.nodes.answers import ask, clean_answer, flatten_headings
from ruwikibench.nodes.assignment import (
    Assignment,
    SourceSnippet,
    assign_snippets,
    choose_sources,
    source_snippet,
    writable_sections,
)
from ruwikibench.nodes.citations import (
    Citation,
    MarkerStats,
    Numbering,
    SectionDraft,
    Shown,
    attach_lone_markers,
    cited_numbers,
    restrict_markers,
    strip_markers,
)
from ruwikibench.nodes.outline_file import items_from_headings, outline_markdown, parse_outline_markdown
from ruwikibench.nodes.written import OutlineItem, WrittenArticle, WrittenSection
from ruwikibench.prompts.render import cut_text
from ruwikibench.runtime.executors import run_on_model_lane
from ruwikibench.stage.context import StageContext

ROLE = "writer"

# --------------------------------------------------------------------------- typed values and states


class WriterInput(TypedDict):
    title: str
    user_outline: NotRequired[list[OutlineItem] | str | None]  # a user outline: items or Markdown headings
    review: NotRequired[
        bool | None
    ]  # stop after the outline for a human edit (None = config.options(WriterConfig))


class WriterOutput(TypedDict):
    article: WrittenArticle
    sources: list[SourceSnippet]
    assignments: list[Assignment]
    notes: list[str]


class WriterOutputModel(BaseModel):
    """A writer output as the stage's ``score()`` receives it: the written article validated, the snippets it
    read; other keys are kept."""

    model_config = ConfigDict(extra="allow")

    article: WrittenArticle
    sources: list[dict[str, Any]] | None = None


class WriterState(TypedDict, total=False):
    title: str
    user_outline: list[OutlineItem] | str | None
    review: bool | None
    ranked: dict[str, Any]
    sources: list[SourceSnippet]
    outline_stage: dict[str, Any]
    outline_items: list[OutlineItem]
    outline_edited: bool
    assignments: list[Assignment]
    section_results: list[dict[str, Any]]
    written: list[WrittenSection]
    references: list[Citation]
    lead: str
    lead_cited: list[int]
    lead_markers: MarkerStats
    article: WrittenArticle
    notes: Annotated[list[str], operator.add]


# --------------------------------------------------------------------------- writer-mode context


def writer_context(context: StageContext) -> StageContext:
    """The context handed to the stage subgraphs: the run's own (its cached embedder keeps every vector the
    stages compute, so ``assign`` does not embed again what the outline embedded).

    The writer needs the config's ``writer`` profile (its stage settings use no gold data); under another
    profile it stops with a clear error instead of quietly reading gold data."""
    if context.config.profile != "writer":
        raise ValueError(
            "the writer graph runs under the 'writer' profile: use context.with_profile('writer') "
            "(ruwikibench write and the 'article' stage do)"
        )
    return context


# --------------------------------------------------------------------------- pure helpers


def coerce_outline(value: Any, title: str, origin: str = "outline") -> list[OutlineItem]:
    """A user outline from Markdown text, a list of items/dicts, or (level, title) pairs; ids renumbered."""
    if isinstance(value, str):
        return parse_outline_markdown(value, title, origin=origin)
    if not isinstance(value, list) or not value:
        raise ValueError(
            f"{origin}: expected Markdown headings or a non-empty list of headings, got {value!r:.80}"
        )
    pairs: list[tuple[int, str]] = []
    for index, entry in enumerate(value):
        if isinstance(entry, OutlineItem):
            pairs.append((entry.level, entry.title))
        elif isinstance(entry, dict) and "title" in entry:
            pairs.append((int(entry.get("level", 2)), str(entry["title"])))
        elif isinstance(entry, (list, tuple)) and len(entry) == 2:
            pairs.append((int(entry[0]), str(entry[1])))
        else:
            raise ValueError(f"{origin}: heading {index} is not a heading (level, title): {entry!r:.80}")
    items = items_from_headings(pairs, title)
    if not items:
        raise ValueError(f"{origin}: no headings below the title")
    return items


def drafts_from_results(results: list[dict[str, Any]]) -> tuple[list[SectionDraft], list[str]]:
    """What each section writer was shown: its group descriptions, numbered as the write prompt numbers them.

    The sections stage's write prompt shows the non-empty group descriptions as [1], [2], … (group order),
    each standing for the snippets of its group. When the descriptions had to be merged first (more groups
    than ``sections.chunk_size``: several write calls), the final numbering no longer maps to groups, so that
    section's markers are all removed (counted) rather than guessed.
    """
    drafts, notes = [], []
    for result in results:
        groups = sorted(result.get("groups") or [], key=lambda g: g["index"])
        shown_groups = [g for g in groups if (g.get("description") or "").strip()]
        shown = [Shown(n=i, snippet_ids=list(g["snippet_ids"])) for i, g in enumerate(shown_groups, start=1)]
        if int(result.get("write_calls") or 0) > 1:
            notes.append(
                f"section {result['id']!r}: descriptions merged before writing; its markers are removed"
            )
            shown = []
        drafts.append(
            SectionDraft(
                section_id=result["id"],
                text=attach_lone_markers(flatten_headings(result.get("text") or "")),
                shown=shown,
            )
        )
    return drafts, notes


def lead_body(sections: list[WrittenSection], chars: int) -> str:
    """The body shown to the lead writer: headings and texts with global markers, cut to ``chars``."""
    parts = []
    for section in sections:
        if section.text.strip():
            parts.append(f"{'#' * min(section.level, 6)} {section.title}\n{section.text.strip()}")
    return cut_text("\n\n".join(parts), chars, squash=False)


LEAD_TITLES = ("преамбула", "введение", "вводная часть")


def clean_lead(text: str, title: str) -> str:
    """The lead as written, cleaned: wrappers, a repeated title or «Преамбула» line, inner headings
    flattened."""
    return flatten_headings(clean_answer(text, title, also_drop=LEAD_TITLES, label=False))


async def ask_lead(context: StageContext, title: str, body: str) -> str:
    """One LLM call: the lead written from the body (as STORM writes it, last)."""
    cfg = context.config.options(WriterConfig)
    return await ask(
        context,
        ROLE,
        cfg.prompt_lead,
        max_tokens=cfg.lead_max_tokens,
        clean=lambda text: clean_lead(text, title),
        title=title,
        body=body,
    )


# ------------------------------------------------------------------------ nodes (wrappers get their subgraph)


async def ranking(state: WriterState, runtime: Runtime[StageContext], *, graph: Any) -> dict:
    """Stage 1 as a subgraph: query from the title, BM25 over the whole corpus, relevance reranking."""
    context = writer_context(runtime.context)
    data = {
        "article": safe_name(state["title"]),
        "title": state["title"],
        "pool_size": context.config.options(WriterConfig).candidates,
    }
    output = await graph.ainvoke(data, context=context)
    return {"ranked": dict(output)}


async def select_sources(state: WriterState, runtime: Runtime[StageContext]) -> dict:
    """The top-ranked snippets above the relevance threshold (capped; topped up to ``min_sources``)."""
    context = runtime.context
    cfg = context.config.options(WriterConfig)
    if context.dataset is None:
        raise ValueError("the writer needs StageContext.dataset (the corpus)")
    candidates = state["ranked"].get("candidates") or []
    chosen = choose_sources(candidates, cfg.min_relevance, cfg.max_sources, cfg.min_sources)
    sources = [source_snippet(context.dataset, c, topped) for c, topped in chosen]
    notes = []
    if not sources:
        reason = state["ranked"].get("error") or "the ranking returned no candidate"
        raise ValueError(f"article {state['title']!r}: no source snippet to write from ({reason})")
    topped = sum(s.topped_up for s in sources)
    if topped:
        notes.append(
            f"select_sources: {topped} snippet(s) below relevance {cfg.min_relevance} taken to reach "
            f"{min(cfg.min_sources, cfg.max_sources)}"
        )
    return {"sources": sources, "notes": notes}


def route_outline(state: WriterState) -> str:
    """A user outline skips outline generation."""
    return "review_outline" if state.get("user_outline") else "outline"


async def outline(state: WriterState, runtime: Runtime[StageContext], *, graph: Any) -> dict:
    """Stage 2 as a subgraph on the selected snippets; no gold headings, k chosen from the data."""
    context = writer_context(runtime.context)
    data = {
        "title": state["title"],
        "snippets": [
            {"id": s.snippet_id, "source_id": s.source_id, "index": s.index, "text": s.text}
            for s in state["sources"]
        ],
        "headings": None,
    }
    output = dict(await graph.ainvoke(data, context=context))
    headings = [_heading_pair(h) for h in output.get("outline") or []]
    items = items_from_headings(headings, state["title"])
    if not items:
        raise ValueError(
            f"article {state['title']!r}: the outline stage produced no heading "
            f"(model answer: {str(output.get('merged_text', ''))[:200]!r})"
        )
    return {"outline_stage": output, "outline_items": items}


def _heading_pair(heading: Any) -> tuple[int, str]:
    if isinstance(heading, dict):
        return int(heading["level"]), str(heading["title"])
    return int(heading.level), str(heading.title)


async def review_outline(state: WriterState, runtime: Runtime[StageContext]) -> dict:
    """Human in the loop: with review on, stop here (``interrupt``) until resumed with an edited outline.

    Resume with ``Command(resume=outline)``: Markdown headings, a list of {level, title}, or OutlineItems.
    """
    title = state["title"]
    items = (
        coerce_outline(state["user_outline"], title, "input outline")
        if state.get("user_outline")
        else state["outline_items"]
    )
    review = state.get("review")
    if review is None:
        review = runtime.context.config.options(WriterConfig).review_outline
    if not review:
        return {"outline_items": items}
    edited = interrupt(
        {
            "title": title,
            "outline": [i.model_dump() for i in items],
            "markdown": outline_markdown(title, items),
        }
    )
    new_items = coerce_outline(edited, title, "edited outline")
    return {
        "outline_items": new_items,
        "outline_edited": True,
        "notes": [f"outline edited: {len(new_items)} headings"],
    }


async def assign(state: WriterState, runtime: Runtime[StageContext]) -> dict:
    """Give each writable section the selected snippets retrieved for its heading (BM25 + embeddings)."""
    cfg = runtime.context.config.options(WriterConfig)
    targets = writable_sections(state["outline_items"], cfg.max_level, cfg.parent_text)
    assignments = await run_on_model_lane(
        assign_snippets, runtime.context, state["title"], targets, state["sources"]
    )
    notes = []
    deeper = sum(1 for i in state["outline_items"] if i.level > cfg.max_level)
    if deeper:
        notes.append(f"assign: {deeper} heading(s) deeper than level {cfg.max_level} dropped")
    return {"assignments": assignments, "notes": notes}


async def sections(state: WriterState, runtime: Runtime[StageContext], *, graph: Any) -> dict:
    """Stage 3 as a subgraph: every assigned section written from its snippets (fanned out inside)."""
    context = writer_context(runtime.context)
    items = {i.id: i for i in state["outline_items"]}
    texts = {s.snippet_id: s for s in state["sources"]}
    specs = [
        {
            "id": a.section_id,
            "title": items[a.section_id].title,
            "level": items[a.section_id].level,
            "snippets": [
                {"id": sid, "text": texts[sid].text, "source_id": texts[sid].source_id}
                for sid in a.snippet_ids
            ],
        }
        for a in state["assignments"]
        if a.snippet_ids
    ]
    output = await graph.ainvoke({"article": state["title"], "sections": specs}, context=context)
    empty = [a.section_id for a in state["assignments"] if not a.snippet_ids]
    notes = [f"sections: {len(empty)} section(s) got no snippet: {', '.join(empty)}"] if empty else []
    return {"section_results": list(output.get("results") or []), "notes": notes}


async def cite(state: WriterState, runtime: Runtime[StageContext]) -> dict:
    """Global citation numbering: each section's markers resolved against what its writer was shown."""
    drafts, notes = drafts_from_results(state.get("section_results") or [])
    by_id = {d.section_id: d for d in drafts}
    numbering = Numbering()
    written: list[WrittenSection] = []
    for item in state["outline_items"]:
        if item.level > runtime.context.config.options(WriterConfig).max_level:
            continue
        draft = by_id.get(item.id)
        section = WrittenSection(id=item.id, level=item.level, title=item.title)
        if draft is not None:
            numbered = numbering.section(draft)
            section = section.model_copy(
                update={"text": numbered.text, "cited": numbered.cited, "shown_"
                "snippets": numbered.shown_snippets,
                        "markers": numbered.markers}
            )  # fmt: skip
        written.append(section)
    texts = {s.snippet_id: s.text for s in state["sources"]}
    return {
        "written": written,
        "references": numbering.references(runtime.context.dataset, texts),
        "notes": notes,
    }


async def write_lead(state: WriterState, runtime: Runtime[StageContext]) -> dict:
    """The lead, written last from the body; it keeps only [n] markers the body it saw carries."""
    context = runtime.context
    body = lead_body(state["written"], context.config.options(WriterConfig).lead_body_chars)
    if not body:
        return {
            "lead": "",
            "lead_cited": [],
            "lead_markers": MarkerStats(),
            "notes": ["write_lead: empty body"],
        }
    text = attach_lone_markers(await ask_lead(context, state["title"], body))
    allowed = set(cited_numbers(body)) if context.config.options(WriterConfig).lead_citations else set()
    text, stats = restrict_markers(text, allowed) if allowed else strip_markers(text)
    return {"lead": text, "lead_cited": cited_numbers(text), "lead_markers": stats}


async def assemble(state: WriterState) -> dict:
    """The article: outline, lead, sections with text, the reference list of everything cited, and counts."""
    sections_ = state["written"]
    cited = {n for s in sections_ for n in s.cited} | set(state.get("lead_cited") or [])
    references = [c for c in state.get("references") or [] if c.n in cited]
    lead_markers = state.get("lead_markers") or MarkerStats()
    stats = {
        "sources_selected": float(len(state.get("sources") or [])),
        "sections": float(len(sections_)),
        "sections_with_text": float(sum(1 for s in sections_ if s.text.strip())),
        "references": float(len(references)),
        "markers_kept": float(sum(s.markers.kept for s in sections_) + lead_markers.kept),
        "markers_removed": float(sum(s.markers.removed for s in sections_) + lead_markers.removed),
        "lead_markers_removed": float(lead_markers.removed),
        "outline_edited": float(bool(state.get("outline_edited"))),
    }
    article = WrittenArticle(
        title=state["title"], lead=state.get("lead") or "", lead_cited=state.get("lead_cited") or [],
        outline=state["outline_items"], sections=sections_, references=references, stats=stats,
    )  # fmt: skip
    return {"article": article}
