"""Every built-in stage declares the model its score() receives: a stored output that does not fit it is one
error naming the stage, before any scoring; a fitting one arrives validated, with the keys the model does not
name kept."""

from __future__ import annotations

import pytest

from ruwikibench.nodes.ranking import RankingOutputModel
from ruwikibench.nodes.sections import SectionsOutputModel
from ruwikibench.nodes.writer import WriterOutputModel
from ruwikibench.stage.contract import StageOutputError
from ruwikibench.stage.registry import get_stage


@pytest.mark.parametrize(
    ("stage", "model"),
    [("ranking", RankingOutputModel), ("sections", SectionsOutputModel), ("writer", WriterOutputModel)],
)
def test_built_in_stages_declare_their_output_model(stage: str, model: type) -> None:
    assert get_stage(stage).output_model is model


def test_a_fitting_output_arrives_validated_with_other_keys_kept() -> None:
    parsed = get_stage("ranking").parse_output(
        {"query_mode": "title", "pool_size": 3, "candidates": [], "extra": 1}
    )
    assert isinstance(parsed, RankingOutputModel)
    assert (parsed.query_mode, parsed.pool_size, parsed.candidates) == ("title", 3, [])
    assert parsed.model_extra == {"extra": 1}


@pytest.mark.parametrize(
    ("stage", "output", "field"),
    [
        ("ranking", {"candidates": "not a list"}, "candidates"),
        ("sections", {"results": [1, 2]}, "results.0"),
        ("writer", {"sources": []}, "article"),
    ],
)
def test_an_output_that_does_not_fit_names_the_stage_and_the_field(
    stage: str, output: dict, field: str
) -> None:
    with pytest.raises(StageOutputError, match=rf"stage '{stage}'.*{field}"):
        get_stage(stage).parse_output(output)
