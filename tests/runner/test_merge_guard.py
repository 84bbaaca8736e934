"""`merge` refuses shards that hold one article twice (shards cut with another share function, or a
hand-edited spec.json): the article would be counted twice in the merged metrics. Nothing is written before
the refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ruwikibench.conf.config import RunInputError
from ruwikibench.runner.merge import ShardDir, check_shards, merge_shards


def _shard(tmp: Path, index: int, articles: list[str]) -> Path:
    path = tmp / f"run.shard-{index}-of-2"
    path.mkdir()
    spec = {"run_id": "run", "shard": {"index": index, "count": 2, "articles": articles}}
    (path / "spec.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    return path


def test_an_article_in_two_shards_is_refused_naming_it_and_both_shards(tmp_path: Path) -> None:
    first = _shard(tmp_path, 1, ["Python", "Москва"])
    second = _shard(tmp_path, 2, ["Сколково", "Москва"])
    with pytest.raises(RunInputError) as refused:
        check_shards([ShardDir(first), ShardDir(second)])
    message = str(refused.value)
    assert "'Москва'" in message and "shard 1/2" in message and "shard 2/2" in message
    assert str(first) in message and str(second) in message
    with pytest.raises(RunInputError, match="'Москва' is in shard 1/2"):
        merge_shards([first, second], into=tmp_path / "merged")
    assert not (tmp_path / "merged").exists()


def test_shards_without_a_common_article_pass_in_share_order(tmp_path: Path) -> None:
    second = ShardDir(_shard(tmp_path, 2, ["Москва"]))
    first = ShardDir(_shard(tmp_path, 1, ["Python", "Сколково"]))
    assert check_shards([second, first]) == [first, second]
