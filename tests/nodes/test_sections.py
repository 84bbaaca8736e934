import asyncio
import math
import re

import numpy as np
import pytest

from ruwikibench.conf.config import ModelConfig, RunConfig
from ruwikibench.dataset import Dataset, Snippet
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.nodes.section_writing import describe_iterative, describe_tree, write_section
from ruwikibench.nodes.sections import (
    SectionSpec,
    SnippetText,
    cap_snippets,
    resolve_snippets,
    similarity_groups,
)
from ruwikibench.prompts import PromptLibrary
from ruwikibench.stage.context import StageContext


def unit(*parts: float) -> np.ndarray:
    v = np.asarray(parts, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_grouping_on_crafted_embeddings_gives_connected_components() -> None:
    c, s = math.cos, math.sin
    # 0–1 at 0.90, 1–2 at 0.90, 0–2 at cos(2·0.451) ≈ 0.62: single linkage chains 0,1,2 into one group
    a = math.acos(0.9)
    vectors = np.stack(
        [
            unit(1, 0, 0, 0),
            unit(c(a), s(a), 0, 0),
            unit(c(2 * a), s(2 * a), 0, 0),
            unit(0, 0, 1, 0),  # alone
            unit(0, 0, 0, 1),
            unit(0, 0, 0.5, 1),  # 0.894 to 4, 0.447 to 3
        ]
    )
    assert vectors[0] @ vectors[2] < 0.8
    assert similarity_groups(vectors, 0.8) == [[0, 1, 2], [3], [4, 5]]
    assert similarity_groups(vectors, 0.95) == [[0], [1], [2], [3], [4], [5]]  # singletons are groups
    assert similarity_groups(vectors, -1.0) == [[0, 1, 2, 3, 4, 5]]
    assert similarity_groups(np.zeros((0, 4)), 0.8) == []


def test_groups_ordered_by_first_member() -> None:
    vectors = np.stack([unit(1, 0), unit(0, 1), unit(1, 0.01)])
    assert similarity_groups(vectors, 0.8) == [[0, 2], [1]]


def snip(i: str, source: str) -> SnippetText:
    return SnippetText(id=i, text=f"текст {i}", source_id=source)


def test_cap_snippets_round_robin_over_sources_in_input_order() -> None:
    snippets = [
        snip("a0", "a"),
        snip("a1", "a"),
        snip("a2", "a"),
        snip("b0", "b"),
        snip("c0", "c"),
        snip("c1", "c"),
    ]
    assert [s.id for s in cap_snippets(snippets, 4)] == ["a0", "a1", "b0", "c0"]
    assert [s.id for s in cap_snippets(snippets, 2)] == ["a0", "b0"]
    assert cap_snippets(snippets, None) == snippets and cap_snippets(snippets, 10) == snippets


def test_resolve_snippets_by_id_and_errors() -> None:
    dataset = Dataset(
        articles=[],
        sources=[],
        snippets=[
            Snippet(
                id="x/s#0",
                article="x",
                source_id="x/s",
                index=0,
                text="из датасета",
                word_start=0,
                word_end=2,
            )
        ],
    )
    spec = SectionSpec(id="s1", title="T", snippets=[snip("given", "g")], snippet_ids=["given", "x/s#0"])
    resolved = resolve_snippets(spec, dataset, "Статья")
    assert [(s.id, s.text, s.source_id) for s in resolved] == [
        ("given", "текст given", "g"),
        ("x/s#0", "из датасета", "x/s"),
    ]
    with pytest.raises(ValueError, match=r"'Статья', section 's1'.*no dataset"):
        resolve_snippets(spec, None, "Статья")
    with pytest.raises(ValueError, match=r"unknown snippet id 'nope'"):
        resolve_snippets(SectionSpec(id="s1", title="T", snippet_ids=["nope"]), dataset, "Статья")


def make_context(responder, **sections: object) -> tuple[StageContext, ScriptedChat]:
    chat = ScriptedChat(responder)
    config = RunConfig(models={"writer": ModelConfig(name="fake")}, sections=sections)
    return StageContext(
        config=config, llm=LLM({"writer": chat}), embedder=None, prompts=PromptLibrary()
    ), chat  # type: ignore[arg-type]


def kind(prompt: str) -> str:
    if "Дополни описание" in prompt:
        return "extend"
    if "Кратко опиши" in prompt:
        return "describe"
    if "вводную часть" in prompt:
        return "lead"
    return "write"


def numbered(prompt: str) -> list[str]:
    return re.findall(r"\[\d+\] (\S+)", prompt)


def test_iterative_compression_describes_then_extends_chunk_by_chunk() -> None:
    context, chat = make_context(lambda m: f"D{len(chat.calls)}")
    texts = [f"t{i}" for i in range(12)]
    description, calls = asyncio.run(describe_iterative(context, "Статья", "Раздел", texts))
    prompts = [m[-1]["content"] for m in chat.calls]
    assert [kind(p) for p in prompts] == ["describe", "extend", "extend"] and calls == 3
    assert numbered(prompts[0]) == texts[:5] and numbered(prompts[1]) == texts[5:10]
    assert numbered(prompts[2]) == texts[10:]
    assert "D1" in prompts[1] and "D2" in prompts[2]  # each extension sees the previous description
    assert description == "D3"
    assert "«Статья»" in prompts[0] and "«Раздел»" in prompts[0]


def test_tree_compression_reduces_in_chunks() -> None:
    context, _ = make_context(lambda m: "S" + "".join(numbered(m[-1]["content"])), compression="tree")
    texts = [f"t{i}" for i in range(12)]
    description, calls = asyncio.run(describe_tree(context, "Статья", "Раздел", texts))
    assert calls == 4  # 3 chunks, then one over the 3 descriptions
    assert description == "SSt0t1t2t3t4St5t6t7t8t9St10t11"


def test_snippet_text_is_capped_in_prompts() -> None:
    context, chat = make_context(lambda m: "D", snippet_chars=20)
    asyncio.run(describe_iterative(context, "Статья", "Раздел", ["слово " * 100]))
    prompt = chat.calls[0][-1]["content"]
    assert "[1] слово слово слово …" in prompt and "слово " * 5 not in prompt


def test_write_is_hierarchical_and_always_called() -> None:
    context, chat = make_context(lambda m: "W(" + ",".join(numbered(m[-1]["content"])) + ")")
    spec = SectionSpec(id="s1", title="История", level=2)
    text, calls = asyncio.run(write_section(context, "Статья", spec, ["один"]))
    assert (text, calls) == ("W(один)", 1)  # a single description still goes through the writer
    chat.calls.clear()
    text, calls = asyncio.run(write_section(context, "Статья", spec, [f"d{i}" for i in range(7)]))
    assert calls == 3 and text == "W(W(d0,d1,d2,d3,d4),W(d5,d6))"
    assert all("«История»" in m[-1]["content"] and "«Статья»" in m[-1]["content"] for m in chat.calls)


def test_lead_uses_the_lead_prompt() -> None:
    context, _ = make_context(lambda m: kind(m[-1]["content"]))
    spec = SectionSpec(id="s0", title="Статья", level=1)
    text, _ = asyncio.run(write_section(context, "Статья", spec, ["d"]))
    assert text == "lead"
