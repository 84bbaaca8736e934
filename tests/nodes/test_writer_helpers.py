"""Writer node helpers: source selection, writable sections, rank fusion, assignment, shown-material
mapping."""

from __future__ import annotations

import numpy as np
import pytest

from ruwikibench.conf.builtin_options import OutlineConfig, RankingConfig, SectionsConfig, WriterConfig
from ruwikibench.conf.config import ModelConfig, RunConfig
from ruwikibench.nodes.assignment import (
    choose_sources,
    fuse,
    pick,
    rank_positions,
    section_query,
    writable_sections,
)
from ruwikibench.nodes.writer import (
    clean_lead,
    coerce_outline,
    drafts_from_results,
    lead_body,
    writer_context,
)
from ruwikibench.writer.models import OutlineItem, WrittenSection


def cand(sid: str, rank: int, score: float | None) -> dict:
    return {"snippet_id": sid, "rank": rank, "llm_score": score}


def test_choose_sources_threshold_cap_and_top_up() -> None:
    pool = [cand("a", 1, 0.9), cand("b", 2, 0.8), cand("c", 3, 0.4), cand("d", 4, None), cand("e", 5, 0.1)]
    assert [(c["snippet_id"], t) for c, t in choose_sources(pool, 0.5, 10, 1)] == [("a", False), ("b", False)]
    assert [c["snippet_id"] for c, _ in choose_sources(pool, 0.5, 1, 1)] == ["a"]
    topped = choose_sources(pool, 0.5, 10, 4)
    # scored candidates first, the unscored one last
    assert [(c["snippet_id"], t) for c, t in topped] == [("a", False), ("b", False), ("c", True), ("e", True)]
    assert choose_sources([], 0.5, 10, 3) == []


def items() -> list[OutlineItem]:
    return coerce_outline("## A\n### A1\n#### A1x\n### A2\n## B", "T")


def test_writable_sections() -> None:
    assert [i.title for i in writable_sections(items(), 3, False)] == ["A1", "A2", "B"]
    assert [i.title for i in writable_sections(items(), 3, True)] == ["A", "A1", "A2", "B"]
    assert [i.title for i in writable_sections(items(), 4, False)] == ["A1x", "A2", "B"]
    assert [i.title for i in writable_sections(items(), 2, False)] == ["A", "B"]


def test_section_query_has_title_parents_heading() -> None:
    assert section_query("Москва", items()[2]) == "Москва. A. A1. A1x"


def test_rank_positions() -> None:
    assert rank_positions(np.array([0.1, 3.0, 0.0, 3.0]), positive_only=False).tolist() == [3, 1, 4, 2]
    assert rank_positions(np.array([0.1, 3.0, 0.0, 3.0]), positive_only=True).tolist() == [3, 1, 0, 2]


def test_fuse_is_reciprocal_rank_fusion() -> None:
    bm25 = np.array([[2.0, 0.0, 1.0]])
    cosine = np.array([[0.1, 0.9, 0.5]])
    fused = fuse(bm25, cosine, k=60, w_bm25=1.0, w_emb=2.0)
    # bm25 ranks: 1, none, 2; cosine ranks: 3, 1, 2
    expected = [1 / 61 + 2 / 63, 2 / 61, 1 / 62 + 2 / 62]
    assert fused[0].tolist() == pytest.approx(expected)


def test_pick_shared_and_exclusive() -> None:
    fused = np.array([[0.9, 0.8, 0.1], [0.95, 0.2, 0.3]])
    assert pick(fused, 2, exclusive=False) == [[0, 1], [0, 2]]
    assert pick(fused, 2, exclusive=True) == [[1], [0, 2]]


def test_coerce_outline_forms_and_errors() -> None:
    from_dicts = coerce_outline([{"level": 2, "title": "A"}, {"level": 3, "title": "B"}], "T")
    assert [(i.level, i.title, i.parents) for i in from_dicts] == [(2, "A", []), (3, "B", ["A"])]
    assert coerce_outline([(2, "A")], "T")[0].title == "A"
    assert coerce_outline(from_dicts, "T") == from_dicts
    with pytest.raises(ValueError, match="edited outline"):
        coerce_outline([], "T", "edited outline")
    with pytest.raises(ValueError, match="heading 0"):
        coerce_outline([42], "T")


