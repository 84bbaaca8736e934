"""Every shipped config loads, and every prompt file it names exists."""

from pathlib import Path

import pytest

from ruwikibench.conf.builtin_options import OutlineConfig, RankingConfig, SectionsConfig, WriterConfig
from ruwikibench.conf.loader import load_config
from ruwikibench.prompts import PromptLibrary

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_config_loads_and_prompts_exist(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUWIKIBENCH_MODEL", "some/model")
    config = load_config(path)
    library = PromptLibrary(config.prompts_dir)
    for block in (
        config.options(RankingConfig),
        config.options(OutlineConfig),
        config.options(SectionsConfig),
    ):
        for field, value in block:
            if field.startswith("prompt_"):
                assert library.resolve(value).exists()


def test_ablation_configs_are_local_yaml_but_for_what_they_change() -> None:
    root = Path(__file__).resolve().parents[1] / "configs"
    local = load_config(root / "local.yaml")
    flat = load_config(root / "ablation-outline-flat-merge.yaml")
    assert flat.options(OutlineConfig).prompt_merge == "ru/outline_merge_flat.txt" and flat.stages == [
        "outline"
    ]
    assert flat.options(OutlineConfig).model_copy(
        update={"prompt_merge": local.options(OutlineConfig).prompt_merge}
    ) == local.options(OutlineConfig)
    assert (flat.models, flat.options(WriterConfig), flat.citations, flat.options(RankingConfig)) == (
        local.models,
        local.options(WriterConfig),
        local.citations,
        local.options(RankingConfig),
    )


def test_base_chain_merges_mappings_resolves_prompts_dir_per_file_and_names_errors(tmp_path: Path) -> None:
    from ruwikibench.conf.config import ConfigError

    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "root.yaml").write_text(
        "name: root\nprompts_dir: prompts\nmodels: {writer: {name: w, max_tokens: 100}}\n"
        "outline: {mode: direct, snippet_chars: 500}\n",
        encoding="utf-8",
    )
    (tmp_path / "child.yaml").write_text(
        "base: base/root.yaml\nname: child\nmodels: {writer: {max_tokens: 7}}\noutline: {snippet_chars: 9}\n",
        encoding="utf-8",
    )
    config = load_config(tmp_path / "child.yaml")
    assert (
        config.name == "child"
        and config.models["writer"].name == "w"
        and config.models["writer"].max_tokens == 7
    )
    assert (config.options(OutlineConfig).mode, config.options(OutlineConfig).snippet_chars) == ("direct", 9)
    assert config.prompts_dir == str(
        (tmp_path / "base" / "prompts").resolve()
    )  # relative to the file naming it
    (tmp_path / "loop.yaml").write_text("base: loop.yaml\nname: x\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="loops back"):
        load_config(tmp_path / "loop.yaml")
    (tmp_path / "orphan.yaml").write_text("base: missing.yaml\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"missing.yaml: config file not found \(the base of"):
        load_config(tmp_path / "orphan.yaml")


def test_a_prompt_with_an_unknown_field_fails_when_the_config_loads(tmp_path: Path) -> None:
    from ruwikibench.conf.config import ConfigError

    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "typo.txt").write_text("Статья «{titel}»: {texts}", encoding="utf-8")
    (tmp_path / "broken.txt").write_text("Статья {title", encoding="utf-8")
    (tmp_path / "fewer.txt").write_text("Только {title}", encoding="utf-8")
    base = "models: {writer: {name: w}}\nprompts_dir: prompts\n"
    (tmp_path / "typo.yaml").write_text(base + "outline: {prompt_describe: typo.txt}\n", encoding="utf-8")
    with pytest.raises(
        ConfigError,
        match=r"outline\.prompt_describe .*typo\.txt.*unknown field\(s\) \{titel\}; "
        r"this prompt is given \{texts\}, \{title\}",
    ):
        load_config(tmp_path / "typo.yaml")
    (tmp_path / "missing.yaml").write_text(
        base + "ranking: {prompt_relevance: nowhere.txt}\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=r"ranking\.prompt_relevance: prompt file 'nowhere.txt' not found"):
        load_config(tmp_path / "missing.yaml")
    (tmp_path / "broken.yaml").write_text(
        base + f"citations: {{prompt: {tmp_path / 'broken.txt'}}}\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=r"citations\.prompt .*not a str.format template"):
        load_config(tmp_path / "broken.yaml")
    (tmp_path / "fewer.yaml").write_text(
        base + f"writer: {{prompt_lead: {tmp_path / 'fewer.txt'}}}\n", encoding="utf-8"
    )
    assert (
        load_config(tmp_path / "fewer.yaml").options(WriterConfig).prompt_lead.endswith("fewer.txt")
    )  # using fewer is fine


def test_every_shipped_prompt_slot_declares_the_fields_its_default_file_uses() -> None:
    from ruwikibench.conf.config import ModelConfig, RunConfig
    from ruwikibench.conf.loader import prompt_blocks
    from ruwikibench.prompts import placeholders

    config = RunConfig(models={"writer": ModelConfig(name="w")})
    library, slots = PromptLibrary(), 0
    for block_name, block in prompt_blocks(config):
        for name, info in type(block).model_fields.items():
            declared = (info.json_schema_extra or {}).get("prompt_fields")  # type: ignore[union-attr]
            assert name.startswith("prompt") == (declared is not None) or block_name == "judges", name
            if declared is not None:
                slots += 1
                given = set(declared)
                used = placeholders(library.get(getattr(block, name)).text)
                assert used and used <= given, f"{block_name}.{name}: uses {used}, declares {given}"
    assert slots == 21
