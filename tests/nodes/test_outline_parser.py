"""The outline parser: crafted cases for each rule, and real model outputs saved as fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from ruwikibench.nodes.outline_parser import Heading, build_tree, clean_title, parse_outline, to_markdown

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "outline"


def levels_titles(text: str, **kwargs: object) -> list[tuple[int, str]]:
    return [(h.level, h.title) for h in parse_outline(text, **kwargs).headings]  # type: ignore[arg-type]


def test_hash_headings_keep_written_levels_and_strip_decoration() -> None:
    text = "# **Python**\n##1. История\n### 1.1. Ранние годы ###\n#### [Гвидо](http://x) ван Россум:\n"
    assert levels_titles(text) == [
        (1, "Python"),
        (2, "История"),
        (3, "Ранние годы"),
        (4, "Гвидо ван Россум"),
    ]


def test_code_fence_prose_and_end_marker() -> None:
    text = (
        "Вот объединённый план статьи:\n\n```markdown\n# Python\n## История\n"
        "Этот раздел рассказывает о том, как появился язык и кто его создал.\n## Синтаксис\n```\n"
        "**END**\n## После конца\n"
    )
    parsed = parse_outline(text)
    assert [(h.level, h.title) for h in parsed.headings] == [(1, "Python"), (2, "История"), (2, "Синтаксис")]
    assert parsed.ended
    assert parsed.dropped == [
        "Вот объединённый план статьи:",
        "Этот раздел рассказывает о том, как появился язык и кто его создал.",
    ]


def test_end_marker_inline_and_variants() -> None:
    assert levels_titles("# А\n## Б **END**\n## В") == [(1, "А"), (2, "Б")]
    assert parse_outline("# А\nEND.").ended
    assert parse_outline("# А\n**Конец**").ended
    assert not parse_outline("# А\n## Конец света").ended
    assert levels_titles("# А\n## Конец света") == [(1, "А"), (2, "Конец света")]


def test_numbered_headings_nest_by_components_under_the_last_hash_heading() -> None:
    text = "# Python\n1. История\n1.1 Ранние годы\n1.2. Версия 3\n2) Синтаксис\nIV. Культура\n"
    assert levels_titles(text) == [
        (1, "Python"),
        (2, "История"),
        (3, "Ранние годы"),
        (3, "Версия 3"),
        (2, "Синтаксис"),
        (2, "Культура"),
    ]


def test_numbered_lines_that_are_sentences_are_prose() -> None:
    text = (
        "1. История\n"
        "2. Язык был создан Гвидо ван Россумом в 1991 году и с тех пор стал одним из самых популярных "
        "языков.\n100 лет назад\n"
    )
    parsed = parse_outline(text)
    assert [(h.level, h.title) for h in parsed.headings] == [(1, "История")]
    assert len(parsed.dropped) == 2


def test_bold_headings_and_bold_lead_with_explanation() -> None:
    text = (
        "# Python\n**История**\n1. **Синтаксис**: отступы, выражения и имена\n- **Типы** — числа и строки\n"
    )
    assert levels_titles(text) == [(1, "Python"), (2, "История"), (2, "Синтаксис")]
    assert levels_titles(text, bullets="headings")[-1] == (3, "Типы")


def test_bullets_are_notes_under_hash_structure_but_the_outline_when_alone() -> None:
    with_structure = "# Python\n## История\n- ранние годы\n- версия 3\n## Синтаксис\n"
    parsed = parse_outline(with_structure)
    assert [h.title for h in parsed.headings] == ["Python", "История", "Синтаксис"]
    assert parsed.dropped == ["- ранние годы", "- версия 3"]
    assert levels_titles(with_structure, bullets="headings") == [
        (1, "Python"),
        (2, "История"),
        (3, "ранние годы"),
        (3, "версия 3"),
        (2, "Синтаксис"),
    ]
    alone = "# Python\n- История\n  - Ранние годы\n    * Голландия\n- Синтаксис\n"
    assert levels_titles(alone) == [
        (1, "Python"),
        (2, "История"),
        (3, "Ранние годы"),
        (4, "Голландия"),
        (2, "Синтаксис"),
    ]
    assert levels_titles(alone, bullets="prose") == [(1, "Python")]


def test_meta_headings_are_not_outline_headings() -> None:
    text = "**План статьи:**\n# План статьи: Python\n## Структура\n## История\n"
    assert levels_titles(text) == [(1, "Python"), (2, "Структура"), (2, "История")]


def test_clean_title() -> None:
    assert clean_title("**Раздел 2: История языка.**") == "История языка"
    assert clean_title("Заголовок: Синтаксис") == "Синтаксис"
    assert clean_title("`1.2.` Типы   данных:") == "Типы данных"
    assert clean_title("Часть речи") == "Часть речи"


def test_empty_and_prose_only_answers() -> None:
    assert parse_outline("").headings == []
    parsed = parse_outline("Извините, я не могу составить план по этим фрагментам.")
    assert parsed.headings == [] and parsed.dropped and not parsed.ended


def test_tree_and_markdown_round_trip() -> None:
    headings = [
        Heading(level=lv, title=t) for lv, t in [(1, "A"), (2, "B"), (4, "C"), (3, "D"), (2, "E"), (1, "F")]
    ]
    tree = build_tree(headings)
    assert [n.title for n in tree] == ["A", "F"]
    assert [n.title for n in tree[0].children] == ["B", "E"]
    assert [n.title for n in tree[0].children[0].children] == ["C", "D"]
    assert levels_titles(to_markdown(headings)) == [(h.level, h.title) for h in headings]


def _fixture_cases() -> list[Path]:
    return sorted(FIXTURES.glob("*.txt"))


@pytest.mark.parametrize("raw", _fixture_cases(), ids=lambda p: p.stem)
def test_real_model_outputs(raw: Path) -> None:
    """Each fixture ``X.txt`` is a raw answer of the local model; ``X.expected.md`` the outline read by
    hand."""
    expected = raw.with_name(raw.stem + ".expected.md").read_text(encoding="utf-8").strip()
    assert parse_outline(raw.read_text(encoding="utf-8")).markdown().strip() == expected


def test_fixtures_present() -> None:
    assert len(_fixture_cases()) >= 3, f"expected real model outputs in {FIXTURES}"
