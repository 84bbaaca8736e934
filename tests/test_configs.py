"""Every shipped config loads, and every prompt file it names exists."""

from pathlib import Path

import pytest

from ruwikibench.config import load_config
from ruwikibench.prompts import PromptLibrary

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_config_loads_and_prompts_exist(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUWIKIBENCH_MODEL", "some/model")
    config = load_config(path)
    library = PromptLibrary(config.prompts_dir)
    for block in (config.ranking, config.outline, config.sections):
        for field, value in block:
            if field.startswith("prompt_"):
                assert library.resolve(value).exists()


def test_ablation_configs_are_local_yaml_but_for_what_they_change() -> None:
    root = Path(__file__).resolve().parents[1] / "configs"
    local = load_config(root / "local.yaml")
    flat = load_config(root / "ablation-outline-flat-merge.yaml")
    assert flat.outline.prompt_merge == "ru/outline_merge_flat.txt" and flat.stages == ["outline"]
    assert flat.outline.model_copy(update={"prompt_merge": local.outline.prompt_merge}) == local.outline
    assert (flat.models, flat.writer, flat.citations, flat.ranking) == (local.models, local.writer, local.citations,
                                                                         local.ranking)


def test_base_chain_merges_mappings_resolves_prompts_dir_per_file_and_names_errors(tmp_path: Path) -> None:
    from ruwikibench.config import ConfigError

    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "root.yaml").write_text(
        "name: root\nprompts_dir: prompts\nmodels: {writer: {name: w, max_tokens: 100}}\n"
        "outline: {mode: direct, snippet_chars: 500}\n", encoding="utf-8")
    (tmp_path / "child.yaml").write_text(
        "base: base/root.yaml\nname: child\nmodels: {writer: {max_tokens: 7}}\noutline: {snippet_chars: 9}\n",
        encoding="utf-8")
    config = load_config(tmp_path / "child.yaml")
    assert config.name == "child" and config.models["writer"].name == "w" and config.models["writer"].max_tokens == 7
    assert (config.outline.mode, config.outline.snippet_chars) == ("direct", 9)
    assert config.prompts_dir == str((tmp_path / "base" / "prompts").resolve())  # relative to the file naming it
    (tmp_path / "loop.yaml").write_text("base: loop.yaml\nname: x\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="loops back"):
        load_config(tmp_path / "loop.yaml")
    (tmp_path / "orphan.yaml").write_text("base: missing.yaml\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"missing.yaml: config file not found \(the base of"):
        load_config(tmp_path / "orphan.yaml")
