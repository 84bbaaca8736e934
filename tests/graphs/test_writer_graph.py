"""The writer graph end to end with the scripted fake model: structure, citations, no gold data, user outline,
the outline interrupt and resume."""

from __future__ import annotations

import asyncio
import re
from collections import Counter

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from ruwikibench.graphs.writer import build_writer_graph
from ruwikibench.nodes.citations import MARKER, marker_numbers
from tests.graphs.writer_fixture import TAG, TITLE, kind, make_context, prompts_of


def write(context, payload, checkpointer=None, config=None):
    app = build_writer_graph().compile(checkpointer=checkpointer)
    return asyncio.run(app.ainvoke(payload, config, context=context))


def test_structure_is_uncompiled_with_stage_subgraphs() -> None:
    graph = build_writer_graph()
    assert not getattr(graph, "compiled", False)
    assert list(graph.nodes) == [
        "ranking",
        "select_sources",
        "outline",
        "review_outline",
        "assign",
        "sections",
        "cite",
        "write_lead",
        "assemble",
    ]
    # the stage graphs' own nodes run inside (shown by the subgraph stream, see test_stream_shows_stage_nodes)
    assert set(graph.input_schema.__annotations__) == {"title", "user_outline", "review"}
    assert set(graph.output_schema.__annotations__) == {"article", "sources", "assignments", "notes"}


def check_citations(article, dataset) -> int:
    """Every marker resolves to a reference whose snippet its section's writer saw, and the sentence's tags
    are exactly the tags of the cited snippets. Returns the number of markers checked."""
    refs = {c.n: c for c in article.references}
    assert sorted(refs) == list(range(1, len(refs) + 1))
    checked = 0
    for section in article.sections:
        for sentence in re.split(r"(?<=\.)\s+", section.text):
            numbers = [n for m in MARKER.finditer(sentence) for n in marker_numbers(m.group(1))]
            if not numbers:
                continue
            cited = {refs[n].snippet_id for n in numbers}
            assert cited <= set(section.shown_snippets)
            tags = set(TAG.findall(sentence))
            assert {TAG.search(dataset.snippet(s).text).group(0) for s in cited} == tags
            checked += len(numbers)
    return checked


def test_writes_a_cited_article_without_gold_data(tmp_path) -> None:
    context, chat = make_context(tmp_path)
    out = write(context, {"title": TITLE})
    article = out["article"]
    # sources: only the target's six snippets pass the fake relevance judge
    assert {s.snippet_id.split("/")[0] for s in out["sources"]} == {TITLE}
    assert len(out["sources"]) == 6 and not any(s.topped_up for s in out["sources"])
    # outline from the merged answer; the title line dropped; levels kept; «География» has a child: no own
    # text
    assert [(i.level, i.title) for i in article.outline] == [
        (2, "История"),
        (2, "География"),
        (3, "Климат"),
        (2, "Экономика"),
    ]
    texts = {s.title: s.text for s in article.sections}
    assert texts["География"] == "" and all(texts[t] for t in ("История", "Климат", "Экономика"))
    # citations: every marker resolves to what that section's writer saw; out-of-range markers removed,
    # counted
    assert check_citations(article, context.dataset) == len(MARKER.findall(article.body())) >= 6
    assert "[99]" not in article.body() and "[77]" not in article.lead
    assert article.stats["markers_removed"] == 3 + 1  # one [99] per written section, the lead's [77]
    body_numbers = {n for s in article.sections for n in s.cited}
    assert article.lead_cited and set(article.lead_cited) <= body_numbers
    assert {c.n for c in article.references} == body_numbers
    first = article.references[0]
    assert first.url and first.label.startswith("Книга 0.") and first.text
    # the lead was written last, from the body
    order = [kind(p) for p in prompts_of(chat)]
    assert order[-1] == "lead" and "## История" in prompts_of(chat, "lead")[0]
    # writer mode: generated query (the config asked for the gold-based reference query), no gold text
    # anywhere
    assert prompts_of(chat, "query_ru") and all("ЗОЛОТО" not in p for p in prompts_of(chat))


