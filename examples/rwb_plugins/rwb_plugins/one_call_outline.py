"""A graph override for the outline stage: the whole outline in ONE LLM call (no clustering, no
mini-outlines).

Config: ``overrides: {outline: "rwb_plugins.one_call_outline:build_graph"}``. The graph takes the outline
stage's input (:class:`~ruwikibench.plugin.OutlineInput`: title, the article's snippets, …) and returns its
output (:class:`~ruwikibench.plugin.OutlineOutput`), so the built-in scoring (heading F1 against the reference
outline, depth statistics, floor) applies unchanged and the run sits in the same report table as built-in
runs.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from ruwikibench.plugin import (
    OutlineConfig,
    OutlineInput,
    OutlineOutput,
    OutlineSnippet,
    OutlineState,
    StageContext,
    parse_outline,
    uses_prompts,
)

PROMPT = "rwb_plugins:prompts/one_call_outline.txt"  # a file shipped in this package (package:path)
MAX_SNIPPETS = 12  # the snippets shown, in input order, each cut to the config's outline.snippet_chars


def snippets_block(state: OutlineState, chars: int) -> str:
    snippets = [OutlineSnippet.model_validate(s) for s in list(state.get("snippets") or [])[:MAX_SNIPPETS]]
    return "\n\n".join(f"[{i}] {s.text[:chars]}" for i, s in enumerate(snippets, start=1))


async def outline_in_one_call(state: OutlineState, runtime: Runtime[StageContext]) -> dict[str, Any]:
    """Ask for the outline once and parse the answer with the package's outline parser."""
    config = runtime.context.config.options(OutlineConfig)
    prompt = runtime.context.prompts.get(PROMPT).format(
        title=state["title"], snippets=snippets_block(state, config.snippet_chars)
    )
    completion = await runtime.context.llm.complete("outline", prompt, max_tokens=config.merge_max_tokens)
    parsed = parse_outline(completion.text, bullets=config.bullets)
    return {
        "k": 0,
        "k_method": "one call",
        "merged_text": completion.text,
        "outline": parsed.headings,
        "outline_markdown": parsed.markdown(),
        "dropped": parsed.dropped,
        "ended": parsed.ended,
    }


@uses_prompts(PROMPT)  # checked when the config loads, its sha256 in the run id and spec.json
def build_graph() -> StateGraph:
    """START -> outline_in_one_call -> END, with the outline stage's input and output schemas."""
    graph = StateGraph(
        OutlineState, context_schema=StageContext, input_schema=OutlineInput, output_schema=OutlineOutput
    )
    graph.add_node("outline_in_one_call", outline_in_one_call)
    graph.add_edge(START, "outline_in_one_call")
    graph.add_edge("outline_in_one_call", END)
    return graph
