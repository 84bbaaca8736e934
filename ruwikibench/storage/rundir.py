"""The run directory: spec.json, nodes.jsonl, outputs.jsonl, results.jsonl, errors.jsonl, metrics, report.

JSONL files are written by :mod:`ruwikibench.storage.jsonl` (one write + flush + fsync per record or batch; a
torn last line is skipped on reading and cut off before the next append), so a run killed at any point (``kill
-9`` included) keeps everything already computed. Records are de-duplicated on reading where it matters: the
latest output per unit (stage, article, unit) and the latest score / generated text per item (stage, article,
item).

Commands that write a run directory hold ``run.lock`` (:func:`ruwikibench.storage.runlock.run_lock`): a second
process on the same directory stops with :class:`RunDirLocked` naming the holder's pid. The lock is an
``flock`` on the file, so the kernel releases it when its holder dies: the lock of a killed run is taken over
by the next command.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ruwikibench.conf.config import RunInputError
from ruwikibench.storage.durable import write_atomic
from ruwikibench.storage.jsonl import (
    append_jsonl,
    item_key,
    latest,
    read_jsonl,
    read_records,
    read_unit_keys,
    rewrite_jsonl,
    unit_key,
)
from ruwikibench.storage.runlock import LOCK, RunDirLocked, run_lock
from ruwikibench.storage.stage_renames import current_stage_name, with_current_stage

__all__ = ["FILES", "FLOORS_FILE", "LOCK", "RunDir", "RunDirLocked", "run_lock"]

FILES = ("spec.json", "nodes.jsonl", "outputs.jsonl", "results.jsonl", "errors.jsonl", "generated.jsonl")
FLOORS_FILE = "floors.jsonl"  # permutation-floor rows (written by ruwikibench.aggregation.floors)


class RunDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def file(self, name: str) -> Path:
        return self.path / name

    def create(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)

    def lock(self) -> Any:
        """``with rundir.lock(): …`` — see :func:`run_lock`."""
        return run_lock(self.path)

    def append(self, name: str, record: dict[str, Any]) -> None:
        append_jsonl(self.file(name), [record])

    def append_many(self, name: str, records: list[dict[str, Any]]) -> None:
        append_jsonl(self.file(name), records)

    def rewrite(self, name: str, records: Iterable[dict[str, Any]]) -> None:
        rewrite_jsonl(self.file(name), records)

    def read(self, name: str) -> Iterator[dict[str, Any]]:
        """The file's records, stages under their current names (a run written before a stage was renamed)."""
        return (with_current_stage(record) for record in read_records(self.file(name)))

    def outputs(self) -> list[dict[str, Any]]:
        """The latest output of each unit (all in memory: :meth:`iter_outputs` streams them)."""
        return latest(self.read("outputs.jsonl"), unit_key)

    def iter_outputs(self) -> Iterator[dict[str, Any]]:
        """The latest output of each unit, one at a time in file order: a first pass finds the last line of
        each unit (:meth:`output_lines`), the second parses only those lines, so only the keys are ever
        held."""
        last = set(self.output_lines().values())
        return (with_current_stage(record) for _, record in read_jsonl(self.file("outputs.jsonl"), last))

    def output_lines(self) -> dict[tuple[str, str, str], int]:
        """The line of the latest output of each unit (stages under their current names), read from the start
        of each line (:func:`read_unit_keys`): the outputs themselves are not parsed."""
        return {
            (current_stage_name(stage), article, unit): number
            for number, (stage, article, unit) in read_unit_keys(self.file("outputs.jsonl"))
        }

    def output_keys(self) -> set[tuple[str, str, str]]:
        """(stage, article, unit) of every unit with an output."""
        return set(self.output_lines())

    def results(self) -> list[dict[str, Any]]:
        """The latest score record of each item (a unit scored again replaces its records)."""
        return latest(self.read("results.jsonl"), item_key)

    def generated(self) -> list[dict[str, Any]]:
        """The latest generated text of each item."""
        return latest(self.read("generated.jsonl"), item_key)

    def open_errors(self) -> list[dict[str, Any]]:
        """Failures still standing: see :func:`open_errors`."""
        return open_errors(list(self.read("errors.jsonl")), self.output_keys(), self.results())

    def write_json(self, name: str, data: Any) -> None:
        """Replace ``name`` atomically and durably (temporary file fsynced, renamed, directory fsynced)."""
        write_atomic(self.file(name), json.dumps(data, ensure_ascii=False, indent=2, default=str))

    def read_json(self, name: str) -> Any:
        path = self.file(name)
        if not path.exists():
            raise NotARunDir(f"{path}: not found — is {self.path} a run directory?")
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise NotARunDir(f"{path}: not readable JSON ({exc}) — is {self.path} a run directory?") from None


class NotARunDir(RunInputError, FileNotFoundError):
    """A run directory's JSON file (spec.json, metrics.json) missing or unreadable: bad input, one line."""


def scored_units(results: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """Units with score records. Records name their unit; older ones (no 'unit') name their article's
    units."""
    keys: set[tuple[str, str, str]] = set()
    for record in results:
        stage, article = str(record["stage"]), str(record["article"])
        if "unit" in record:
            keys.add((stage, article, str(record["unit"])))
        else:
            keys |= {(stage, article, str(record["item"])), (stage, article, "article")}
    return keys


def open_errors(
    errors: list[dict[str, Any]],
    outputs: Iterable[dict[str, Any]] | set[tuple[str, str, str]],
    results: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The last error of each unit, unless a later session fixed it: a run error is fixed once the unit has an
    output, a scoring error ('score: …') once the unit has score records, an input error (unit '*') once any
    unit of that stage and article has an output. ``outputs``: the output records, or only their unit keys."""
    done = outputs if isinstance(outputs, set) else {unit_key(o) for o in outputs}
    started = {(stage, article) for stage, article, _ in done}
    scored = scored_units(results)
    still: list[dict[str, Any]] = []
    for error in latest(errors, unit_key):
        key = unit_key(error)
        if str(error.get("reason", "")).startswith("score:"):
            fixed = key in scored
        elif key[2] == "*":
            fixed = key[:2] in started
        else:
            fixed = key in done
        if not fixed:
            still.append(error)
    return still
