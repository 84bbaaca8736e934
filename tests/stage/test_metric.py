"""Metric declarations: what the reports derive from them, and stages written with the deprecated
attributes."""

from __future__ import annotations

from typing import ClassVar

import pytest
from pydantic import ValidationError

from ruwikibench.plugin import Metric
from ruwikibench.stage.contract import AdaptedStage, Stage
from ruwikibench.stage.metric import (
    baseline_keys,
    count_keys,
    floor_keys,
    glossary,
    headline,
    ladder_keys,
    mark,
    paired_metrics,
    table_metrics,
)
from ruwikibench.stage.registry import get_stage, stage_names

F1 = Metric(key="f1", label="F1", description="sentence F1", kind="embedding", floor=True, vs_baselines=True)
HIDDEN = Metric(key="p", label="P", kind="embedding", floor=True, column=False)
COUNT = Metric(key="n", label="Count", description="headings", scale="count", direction="neither")
ERR = Metric(key="err", label="Errors", description="wrong words", direction="lower", headline=True)
DECLARED = (F1, HIDDEN, COUNT, ERR)


def test_the_derived_columns_floors_and_comparisons() -> None:
    assert [m.key for m in table_metrics(DECLARED)] == ["f1", "f1_floor", "f1_rescaled", "n", "err"]
    assert floor_keys(DECLARED) == ("f1", "p") and ladder_keys(DECLARED) == ("f1", "p")
    assert count_keys(DECLARED) == {"n"}
    assert baseline_keys(DECLARED) == ["f1", "f1_rescaled"]
    assert baseline_keys((COUNT, ERR)) == ["err"]  # none flagged: the paired metrics
    assert [m.key for m in paired_metrics(DECLARED)] == ["f1", "err"]  # counts and hidden metrics are not
    assert headline(DECLARED) == ERR and headline((F1, COUNT)) == F1
    assert [mark(m) for m in (F1, COUNT, ERR)] == ["↑", "·", "↓"]
    assert glossary((F1, ERR))[0] == ("F1 ↑", "×100", "sentence F1")
    assert glossary((F1, ERR))[2][0] == "F1 rescaled ↑" and glossary((F1, ERR))[3][0] == "Errors ↓"


def test_a_declaration_is_checked() -> None:
    with pytest.raises(ValidationError, match="direction"):
        Metric(key="x", label="X", direction="up")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="key"):
        Metric(key="", label="X")


def test_every_builtin_column_has_a_meaning_and_a_direction() -> None:
    builtin = ("ranking", "outline", "sections", "writer")
    assert set(builtin) <= set(stage_names())
    for name in builtin:
        declared = get_stage(name).metrics
        assert declared and len({m.key for m in declared}) == len(declared), name
        for column, _, meaning in glossary(declared):
            assert column[-1] in "↑↓·" and meaning != "no description declared", (name, column)


LEGACY = {
    "columns": [("Mean F1", "f1"), ("Headings", "n")],
    "count_keys": ("n",),
    "floor_keys": ("f1", "p"),
    "baseline_keys": ("f1", "f1_rescaled"),
    "headline_key": "n",
}


def test_the_deprecated_attributes_still_declare_the_metrics() -> None:
    """A plug-in written before Metric (a plain object, or a Stage subclass) gets the equivalent
    declarations."""

    class Old:
        name = "old_plugin"
        columns: ClassVar = LEGACY["columns"]
        count_keys = LEGACY["count_keys"]
        floor_keys = LEGACY["floor_keys"]
        baseline_keys = LEGACY["baseline_keys"]
        headline_key = LEGACY["headline_key"]

    class OldSubclass(Stage[dict]):
        name = "old_subclass"
        columns: ClassVar = LEGACY["columns"]
        count_keys = LEGACY["count_keys"]
        floor_keys = LEGACY["floor_keys"]
        baseline_keys = LEGACY["baseline_keys"]
        headline_key = LEGACY["headline_key"]

    for declared in (AdaptedStage(Old()).metrics, OldSubclass.metrics):
        assert [m.key for m in table_metrics(declared)] == ["f1", "f1_floor", "f1_rescaled", "n"]
        assert floor_keys(declared) == ("f1", "p") and count_keys(declared) == {"n"}
        assert baseline_keys(declared) == ["f1", "f1_rescaled"]
        assert headline(declared) is not None and headline(declared).key == "n"  # type: ignore[union-attr]
