"""Join the shard directories of one run (``run … --shard I/N`` on N machines) into one run directory.

The shards must share one run id and one shard count and hold every share 1…N exactly once, with no article in
two shards; anything else is a :class:`~ruwikibench.conf.config.RunInputError` naming the missing share, the
share given twice or the directory of another run. Their records (outputs, node traces, scores, generated
texts, errors, the LLM calls' messages) are concatenated into ``<into>/<run id>``; floors and baselines are
computed again over the whole (a permutation floor depends on every item of the run), then metrics.json/.csv
and report.md — so the merged directory's metrics equal those of the same run made on one machine. No LLM
call is made.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ruwikibench.aggregation.baselines import UNIT_BASELINES_FILE
from ruwikibench.aggregation.derived import compute_floors_and_baselines
from ruwikibench.conf.config import RunConfig, RunInputError
from ruwikibench.runner.finalize import finalize
from ruwikibench.storage.call_log import MESSAGES_DIR, merge_logs
from ruwikibench.storage.jsonl import read_records
from ruwikibench.storage.rundir import RunDir
from ruwikibench.storage.runspec import SPEC_FILE, parse_spec, read_spec

MERGED_FILES = (
    "outputs.jsonl",
    "nodes.jsonl",
    "results.jsonl",
    "generated.jsonl",
    "errors.jsonl",
    UNIT_BASELINES_FILE,
)  # a shard without baseline_scores.jsonl (an older one): scored by the merge


class ShardDir:
    """A shard directory read back: its path and spec.json (which must say which share it holds)."""

    def __init__(self, path: str | Path) -> None:
        self.rundir = RunDir(path)
        self.spec: dict[str, Any] = read_spec(self.rundir.path).record()
        shard = self.spec.get("shard")
        if not isinstance(shard, dict) or not {"index", "count", "articles"} <= shard.keys():
            raise RunInputError(
                f"{self.rundir.path}: not a shard of a run (its spec.json has no 'shard'; "
                "shards are made by `ruwikibench run … --shard I/N`)"
            )
        self.index, self.count = int(shard["index"]), int(shard["count"])
        self.articles: list[str] = list(shard["articles"])

    @property
    def run_id(self) -> str:
        return str(self.spec.get("run_id"))

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"


def check_shards(shards: list[ShardDir]) -> list[ShardDir]:
    """The shards in share order, after checking they are the whole of one run (one line per problem found
    first)."""
    if not shards:
        raise RunInputError("merge: no shard directory given")
    first = shards[0]
    for shard in shards[1:]:
        if shard.run_id != first.run_id:
            raise RunInputError(
                f"{shard.rundir.path}: a shard of run {shard.run_id}, not of {first.run_id} "
                f"({first.rundir.path}); only shards of one run id merge"
            )
        if shard.count != first.count:
            raise RunInputError(
                f"{shard.rundir.path}: shard {shard.label}, but {first.rundir.path} is shard "
                f"{first.label}: the shards of one run are cut into the same number of shares"
            )
    by_index: dict[int, ShardDir] = {}
    for shard in shards:
        if shard.index in by_index:
            raise RunInputError(
                f"shard {shard.label} given twice: {by_index[shard.index].rundir.path} and "
                f"{shard.rundir.path}"
            )
        by_index[shard.index] = shard
    missing = [f"{i}/{first.count}" for i in range(1, first.count + 1) if i not in by_index]
    if missing:
        raise RunInputError(
            f"run {first.run_id}: shard {', '.join(missing)} missing (given: "
            f"{', '.join(s.label for s in sorted(shards, key=lambda s: s.index))}); "
            f"run it with `ruwikibench run … --shard {missing[0]}` and merge all {first.count}"
        )
    seen: dict[str, ShardDir] = {}
    for shard in by_index.values():
        for article in shard.articles:
            if article in seen:
                raise RunInputError(
                    f"article {article!r} is in shard {seen[article].label} "
                    f"({seen[article].rundir.path}) and in shard {shard.label} ({shard.rundir.path})"
                )
            seen[article] = shard
    return [by_index[i] for i in sorted(by_index)]


def merged_spec(shards: list[ShardDir]) -> dict[str, Any]:
    """Shard 1's spec.json without the shard, with the units of all shards and where each shard came from."""
    spec = {key: value for key, value in shards[0].spec.items() if key not in ("shard", "last_session")}
    spec["options"] = {key: value for key, value in spec.get("options", {}).items() if key != "shard"}
    prompts: dict[str, Any] = {}
    units = {"total": 0, "run_now": 0, "scored_on_resume": 0}
    for shard in shards:
        prompts.update(shard.spec.get("prompts") or {})
        for key in units:
            units[key] += int((shard.spec.get("units") or {}).get(key, 0))
    spec["prompts"] = prompts
    spec["units"] = units
    spec["merged_from"] = [
        {
            "shard": s.label,
            "path": str(s.rundir.path),
            "articles": len(s.articles),
            "git_commit": s.spec.get("git_commit"),
            "package_version": s.spec.get("package_version"),
            "created": s.spec.get("created"),
            "last_session": s.spec.get("last_session"),
        }
        for s in shards
    ]
    spec["created"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    return spec


def target_dir(shards: list[ShardDir], into: Path | None) -> RunDir:
    """``<into>/<run id>`` (default ``into``: the first shard's parent folder); a directory there that is not
    an earlier merge of the same run is refused."""
    parent = into if into is not None else shards[0].rundir.path.parent
    rundir = RunDir(parent / shards[0].run_id)
    if rundir.file(SPEC_FILE).exists():
        old = read_spec(rundir.path).record()
        if "merged_from" not in old or old.get("run_id") != shards[0].run_id:
            raise RunInputError(
                f"{rundir.path}: holds a run that is not a merge of run {shards[0].run_id}'s "
                "shards; choose another folder with --into"
            )
    return rundir


def merge_shards(paths: Sequence[str | Path], into: Path | None = None, dataset: str | None = None) -> RunDir:
    """Merge shard directories into ``<into>/<run id>``; ``dataset`` replaces the dataset path recorded in the
    shards' spec.json (another machine's path). Returns the merged run directory."""
    shards = check_shards([ShardDir(path) for path in paths])
    rundir = target_dir(shards, into)
    spec = merged_spec(shards)
    context, dataset_path = _context(spec, dataset)
    spec["dataset"] = {**spec["dataset"], "path": dataset_path}
    rundir.create()
    with rundir.lock():
        for name in MERGED_FILES:
            rundir.rewrite(
                name, (record for shard in shards for record in read_records(shard.rundir.file(name)))
            )
        merge_logs([shard.rundir.file(MESSAGES_DIR) for shard in shards], rundir.file(MESSAGES_DIR))
        rundir.write_json(SPEC_FILE, parse_spec(spec).record())
        compute_floors_and_baselines(rundir, context)
        finalize(rundir)
    return rundir


def _context(spec: dict[str, Any], dataset: str | None) -> tuple[Any, str]:
    """A scoring context (no LLM) for the run's config and dataset; the dataset must be the shards' (same
    id)."""
    from ruwikibench.corpus_builder.dataset_files import resolve_dataset
    from ruwikibench.runner.setup import build_context

    config = RunConfig.model_validate(spec["config"])
    data, path = resolve_dataset(dataset or spec["dataset"]["path"])
    if data.dataset_id != spec["dataset"]["id"]:
        raise RunInputError(
            f"--dataset {dataset or spec['dataset']['path']}: dataset {data.dataset_id}, but the "
            f"shards ran on dataset {spec['dataset']['id']}"
        )
    return build_context(config, data, path, with_llm=False), str(path)
