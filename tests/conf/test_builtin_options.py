"""The built-in stages' settings are their options models under ``stage_options.<stage>``, like a plug-in's;
the top-level keys (``ranking:``, ``outline:``, ``sections:``, ``writer:``) are aliases: the same config, the
same identity JSON and the same run ids (pinned before the options moved, in tests/runner/test_run_id.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ruwikibench.conf.builtin_options import OutlineConfig, RankingConfig, SectionsConfig, WriterConfig
from ruwikibench.conf.config import RunConfig
from ruwikibench.conf.loader import load_config
from ruwikibench.runner.execute import RunOptions, run_id_for
from ruwikibench.stage.registry import get_stage

MODELS = {"writer": {"name": "fake", "endpoints": ["http://127.0.0.1:8000/v1"]}}
BERTA = {"kind": "sentence-transformers", "name": "sergeyzh/BERTA"}


def _both(embedder: dict[str, object] | None = None, **ranking: object) -> tuple[RunConfig, RunConfig]:
    """The same settings written with the alias (``ranking:``) and with ``stage_options.ranking``."""
    base: dict[str, object] = {"name": "r", "models": MODELS, **({"embedder": embedder} if embedder else {})}
    alias = RunConfig.model_validate({**base, "ranking": ranking})
    canonical = RunConfig.model_validate({**base, "stage_options": {"ranking": ranking}})
    return alias, canonical


@pytest.mark.parametrize(
    ("embedder", "ranking", "stages", "pinned"),
    [  # the ids tests/runner/test_run_id.py pins for the alias form
        (None, {"query_mode": "generated"}, None, "r-586d8849"),
        (None, {"query_mode": "title"}, None, "r-66468370"),
        (None, {}, ["outline", "sections"], "r-0ca768da"),
        (BERTA, {"query_mode": "generated"}, None, "r-66e01607"),
    ],
)
def test_the_stage_options_form_has_the_run_id_of_its_alias_form(embedder, ranking, stages, pinned) -> None:
    from tests.retrieval.synthetic import make_dataset

    options = RunOptions() if stages is None else RunOptions(stages=stages)
    alias, canonical = _both(embedder, **ranking)
    assert json.dumps(canonical.identity(), sort_keys=True) == json.dumps(alias.identity(), sort_keys=True)
    assert (
        run_id_for(canonical, make_dataset(), options) == pinned == run_id_for(alias, make_dataset(), options)
    )


def test_each_builtin_stage_declares_its_options_and_the_config_holds_them_typed() -> None:
    config = RunConfig.model_validate(
        {"models": MODELS, "outline": {"mode": "direct"}, "stage_options": {"sections": {"unit": "article"}}}
    )
    for name, model in (
        ("ranking", RankingConfig),
        ("outline", OutlineConfig),
        ("sections", SectionsConfig),
        ("writer", WriterConfig),
    ):
        assert get_stage(name).options_model is model and get_stage(name).options_alias
        assert (
            isinstance(config.stage_options[name], model)
            and config.options(model) is config.stage_options[name]
        )
    assert config.options(OutlineConfig).mode == "direct" and config.options(SectionsConfig).unit == "article"
    assert config.stages == ["ranking", "outline", "sections"]  # the stages that run by default


def test_the_canonical_block_wins_over_its_alias_key_by_key(tmp_path: Path) -> None:
    """A base config written with the alias, a child with ``stage_options``: both apply, the child's wins."""
    (tmp_path / "base.yaml").write_text(
        yaml.safe_dump({"models": MODELS, "outline": {"mode": "direct", "snippet_chars": 500}}),
        encoding="utf-8",
    )
    (tmp_path / "child.yaml").write_text(
        yaml.safe_dump({"base": "base.yaml", "stage_options": {"outline": {"snippet_chars": 9}}}),
        encoding="utf-8",
    )
    outline = load_config(tmp_path / "child.yaml").options(OutlineConfig)
    assert (outline.mode, outline.snippet_chars) == ("direct", 9)


def test_a_bad_option_names_the_field_in_either_form(tmp_path: Path) -> None:
    from ruwikibench.conf.config import ConfigError

    for data in ({"outline": {"mode": "nope"}}, {"stage_options": {"outline": {"mode": "nope"}}}):
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump({"models": MODELS, **data}), encoding="utf-8")
        with pytest.raises(ConfigError, match=rf"^{path}: stage_options\.outline\.mode: Input should be"):
            load_config(path)


def test_the_writer_profile_rewrites_the_options_in_either_form() -> None:
    alias = RunConfig.model_validate(
        {"models": MODELS, "profile": "writer", "writer": {"query_mode": "title"}}
    )
    canonical = RunConfig.model_validate(
        {"models": MODELS, "profile": "writer", "stage_options": {"writer": {"query_mode": "title"}}}
    )
    for config in (alias, canonical):
        assert config.options(RankingConfig).query_mode == "title"
        assert config.options(OutlineConfig).centroids == "data"
        assert config.options(SectionsConfig).oracle_filter is None
    assert alias.identity() == canonical.identity()
    with pytest.raises(ValueError, match="'nope' is not a profile; known: benchmark, writer"):
        RunConfig.model_validate({"models": MODELS, "profile": "nope"})


def test_a_config_recorded_with_stage_options_reads_back_to_the_same_identity() -> None:
    """spec.json records the config as dumped (the options under ``stage_options``); read back it is the
    same."""
    alias, _ = _both(query_mode="title")
    recorded = json.loads(json.dumps(alias.model_dump(mode="json")))
    assert "ranking" not in recorded and recorded["stage_options"]["ranking"]["query_mode"] == "title"
    assert RunConfig.model_validate(recorded).identity() == alias.identity()


def test_code_reading_the_old_attributes_gets_the_same_values() -> None:
    """An outside plug-in written before stage_options reads ``config.ranking.snippet_chars``: the same object
    as ``config.options(RankingConfig)``; a name that is no stage with an alias is still an AttributeError."""
    config = RunConfig.model_validate({"models": MODELS, "stage_options": {"ranking": {"snippet_chars": 7}}})
    assert config.ranking is config.options(RankingConfig) and config.ranking.snippet_chars == 7
    assert config.writer is config.options(WriterConfig)
    with pytest.raises(AttributeError, match="no attribute 'rankings'"):
        _ = config.rankings
