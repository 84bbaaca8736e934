"""Outline files: Markdown headings <-> outline items (levels normalized, title line dropped, clear
errors)."""

from __future__ import annotations

import pytest

from ruwikibench.writer.outline_file import (
    OutlineFileError,
    items_from_headings,
    outline_markdown,
    parse_outline_markdown,
    read_outline_file,
)


def test_parse_drops_title_and_keeps_levels() -> None:
    text = "# Москва\n\nsome note\n## История\n### Основание\n## География\n"
    items = parse_outline_markdown(text, "Москва")
    assert [(i.id, i.level, i.title) for i in items] == [
        ("s1", 2, "История"),
        ("s2", 3, "Основание"),
        ("s3", 2, "География"),
    ]
    assert items[1].parents == ["История"] and items[2].parents == []


def test_levels_shifted_and_jumps_clamped() -> None:
    items = items_from_headings([(3, "A"), (5, "B"), (3, "C")])
    assert [(i.level, i.title) for i in items] == [(2, "A"), (3, "B"), (2, "C")]


def test_several_level_one_headings_become_h2() -> None:
    items = items_from_headings([(1, "A"), (2, "A1"), (1, "B")], "Другое")
    assert [(i.level, i.title) for i in items] == [(2, "A"), (3, "A1"), (2, "B")]


def test_round_trip() -> None:
    items = parse_outline_markdown("## A\n### B\n## C", "T")
    assert parse_outline_markdown(outline_markdown("T", items), "T") == items


def test_errors_name_the_file(tmp_path) -> None:
    with pytest.raises(OutlineFileError, match="not found"):
        read_outline_file(tmp_path / "missing.md")
    empty = tmp_path / "empty.md"
    empty.write_text("# Title only\n\nno headings\n", encoding="utf-8")
    with pytest.raises(OutlineFileError, match="empty.md: no Markdown headings"):
        read_outline_file(empty, "Title only")


def test_a_lone_top_heading_is_kept_unless_it_is_the_title() -> None:
    # a model answered one '# …' heading (not the title): that is the outline, not a title line
    assert [(i.level, i.title) for i in items_from_headings([(1, "Решение МОК")], "Олимпиада")] == [
        (2, "Решение МОК")
    ]
    assert items_from_headings([(1, "Олимпиада")], "Олимпиада") == []
    assert [i.title for i in items_from_headings([(1, "Любой заголовок"), (2, "A")], "Т")] == ["A"]
