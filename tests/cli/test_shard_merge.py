"""`run … --shard I/N` on separate output folders (machines) and `merge`: the merged run equals one unsharded
run; shards of other runs, a missing or repeated shard, and a folder holding another run are refused
clearly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ruwikibench.conf.config import RunInputError
from ruwikibench.runner.shard import Shard, share_of
from ruwikibench.storage.call_log import MESSAGES_DIR, CallLog
from ruwikibench.storage.jsonl import unit_key
from ruwikibench.storage.rundir import RunDir
from tests.cli.small_runs import app, fake_setup, runner


def _run(tmp: Path, config: Path, out: str, *extra: str) -> Path:
    result = runner.invoke(
        app,
        [
            "run",
            "all",
            "--dataset",
            str(tmp / "data"),
            "--config",
            str(config),
            "--out",
            str(tmp / out),
            *extra,
        ],
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    return Path(result.output.split("run directory: ")[1].split()[0])


def _merge(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, ["merge", *map(str, args)])
    return result.exit_code, result.output


def _sorted(rundir: Path, name: str) -> list[dict]:
    records = [json.loads(line) for line in (rundir / name).read_text(encoding="utf-8").splitlines()]
    return sorted(records, key=lambda r: json.dumps(r, sort_keys=True, ensure_ascii=False))


def _calls(rundir: Path) -> dict[tuple[str, str], int]:
    """(stage, article) -> calls kept in the run's messages."""
    log = CallLog(rundir / MESSAGES_DIR)
    stages = [p.name for p in log.root.iterdir()]
    pairs = {
        (stage, o["article"]) for o in RunDir(rundir).outputs() for stage in stages if stage == o["stage"]
    }
    return {pair: len(log.calls(*pair)) for pair in sorted(pairs)}


def test_two_shards_merge_into_the_unsharded_run(tmp_path, monkeypatch) -> None:
    with fake_setup(tmp_path, monkeypatch) as (tmp, configs, _model):
        first = _run(tmp, configs[0], "machine1", "--shard", "1/2")
        second = _run(tmp, configs[0], "machine2", "--shard", "2/2")
        whole = _run(tmp, configs[0], "single")
        other = _run(tmp, configs[1], "machine3", "--shard", "2/2")

        run_id = whole.name
        assert (first.name, second.name) == (f"{run_id}.shard-1-of-2", f"{run_id}.shard-2-of-2")
        shares = [RunDir(d).read_json("spec.json") for d in (first, second)]
        assert [s["run_id"] for s in shares] == [run_id, run_id]
        assert [s["shard"]["articles"] for s in shares] == [["Python", "Сколково"], ["Москва"]]
        assert {o["article"] for o in RunDir(second).outputs()} == {"Москва"}

        status, output = _merge(first, second, "--into", tmp / "merged")
        assert status == 0, output
        merged = tmp / "merged" / run_id
        assert f"run directory: {merged}" in output
        metrics = json.loads((merged / "metrics.json").read_text(encoding="utf-8"))
        assert metrics == json.loads((whole / "metrics.json").read_text(encoding="utf-8"))
        assert set(metrics) == {"format_version", "ranking", "outline", "sections"}
        for name in ("outputs.jsonl", "results.jsonl", "generated.jsonl", "floors.jsonl", "baselines.jsonl"):
            assert _sorted(merged, name) == _sorted(whole, name), name
        assert sorted(map(unit_key, RunDir(merged).outputs())) == sorted(
            map(unit_key, RunDir(whole).outputs())
        )
        spec = RunDir(merged).read_json("spec.json")
        assert "shard" not in spec and "shard" not in spec["options"]
        assert [m["shard"] for m in spec["merged_from"]] == ["1/2", "2/2"]
        assert spec["units"]["total"] == RunDir(whole).read_json("spec.json")["units"]["total"]

        assert _calls(merged) == _calls(first) | _calls(second) and set(_calls(merged)) == set(_calls(whole))
        assert len(_calls(whole)) == 9 and all(_calls(whole).values())  # 3 stages × 3 articles, all called

        assert _merge(first, second, "--into", tmp / "merged")[0] == 0  # merged again: replaced, same figures
        assert json.loads((merged / "metrics.json").read_text(encoding="utf-8")) == metrics
        assert _calls(merged) == _calls(first) | _calls(second)  # not appended twice

        status, output = _merge(first)
        assert status == 2 and "shard 2/2 missing" in output
        status, output = _merge(first, first)
        assert status == 2 and "shard 1/2 given twice" in output
        status, output = _merge(first, other)
        assert status == 2 and f"a shard of run {other.name.split('.shard')[0]}, not of {run_id}" in output
        status, output = _merge(first, second, "--into", tmp / "single")
        assert status == 2 and "not a merge" in output
        status, output = _merge(whole)
        assert status == 2 and "not a shard of a run" in output


def test_share_of_an_article_is_a_stable_hash_of_its_name() -> None:
    assert [share_of(name, 4) for name in ("Python", "Квантовый компьютер")] == [
        3,
        2,
    ]  # sha256: the same anywhere
    names = [f"Статья {i}" for i in range(400)]
    shares = [share_of(name, 4) for name in names]
    assert set(shares) == {1, 2, 3, 4} and min(shares.count(i) for i in range(1, 5)) > 70
    assert all(sum(Shard(index=i, count=4).holds(name) for i in range(1, 5)) == 1 for name in names)


@pytest.mark.parametrize("text", ["0/2", "3/2", "2", "a/b", "1/0"])
def test_bad_shard_values_are_refused(text: str) -> None:
    with pytest.raises(RunInputError, match="--shard"):
        Shard.parse(text)
    assert Shard.parse(" 2/3 ") == Shard(index=2, count=3)
