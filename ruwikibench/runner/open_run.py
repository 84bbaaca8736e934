"""Opening a run directory, the one path of ``run``, ``write --batch`` and ``score-outputs`` (and of the
Python API, which runs through them): the run id (:func:`run_id`, from a :class:`RunKey`), the directory
created or reopened, its lock (``run.lock``) taken, the spec.json already there read
(:func:`ruwikibench.storage.runspec.read_spec`, old formats upgraded) and checked against the new one, and the
new :class:`~ruwikibench.storage.runspec.RunSpec` written.

A directory this command created that holds nothing but its lock when the command stops (bad input, a refused
resume) is removed again.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Dataset
from ruwikibench.runner.identity import identity_key
from ruwikibench.runner.overrides import check_overrides, fingerprint
from ruwikibench.storage.rundir import RunDir
from ruwikibench.storage.runspec import SPEC_FILE, RunSpec, read_spec_if_any

SpecCheck = Callable[[RunDir, RunSpec, RunSpec], None]
"""(run directory, the spec found there, the spec of this command): raises when the command must not resume
it."""


@dataclass(frozen=True)
class RunKey:
    """What names a run: a prefix (the config's name, ``<name>-writer``, ``external-<stage>``) and the JSON
    parts whose hash follows it. The same key gives the same run id, so a rerun resumes the same directory."""

    prefix: str
    parts: list[Any] = field(default_factory=list)


def run_id(key: RunKey) -> str:
    """``<prefix>-<first 8 hex digits of the sha256 of the parts as sorted JSON>``."""
    text = json.dumps(key.parts, sort_keys=True, default=str)
    return f"{key.prefix}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def overrides_part(config: RunConfig) -> list[Any]:
    """The code of every node/graph override (its source's sha256), not just its import path; none:
    nothing."""
    return [fingerprint(check_overrides(config))] if config.overrides else []


def benchmark_key(
    config: RunConfig,
    dataset: Dataset,
    stages: list[str],
    articles: int | None,
    article_names: list[str] | None,
    stage_identity: dict[str, dict[str, Any]],
    inputs: dict[str, Any] | None = None,
) -> RunKey:
    """A benchmark run (``ruwikibench run``): the config's identity (no endpoint, timeout or concurrency), the
    dataset, the stages and articles; then the overrides' code, the plug-in stages' code, prompt files and
    options, and the input files read (each left out when empty, so runs without them keep their ids)."""
    parts: list[Any] = [config.identity(), dataset.dataset_id, stages, articles, article_names]
    parts += overrides_part(config)
    if stage_identity:
        parts.append({"stages": identity_key(stage_identity)})
    if inputs:
        parts.append(inputs)
    return RunKey(config.name, parts)


def writer_key(
    config: RunConfig, dataset: Dataset, articles: int | None, article_names: list[str] | None
) -> RunKey:
    """A writer batch (``ruwikibench write --batch``)."""
    parts: list[Any] = [
        config.identity(),
        dataset.dataset_id,
        articles,
        article_names,
        *overrides_part(config),
    ]
    return RunKey(f"{config.name}-writer", parts)


def external_key(
    stage: str, sha256: str, dataset: Dataset, articles: int | None, article_names: list[str] | None
) -> RunKey:
    """Scored external outputs (``ruwikibench score-outputs``): the stage and the outputs file's sha256."""
    return RunKey(f"external-{stage}", [stage, sha256, dataset.dataset_id, articles, article_names])


def run_path(out: Path, name: str | None, key: RunKey) -> Path:
    """``out/<name>`` for a named run (``--run-id``, ``--name``), else ``out/<run id of key>``."""
    return Path(out) / (name or run_id(key))


class OpenRun:
    """A run directory held by this command (its lock taken)."""

    def __init__(self, rundir: RunDir) -> None:
        self.rundir = rundir

    @property
    def run_id(self) -> str:
        return self.rundir.path.name

    def previous_spec(self) -> RunSpec | None:
        """The spec.json already in the directory (upgraded from an older format), None in a fresh one."""
        return read_spec_if_any(self.rundir)

    def check_resume(self, spec: RunSpec, check: SpecCheck) -> None:
        """``check`` the spec already there (if any) against this command's."""
        previous = self.previous_spec()
        if previous is not None:
            check(self.rundir, previous, spec)

    def write_spec(self, spec: RunSpec) -> None:
        """Replace spec.json atomically with ``spec`` in the current format."""
        self.rundir.write_json(SPEC_FILE, spec.record())


@contextmanager
def open_run(path: Path) -> Iterator[OpenRun]:
    """Create or reopen the run directory ``path`` and hold its lock for the duration (:class:`RunDirLocked`
    when another process holds it); a directory created here and left empty is removed when the command
    fails."""
    rundir = RunDir(path)
    created = not rundir.path.exists()
    rundir.create()
    try:
        with rundir.lock():
            yield OpenRun(rundir)
    except BaseException:
        if created:
            remove_if_empty(rundir)
        raise


def remove_if_empty(rundir: RunDir) -> None:
    """A run directory that holds nothing but its lock: removed (a command that stopped on bad input leaves no
    run directory behind)."""
    if rundir.path.is_dir() and {p.name for p in rundir.path.iterdir()} <= {"run.lock"}:
        shutil.rmtree(rundir.path, ignore_errors=True)