def test_drafts_number_nonempty_group_descriptions() -> None:
    results = [
        {
            "id": "s1",
            "text": "x [1] y [2]",
            "write_calls": 1,
            "groups": [
                {"index": 1, "snippet_ids": ["b", "c"], "description": "desc b c"},
                {"index": 0, "snippet_ids": ["a"], "description": "desc a"},
                {"index": 2, "snippet_ids": ["d"], "description": "  "},
            ],
        },
        {
            "id": "s2",
            "text": "z [1]",
            "write_calls": 2,
            "groups": [{"index": 0, "snippet_ids": ["e"], "description": "d"}],
        },
    ]
    drafts, notes = drafts_from_results(results)
    assert [(s.n, s.snippet_ids) for s in drafts[0].shown] == [(1, ["a"]), (2, ["b", "c"])]
    assert drafts[1].shown == [] and "s2" in notes[0]


def test_lead_body_and_clean_lead() -> None:
    sections = [
        WrittenSection(id="s1", level=2, title="A", text="one [1]."),
        WrittenSection(id="s2", level=2, title="B", text=""),
    ]
    assert lead_body(sections, 1000) == "## A\none [1]."
    assert lead_body([WrittenSection(id="s", level=2, title="A", text="word " * 100)], 50).endswith(" …")
    assert clean_lead("```\n# Москва\n**Преамбула**\nТекст [1].\n```", "Москва") == "Текст [1]."
    assert (
        clean_lead("Первое [1].\n#### Дата: 15 июня [2].\nДалее.", "T")
        == "Первое [1].\n\nДата: 15 июня [2].\n\nДалее."
    )


def test_flatten_headings_in_section_texts() -> None:
    from ruwikibench.nodes.answers import flatten_headings

    assert flatten_headings("## A\n\nтекст #1 [2]\n\n\n### Б ###\nещё") == "A\n\nтекст #1 [2]\n\nБ\n\nещё"
    drafts, _ = drafts_from_results(
        [
            {
                "id": "s",
                "text": "#### Заголовок\nФакт [1].",
                "write_calls": 1,
                "groups": [{"index": 0, "snippet_ids": ["a"], "description": "d"}],
            }
        ]
    )
    assert drafts[0].text == "Заголовок\n\nФакт [1]."


def test_the_writer_profile_sets_writer_mode_and_nodes_only_read_it() -> None:
    config = RunConfig(models={"writer": ModelConfig(name="m")})
    config.options(RankingConfig).query_mode = "reference"
    config.options(SectionsConfig).oracle_filter = 0.5
    config = config.with_options(
        config.options(WriterConfig).model_copy(
            update={"query_mode": "title", "group_threshold": 1.1, "per_section": 8}
        )
    )

    from ruwikibench.stage.context import StageContext

    context = StageContext(config=config, llm=None, embedder=None, prompts=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="runs under the 'writer' profile"):
        writer_context(context)
    writer = context.with_profile("writer")
    assert writer.config.profile == "writer" and writer.with_profile("writer") is writer
    derived = writer_context(writer).config
    assert derived is writer.config  # the node hands on the config as it is
    assert derived.options(RankingConfig).query_mode == "title"
    assert derived.options(OutlineConfig).centroids == "data"
    assert derived.options(SectionsConfig).oracle_filter is None
    assert derived.options(SectionsConfig).group_threshold == 1.1
    assert derived.options(SectionsConfig).chunk_size == 8  # all eight materials in one write prompt
    assert derived.options(SectionsConfig).prompt_write == config.options(WriterConfig).prompt_section
    assert context.config.options(SectionsConfig).oracle_filter == 0.5  # the run's own config is untouched
    assert context.config.profile == "benchmark"
    with pytest.raises(ValueError, match="load it again"):
        writer.config.with_profile("benchmark")
