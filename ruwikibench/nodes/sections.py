"""Stage 3 nodes (section generation): collect → group → compress (one ``Send`` per group) → write.

One section at a time (the graph fans sections out). ``collect`` takes the section's snippets (benchmark mode:
the snippets of the sources its paragraphs cite; writer mode: the snippets the writer assigned), optionally
filtered by the authors' oracle (cosine to the gold text) and capped; ``group`` embeds them and joins pairs
with cosine >= threshold into connected components; ``compress`` describes one group (the paper's iterative
loop: describe the first ``chunk_size`` texts, then extend that description with the next ones; or the
authors' tree reduction); ``write`` writes the section from the group descriptions by hierarchical
summarization. The writer prompt is called even for a single group, so raw snippet text is never returned as
generated text.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict

from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ruwikibench.conf.builtin_options import SectionsConfig
from ruwikibench.dataset import Dataset
from ruwikibench.models.embeddings import Embedder, Use
from ruwikibench.nodes.section_spec import SectionSpec, SnippetText
from ruwikibench.nodes.section_writing import describe_iterative, describe_tree, write_section
from ruwikibench.runtime.executors import embed_async, run_cpu
from ruwikibench.stage.context import StageContext

if TYPE_CHECKING:  # numpy is imported where it is used: a run loads this module before its first request
    import numpy as np

# --------------------------------------------------------------------------- typed inputs and outputs


class GroupSummary(BaseModel):
    """The compressed description of one similarity group."""

    index: int
    snippet_ids: list[str]
    description: str
    calls: int


Status = Literal["ok", "no_snippets", "oracle_empty", "empty_output", "no_reference"]


class SectionResult(BaseModel):
    """What the stage produced for one section (every intermediate output kept)."""

    id: str
    title: str
    level: int
    text: str
    status: Status
    snippets_total: int = Field(description="snippets given before the oracle filter and the cap")
    snippet_ids: list[str] = Field(default_factory=list, description="snippets actually used")
    oracle_filter: float | None = Field(default=None, description="set when the ORACLE filter was applied")
    oracle_dropped: list[str] = Field(default_factory=list)
    groups: list[GroupSummary] = Field(default_factory=list)
    write_calls: int = 0
    calls: int = 0


# --------------------------------------------------------------------------- graph states


class SectionInput(TypedDict):
    article: str
    section: dict[str, Any]


class SectionState(TypedDict, total=False):
    article: str
    section: dict[str, Any]
    snippets: list[dict[str, Any]]
    snippets_total: int
    oracle_dropped: list[str]
    no_reference: bool  # the oracle filter is on and the section has no gold text: excluded, nothing written
    groups: list[list[str]]
    summaries: Annotated[list[dict[str, Any]], operator.add]
    done: list[dict[str, Any]]


class SectionOutput(TypedDict):
    done: list[dict[str, Any]]


class CompressInput(TypedDict):
    article: str
    section: dict[str, Any]
    index: int
    snippets: list[dict[str, Any]]


class SectionsInput(TypedDict):
    article: str
    sections: list[dict[str, Any]]


class SectionsState(TypedDict, total=False):
    article: str
    sections: list[dict[str, Any]]
    done: Annotated[list[dict[str, Any]], operator.add]
    results: list[dict[str, Any]]


class SectionsOutput(TypedDict):
    article: str
    results: list[dict[str, Any]]


class SectionsOutputModel(BaseModel):
    """A sections output as the stage's ``score()`` receives it: one result per section (id, title, text, …),
    validated as a list of objects; other keys are kept."""

    model_config = ConfigDict(extra="allow")

    results: list[dict[str, Any]] = Field(default_factory=list)


# --------------------------------------------------------------------------- pure helpers


def parse_section(data: dict[str, Any], article: str) -> SectionSpec:
    """Validate one section of the input; errors name the article and the section."""
    try:
        return SectionSpec.model_validate(data)
    except ValidationError as exc:
        fields = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ValueError(
            f"article {article!r}, section {data.get('id', '?')!r}: bad section input: {fields}"
        ) from exc


def resolve_snippets(spec: SectionSpec, dataset: Dataset | None, article: str) -> list[SnippetText]:
    """The section's snippets with texts, first occurrence of each id kept; ids are looked up in the
    dataset."""
    found: dict[str, SnippetText] = {}
    for snippet in spec.snippets:
        found.setdefault(snippet.id, snippet)
    missing = [i for i in spec.snippet_ids if i not in found]
    if missing and dataset is None:
        raise ValueError(
            f"article {article!r}, section {spec.id!r}: "
            "snippet ids given without texts and no dataset in context"
        )
    for snip_id in missing:
        try:
            stored = dataset.snippet(snip_id)  # type: ignore[union-attr]
        except KeyError:
            raise ValueError(
                f"article {article!r}, section {spec.id!r}: unknown snippet id {snip_id!r}"
            ) from None
        found.setdefault(snip_id, SnippetText(id=snip_id, text=stored.text, source_id=stored.source_id))
    return list(found.values())


def cap_snippets(snippets: list[SnippetText], limit: int | None) -> list[SnippetText]:
    """At most ``limit`` snippets, taken round-robin over sources (each cited source contributes), input order
    kept."""
    if limit is None or len(snippets) <= limit:
        return snippets
    queues: dict[str, list[SnippetText]] = {}
    for snippet in snippets:
        queues.setdefault(snippet.source_id or snippet.id, []).append(snippet)
    picked: set[str] = set()
    depth = 0
    while len(picked) < limit:
        for queue in queues.values():
            if depth < len(queue) and len(picked) < limit:
                picked.add(queue[depth].id)
        depth += 1
    return [s for s in snippets if s.id in picked]


def similarity_groups(vectors: np.ndarray, threshold: float) -> list[list[int]]:
    """Connected components of the graph with an edge where cosine (E·Eᵀ of unit rows) >= threshold.

    Singletons are groups too. Groups are ordered by their first member; members keep input order.
    """
    import numpy as np

    n = len(vectors)
    if n == 0:
        return []
    sims = np.asarray(vectors, dtype=np.float64) @ np.asarray(vectors, dtype=np.float64).T
    from scipy.sparse import csr_matrix  # scipy loads with the run's warm-up, after the first request
    from scipy.sparse.csgraph import connected_components

    _, labels = connected_components(csr_matrix(sims >= threshold), directed=False)
    groups: dict[int, list[int]] = {}
    for index, label in enumerate(labels):
        groups.setdefault(int(label), []).append(index)
    return sorted(groups.values(), key=lambda members: members[0])


async def embed_texts(embedder: Embedder, texts: list[str], use: Use) -> np.ndarray:
    """Embeddings of ``texts`` off the event loop (the embedder's disk cache keeps each text's vector)."""
    import numpy as np

    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    return np.asarray(await embed_async(embedder, texts, use), dtype=np.float32)


async def oracle_filter(
    snippets: list[SnippetText], reference: str, embedder: Embedder, threshold: float, use: Use = "passage"
) -> tuple[list[SnippetText], list[str]]:
    """The authors' ORACLE filter: keep snippets with cosine >= threshold to the gold section text.

    Snippets are embedded as ``use`` (the stage's snippet embedding); the gold text as a query when snippets
    are passages, else symmetrically."""
    if not snippets:
        return [], []
    reference_vector = (await embed_texts(embedder, [reference], "query" if use == "passage" else use))[0]
    sims = (await embed_texts(embedder, [s.text for s in snippets], use)) @ reference_vector
    kept = [s for s, sim in zip(snippets, sims, strict=True) if sim >= threshold]
    dropped = [s.id for s, sim in zip(snippets, sims, strict=True) if sim < threshold]
    return kept, dropped


# --------------------------------------------------------------------------- nodes


async def collect(state: SectionInput, runtime: Runtime[StageContext]) -> dict[str, Any]:
    """The section's snippets: given or resolved, ORACLE-filtered if configured, capped to
    ``max_snippets``."""
    context, article = runtime.context, state["article"]
    cfg = context.config.options(SectionsConfig)
    spec = parse_section(state["section"], article)
    snippets = resolve_snippets(spec, context.dataset, article)
    total, dropped = len(snippets), list[str]()
    if cfg.oracle_filter is not None:
        if (
            spec.reference is None or not spec.reference.strip()
        ):  # nothing to filter against: excluded, not written
            return {"snippets": [], "snippets_total": total, "oracle_dropped": [], "no_reference": True}
        snippets, dropped = await oracle_filter(
            snippets, spec.reference, context.embedder, cfg.oracle_filter, cfg.snippet_use
        )
    snippets = cap_snippets(snippets, cfg.max_snippets)
    return {
        "snippets": [s.model_dump() for s in snippets],
        "snippets_total": total,
        "oracle_dropped": dropped,
    }


async def group(state: SectionState, runtime: Runtime[StageContext]) -> dict[str, Any]:
    """Embed the snippets and group pairs with cosine >= threshold into connected components."""
    snippets = state.get("snippets", [])
    if not snippets:
        return {"groups": []}
    cfg = runtime.context.config.options(SectionsConfig)
    vectors = await embed_texts(runtime.context.embedder, [s["text"] for s in snippets], cfg.snippet_use)
    components = await run_cpu(similarity_groups, vectors, cfg.group_threshold)
    return {"groups": [[snippets[i]["id"] for i in members] for members in components]}


def route_groups(state: SectionState) -> list[Send] | str:
    """One ``compress`` per group; straight to ``write`` when there is nothing to compress."""
    groups = state.get("groups", [])
    if not groups:
        return "write"
    texts = {s["id"]: s for s in state["snippets"]}
    return [
        Send(
            "compress",
            {
                "article": state["article"],
                "section": state["section"],
                "index": index,
                "snippets": [texts[i] for i in members],
            },
        )
        for index, members in enumerate(groups)
    ]


async def compress(state: CompressInput, runtime: Runtime[StageContext]) -> dict[str, Any]:
    """Describe one group: iterative extension (paper) or tree reduction (authors' code)."""
    context, section = runtime.context, state["section"]
    texts = [s["text"] for s in state["snippets"]]
    method = (
        describe_tree if context.config.options(SectionsConfig).compression == "tree" else describe_iterative
    )
    description, calls = await method(context, state["article"], section["title"], texts)
    summary = GroupSummary(
        index=state["index"],
        snippet_ids=[s["id"] for s in state["snippets"]],
        description=description,
        calls=calls,
    )
    return {"summaries": [summary.model_dump()]}


async def write(state: SectionState, runtime: Runtime[StageContext]) -> dict[str, Any]:
    """Write the section from the group descriptions (always an LLM call when there is any description)."""
    context, article = runtime.context, state["article"]
    spec = parse_section(state["section"], article)
    summaries = sorted(
        (GroupSummary.model_validate(s) for s in state.get("summaries", [])), key=lambda g: g.index
    )
    descriptions = [g.description for g in summaries if g.description.strip()]
    text, write_calls = "", 0
    if descriptions:
        text, write_calls = await write_section(context, article, spec, descriptions)
    result = SectionResult(
        id=spec.id,
        title=spec.title,
        level=spec.level,
        text=text,
        status=section_status(state, summaries, text),
        snippets_total=state.get("snippets_total", 0),
        snippet_ids=[s["id"] for s in state.get("snippets", [])],
        oracle_filter=context.config.options(SectionsConfig).oracle_filter,
        oracle_dropped=state.get("oracle_dropped", []),
        groups=summaries,
        write_calls=write_calls,
        calls=write_calls + sum(g.calls for g in summaries),
    )
    return {"done": [result.model_dump()]}


def section_status(state: SectionState, summaries: list[GroupSummary], text: str) -> Status:
    if state.get("no_reference"):
        return "no_reference"
    if not state.get("snippets"):
        return "oracle_empty" if state.get("oracle_dropped") else "no_snippets"
    return "ok" if text.strip() else "empty_output"


def route_sections(state: SectionsState) -> list[Send] | str:
    """One ``section`` subgraph run per section; ``finish`` at once when there is none."""
    if not state.get("sections"):
        return "finish"
    return [Send("section", {"article": state["article"], "section": s}) for s in state["sections"]]


async def finish(state: SectionsState) -> dict[str, Any]:
    """The section results in input order."""
    order = {s.get("id"): i for i, s in enumerate(state.get("sections", []))}
    done = sorted(state.get("done", []), key=lambda r: order.get(r["id"], len(order)))
    return {"results": done}
