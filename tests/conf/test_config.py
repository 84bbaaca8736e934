from pathlib import Path

import pytest

from ruwikibench.conf.builtin_options import OutlineConfig, RankingConfig, SectionsConfig
from ruwikibench.conf.config import ConfigError
from ruwikibench.conf.loader import load_config
from ruwikibench.prompts import PromptLibrary


def test_config_error_names_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("models:\n  writer:\n    name: m\n    temperatur: 0.1\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "bad.yaml" in str(err.value) and "temperatur" in str(err.value)


def test_role_fallback(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("models:\n  writer:\n    name: m\n    endpoints: [http://127.0.0.1:1/v1]\n")
    config = load_config(path)
    assert config.model_for("judge").name == "m"
    assert config.models["writer"].temperature == 0.01 and config.models["writer"].top_p == 0.9


def test_prompt_override_dir_wins_and_hash_recorded(tmp_path: Path) -> None:
    (tmp_path / "ru").mkdir()
    (tmp_path / "ru" / "x.txt").write_text("Привет, {name}")
    library = PromptLibrary(tmp_path)
    assert library.get("ru/x.txt").format(name="мир") == "Привет, мир"
    assert list(library.hashes()) == ["ru/x.txt"]


def test_environment_expansion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "env.yaml"
    path.write_text("models:\n  writer:\n    name: ${MODEL:-m}\n    endpoints: ['${BASE}']\n")
    monkeypatch.setenv("BASE", "http://h:8000/v1")
    assert load_config(path).models["writer"].endpoints == ["http://h:8000/v1"]
    monkeypatch.delenv("BASE")
    with pytest.raises(ConfigError, match="BASE"):
        load_config(path)


def test_stages_are_checked_against_the_registry(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "models:\n  writer: {name: m, endpoints: ['http://127.0.0.1:9/v1']}\nstages: [ranking, nope]\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(error.value).startswith(
        f"{path}: stages.1: unknown stage 'nope'; known: ranking, outline, sections"
    )


def test_a_writer_profile_in_yaml_sets_writer_mode(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(
        "profile: writer\nmodels:\n  writer: {name: m, endpoints: ['http://127.0.0.1:9/v1']}\n"
        "ranking: {query_mode: reference}\nsections: {oracle_filter: 0.4}\nwriter: {query_mode: title}\n",
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.profile == "writer"
    assert (
        config.options(RankingConfig).query_mode,
        config.options(OutlineConfig).centroids,
        config.options(SectionsConfig).oracle_filter,
    ) == (
        "title",
        "data",
        None,
    )
    assert config.model_dump(mode="json")["profile"] == "writer"  # what spec.json records


def test_one_role_fallback_rule_for_configs_and_clients() -> None:
    from ruwikibench.conf.config import ModelConfig, RunConfig, role_served_by
    from ruwikibench.models.fake import ScriptedChat
    from ruwikibench.models.llm import LLM

    assert role_served_by("support", {"judge", "writer"}) == "judge"
    assert role_served_by("support", {"writer"}) == "writer"
    assert role_served_by("query", {"ranking", "outline"}) == "outline"
    assert role_served_by("judge", set()) is None
    config = RunConfig(models={"judge": ModelConfig(name="j"), "writer": ModelConfig(name="w")})
    llm = LLM({"judge": ScriptedChat(lambda m: "j"), "writer": ScriptedChat(lambda m: "w")})
    for role in ("support", "judge", "query", "reference", "outline"):
        served = "judge" if role in ("support", "judge") else "writer"
        assert config.model_for(role).name == served[0]  # type: ignore[arg-type]
        assert llm.backend(role) is llm.backends[served]
