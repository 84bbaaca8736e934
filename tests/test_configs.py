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
