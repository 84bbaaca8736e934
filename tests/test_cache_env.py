"""RUWIKIBENCH_CACHE moves every cache: models/, datasets/, logs/ and — for a config that leaves cache_dir at
its default — the response, embedding and entity caches and bm25/."""

from __future__ import annotations

from pathlib import Path

import pytest

from ruwikibench.conf.config import RunConfig
from ruwikibench.corpus_builder.dataset_files import cache_root as datasets_root
from ruwikibench.evaluators import entities
from ruwikibench.models.asset_files import cache_root
from ruwikibench.retrieval.bm25 import index_dir
from ruwikibench.runner.setup import build_context

MODELS = {"writer": {"name": "m", "endpoints": ["http://127.0.0.1:9/v1"]}}


def _files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_one_variable_moves_every_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))  # nothing may land in ~/.cache
    monkeypatch.setenv("RUWIKIBENCH_CACHE", str(tmp_path / "elsewhere"))
    monkeypatch.setattr(entities, "_store", entities._store)  # build_context points it at the test's folder
    entities.forget_in_memory()  # the text is looked up anew, so it is stored
    config = RunConfig.model_validate({"models": MODELS})
    moved = tmp_path / "elsewhere"
    assert config.cache_path == cache_root() == datasets_root() == moved
    context = build_context(config, None)
    try:
        vectors = context.embedder.embed(["один текст"], "passage")  # the embedding cache is written
        assert vectors.shape[0] == 1
        found = entities.extract_entities("Пётр Первый основал Санкт-Петербург.")  # the entity cache too
        assert found
    finally:
        context.llm.close()
        close = getattr(context.embedder, "close", None)
        if close is not None:
            close()
    assert index_dir(config.cache_path, "d", "lemma").is_relative_to(moved / "bm25")
    written = _files_under(moved)
    assert {"llm.sqlite", "embeddings.sqlite", "entities.sqlite"} <= {Path(f).name for f in written}, written
    assert not (home / ".cache").exists()


def test_a_cache_dir_the_config_names_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUWIKIBENCH_CACHE", str(tmp_path / "env"))
    config = RunConfig.model_validate({"models": MODELS, "cache_dir": str(tmp_path / "named")})
    assert config.cache_path == tmp_path / "named"


def test_without_the_variable_the_default_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUWIKIBENCH_CACHE", raising=False)
    assert (
        RunConfig.model_validate({"models": MODELS}).cache_path == Path("~/.cache/ruwikibench").expanduser()
    )
