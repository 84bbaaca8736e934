"""Reading external outputs: every malformed row is one error naming the file, the line and the field."""

from __future__ import annotations

import pytest

from ruwikibench.external.formats import ExternalFormatError, read_rows
from tests.external.conftest import write_jsonl


def test_rows_with_line_numbers_blank_lines_skipped(tmp_path) -> None:
    path = write_jsonl(
        tmp_path / "r.jsonl",
        [{"article": "Москва", "ranking": ["a", "b"]}, "", {"article": "Python", "ranking": []}],
    )
    rows = read_rows(path, "ranking")
    assert [line for line, _ in rows] == [1, 3]
    assert rows[0][1].ranking == ["a", "b"] and rows[0][1].pool is None


@pytest.mark.parametrize(
    ("stage", "row", "expected"),
    [
        ("ranking", {"article": "Москва"}, "line 2|field 'ranking'"),
        ("ranking", {"article": "Москва", "ranking": ["a", "a"]}, "field 'ranking'|'a' appears twice"),
        ("ranking", {"article": "", "ranking": []}, "field 'article'"),
        ("outline", {"article": "Москва", "outline": 5}, "field 'outline'"),
        ("sections", {"article": "Москва", "text": "..."}, "field 'section'"),
        (
            "article",
            {"article": "Москва", "markdown": "x", "sources": {"один": "https://a"}},
            "field 'sources'",
        ),
        ("article", {"article": "Москва", "markdown": "x", "sources": {"1": ""}}, "source 1 is empty"),
        ("article", ["not", "an", "object"], "a row must be a JSON object"),
    ],
)
def test_malformed_row_names_line_and_field(tmp_path, stage, row, expected) -> None:
    good = {
        "ranking": {"article": "Python", "ranking": []},
        "outline": {"article": "Python", "outline": "# P"},
        "sections": {"article": "Python", "section": "s1", "text": "т"},
        "article": {"article": "Python", "markdown": "# P"},
    }[stage]
    path = write_jsonl(tmp_path / "x.jsonl", [good, row])
    with pytest.raises(ExternalFormatError) as err:
        read_rows(path, stage)
    message = str(err.value)
    assert f"{path}:2:" in message
    for part in expected.split("|"):
        assert part.replace("line 2", f"{path}:2") in message


def test_bad_json_and_missing_file(tmp_path) -> None:
    path = write_jsonl(tmp_path / "x.jsonl", ['{"article": "Москва", "ranking": [}'])
    with pytest.raises(ExternalFormatError, match=r"x\.jsonl:1: not valid JSON"):
        read_rows(path, "ranking")
    with pytest.raises(ExternalFormatError, match="outputs file not found"):
        read_rows(tmp_path / "none.jsonl", "ranking")
