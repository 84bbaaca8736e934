"""Report titles of a stage: the paper's table for the built-in stages, a plug-in stage's own description, and
a stage without one as its bare name (no empty brackets)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from ruwikibench.reporting.tables import table_title
from ruwikibench.stage.registry import register_stage, unregister_stage


class _Described:
    name = "described_title_stage"
    description = "counts the words of the title"
    columns: ClassVar[list[tuple[str, str]]] = [("Words", "words")]

    def build_graph(self) -> Any: ...
    def units(self, *args: Any) -> list[Any]:
        return []

    def score(self, *args: Any) -> list[Any]:
        return []

    def texts(self, *args: Any) -> list[Any]:
        return []


class _Bare(_Described):
    name = "bare_title_stage"
    description = ""


@pytest.fixture()
def stages():
    register_stage(_Described)
    register_stage(_Bare)
    yield
    unregister_stage(_Described.name)
    unregister_stage(_Bare.name)


def test_titles_name_the_paper_table_or_the_stage_description(stages) -> None:
    assert table_title("ranking") == "ranking (Tables 3/4)"
    assert table_title("writer", "×100") == "writer (whole article, not in the paper; ×100)"
    assert table_title("described_title_stage") == "described_title_stage (counts the words of the title)"
    assert (
        table_title("described_title_stage", "×100")
        == "described_title_stage (counts the words of the title; ×100)"
    )
    assert table_title("bare_title_stage") == "bare_title_stage"
    assert table_title("bare_title_stage", "×100") == "bare_title_stage (×100)"
    assert table_title("no_such_stage_anywhere") == "no_such_stage_anywhere"