def test_section_prompt_numbers_what_the_writer_is_shown(tmp_path) -> None:
    context, chat = make_context(tmp_path)
    out = write(context, {"title": TITLE})
    prompts = prompts_of(chat, "write_section")
    assert len(prompts) == 3
    for prompt in prompts:
        materials = prompt.split("источников):", 1)[1].split("Требования:")[0]
        numbers = [int(n) for n in re.findall(r"^\[(\d+)\]", materials, flags=re.MULTILINE)]
        assert numbers == list(range(1, len(numbers) + 1)) and numbers
    assert out["assignments"] and all(len(a.snippet_ids) == 3 for a in out["assignments"])


def test_exclusive_assignment_gives_each_snippet_one_section(tmp_path) -> None:
    context, _ = make_context(tmp_path, exclusive=True, per_section=6)
    out = write(context, {"title": TITLE})
    assigned = [s for a in out["assignments"] for s in a.snippet_ids]
    assert len(assigned) == len(set(assigned)) == 6


def test_user_outline_skips_outline_generation(tmp_path) -> None:
    context, chat = make_context(tmp_path)
    out = write(context, {"title": TITLE, "user_outline": "# Москва\n## Экономика\n## География"})
    assert [s.title for s in out["article"].sections] == ["Экономика", "География"]
    kinds = Counter(kind(p) for p in prompts_of(chat))
    assert kinds["merge"] == kinds["mini"] == kinds["outline_describe"] == 0
    assert kinds["write_section"] == 2


def test_interrupt_after_outline_then_resume_with_edit(tmp_path) -> None:
    context, chat = make_context(tmp_path)
    saver, config = InMemorySaver(), {"configurable": {"thread_id": "t1"}}
    app = build_writer_graph().compile(checkpointer=saver)
    first = asyncio.run(app.ainvoke({"title": TITLE, "review": True}, config, context=context))
    (interrupt,) = first["__interrupt__"]
    assert [h["title"] for h in interrupt.value["outline"]] == ["История", "География", "Климат", "Экономика"]
    assert interrupt.value["markdown"].startswith("# Москва\n\n## История")
    calls_before = Counter(kind(p) for p in prompts_of(chat))
    assert calls_before["write_section"] == 0 and calls_before["relevance"] == 12
    edited = "# Москва\n## Экономика Москвы\n## Природа\n"
    out = asyncio.run(app.ainvoke(Command(resume=edited), config, context=context))
    article = out["article"]
    assert [s.title for s in article.sections] == ["Экономика Москвы", "Природа"]
    assert article.stats["outline_edited"] == 1.0
    calls_after = Counter(kind(p) for p in prompts_of(chat))
    assert calls_after["relevance"] == 12 and calls_after["merge"] == 1  # nothing before the interrupt reran
    assert calls_after["write_section"] == 2 and calls_after["lead"] == 1
    check_citations(article, context.dataset)


def test_bad_edited_outline_is_a_clear_error(tmp_path) -> None:
    context, _ = make_context(tmp_path)
    saver, config = InMemorySaver(), {"configurable": {"thread_id": "t2"}}
    app = build_writer_graph().compile(checkpointer=saver)
    asyncio.run(app.ainvoke({"title": TITLE, "review": True}, config, context=context))
    with pytest.raises(ValueError, match="edited outline: no Markdown headings"):
        asyncio.run(app.ainvoke(Command(resume="just prose, no headings"), config, context=context))


def test_stream_shows_stage_nodes(tmp_path) -> None:
    context, _ = make_context(tmp_path)
    app = build_writer_graph().compile()

    async def nodes() -> set[tuple[str, str]]:
        seen = set()
        async for namespace, mode, data in app.astream(
            {"title": TITLE}, context=context, stream_mode=["tasks"], subgraphs=True
        ):
            if "result" in data:
                seen.add((namespace[0].split(":")[0] if namespace else "", data["name"]))
        return seen

    seen = asyncio.run(nodes())
    assert {("ranking", "rerank"), ("outline", "merge"), ("sections", "section"), ("", "assign")} <= seen


def test_no_source_is_a_clear_error(tmp_path) -> None:
    context, _ = make_context(tmp_path, min_sources=0, min_relevance=1.01)
    with pytest.raises(ValueError, match="no source snippet to write from"):
        write(context, {"title": TITLE})
