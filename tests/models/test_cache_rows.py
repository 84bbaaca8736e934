"""Cache rows are checked when read: a vector of the wrong size or with non-finite values, or an answer that
is not a completion, is a miss (computed or asked again, and replaced), never a silently wrong score or a unit
that fails for ever; a cache file that is not a database is one error naming it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from ruwikibench.models.cache import CacheFileError, EmbeddingCache, EntityCache, ResponseCache
from ruwikibench.models.embeddings import CachedEmbedder
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from tests.cli.test_input_errors import cli
from tests.graphs.writer_fixture import make_dataset
from tests.models.test_embeddings import CountingEmbedder

TEXTS = ["Москва", "Париж", "Берлин"]


def _poison(path: Path, sql: str, *args: object) -> None:
    with sqlite3.connect(path) as db:
        db.execute(sql, args)


@pytest.mark.parametrize(
    "poison",
    [
        ("UPDATE vectors SET vec = substr(vec, 1, 4)",),  # every blob cut to 4 bytes
        ("UPDATE vectors SET vec = ?", np.full(8, np.nan, dtype=np.float32).tobytes()),
        ("UPDATE vectors SET vec = ?", np.ones(8, dtype=np.float64).tobytes()),  # float64: twice the size
        ("UPDATE vectors SET vec = ?", "not a vector"),
    ],
)
def test_a_poisoned_vector_is_a_miss_recomputed_and_replaced(tmp_path: Path, poison: tuple) -> None:
    path = tmp_path / "emb.sqlite"
    first = CachedEmbedder(CountingEmbedder(), EmbeddingCache(path)).embed(TEXTS, "passage")
    _poison(path, *poison)
    toy = CountingEmbedder()
    again = CachedEmbedder(toy, EmbeddingCache(path)).embed(TEXTS, "passage")
    assert np.array_equal(again, first) and len(toy.seen) == 3  # recomputed, not read
    fresh = CountingEmbedder()
    assert np.array_equal(CachedEmbedder(fresh, EmbeddingCache(path)).embed(TEXTS, "passage"), first)
    assert fresh.seen == []  # the rows were replaced


def test_vectors_of_disagreeing_sizes_in_an_old_cache_are_misses(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    cache = EmbeddingCache(path)
    cache.put_many("ns", "passage", {"a": np.ones(8), "b": np.ones(8)})
    _poison(path, "DELETE FROM dims")  # a cache written before the sizes were kept
    _poison(path, "UPDATE vectors SET vec = substr(vec, 1, 4) WHERE h = 'b'")
    assert EmbeddingCache(path).get_many("ns", "passage", ["a", "b"]) == {}


async def test_an_unreadable_cached_answer_is_asked_again_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    cache = ResponseCache(path)
    await LLM({"ranking": ScriptedChat(lambda m: "первый")}, cache=cache).complete("ranking", "вопрос")
    cache.close()
    _poison(path, "UPDATE responses SET value = ?", '{"not": "a completion"}')
    chat = ScriptedChat(lambda m: "второй")
    cache = ResponseCache(path)
    answer = await LLM({"ranking": chat}, cache=cache).complete("ranking", "вопрос")
    assert answer.text == "второй" and not answer.cached and len(chat.calls) == 1
    cache.close()
    again = await LLM({"ranking": ScriptedChat(lambda m: "третий")}, cache=ResponseCache(path)).complete(
        "ranking", "вопрос"
    )
    assert again.text == "второй" and again.cached


def test_unreadable_cached_entities_are_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "ent.sqlite"
    EntityCache(path).put("m", "h", [["PER", "Пётр", "пётр"]])
    _poison(path, "UPDATE entities SET value = '{broken'")
    assert EntityCache(path).get("m", "h") is None


@pytest.mark.parametrize("kind", [ResponseCache, EmbeddingCache, EntityCache])
def test_a_cache_file_that_is_not_a_database_is_named(tmp_path: Path, kind: type) -> None:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"garbage " * 1000)
    with pytest.raises(CacheFileError, match=f"^{path}: not a usable cache .*file is not a database"):
        kind(path)


def test_the_cli_names_a_garbage_cache_file_in_one_line(tmp_path: Path) -> None:
    from ruwikibench.corpus_builder.store import save_dataset
    from tests.cli.test_input_errors import refused_url, write_config

    save_dataset(make_dataset(), tmp_path / "data")
    config = write_config(tmp_path, refused_url())
    (tmp_path / "cache").mkdir(exist_ok=True)
    for name in ("llm.sqlite", "embeddings.sqlite"):
        (tmp_path / "cache" / name).write_bytes(b"garbage " * 1000)
    result = cli(tmp_path, "run", "ranking", "--dataset", "data", "--config", str(config))
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and ".sqlite: not a usable cache" in lines[0] and "Traceback" not in result.stderr
