"""A run's id (:func:`run_id_for`) and its spec.json (:func:`new_spec`): what it ran, on what, with which
code."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

from ruwikibench.conf.config import RunConfig
from ruwikibench.conf.secrets import redact_data
from ruwikibench.dataset import Dataset
from ruwikibench.nodes.queries import reference_queries_identity
from ruwikibench.runner.identity import stages_identity
from ruwikibench.runner.open_run import RunKey, benchmark_key, run_id
from ruwikibench.runner.options import RunOptions
from ruwikibench.runner.overrides import check_overrides, spec_records
from ruwikibench.runner.reference_queries import reads_reference_queries
from ruwikibench.stage.registry import get_stage
from ruwikibench.storage.runspec import FORMAT_VERSION, RunMode, RunSpec
from ruwikibench.version import __version__


def run_inputs(config: RunConfig, options: RunOptions, dataset_dir: Path | None) -> dict[str, Any]:
    """Files besides the config and the dataset that change a run's answers: the stored reference queries
    (path, sha256, writing model) when the ranking stage runs with ``query_mode: reference``; else nothing."""
    if reads_reference_queries(config, options.stages):
        return {"reference_queries": reference_queries_identity(config, dataset_dir)}
    return {}


def run_id_for(
    config: RunConfig, dataset: Dataset, options: RunOptions, inputs: dict[str, Any] | None = None
) -> str:
    """Deterministic id (:func:`ruwikibench.runner.open_run.benchmark_key`): the same command on the same data
    resumes the same run directory, whatever endpoint, timeout or concurrency it uses. ``inputs``:
    :func:`run_inputs`."""
    return run_id(run_key(config, dataset, options, inputs))


def run_key(
    config: RunConfig, dataset: Dataset, options: RunOptions, inputs: dict[str, Any] | None = None
) -> RunKey:
    return benchmark_key(
        config,
        dataset,
        options.stages,
        options.articles,
        options.article_names,
        run_stages_identity(config, options),
        inputs,
    )


def run_stages_identity(config: RunConfig, options: RunOptions) -> dict[str, dict[str, Any]]:
    """:func:`ruwikibench.runner.identity.stages_identity` of the stages a run runs."""
    return stages_identity([get_stage(name) for name in options.stages], config)


def git_commit() -> str | None:
    try:
        root = Path(__file__).resolve().parents[2]
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            check=False,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def build_spec(
    run_id: str,
    config: RunConfig,
    dataset: Dataset,
    dataset_path: str,
    options: RunOptions,
    inputs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """spec.json as written (:meth:`RunSpec.record`) of :func:`new_spec`."""
    return new_spec(run_id, config, dataset, dataset_path, options, inputs).record()


def new_spec(
    run_id: str,
    config: RunConfig,
    dataset: Dataset,
    dataset_path: str,
    options: RunOptions,
    inputs: dict[str, Any] | None = None,
    mode: RunMode = "benchmark",
) -> RunSpec:
    """The :class:`RunSpec` of a run: versions, dataset, models, config, options, and the ``inputs``
    (:func:`run_inputs`) it read; secrets redacted (:mod:`ruwikibench.conf.secrets`)."""
    return RunSpec.model_validate(
        redact_data(
            {
                "format_version": FORMAT_VERSION,
                "run_id": run_id,
                "mode": mode,
                "package_version": __version__,
                "git_commit": git_commit(),
                "dataset": {"id": dataset.dataset_id, "path": dataset_path, "params": dataset.params},
                "models": {role: m.identity() for role, m in config.models.items()},
                "embedder": config.embedder.id,
                "profile": config.profile,
                "overrides": spec_records(check_overrides(config)),
                **_stage_identity_block(config, options),
                "config": config.model_dump(mode="json"),
                "options": options.model_dump(
                    mode="json", exclude={"progress"} | ({"shard"} if options.shard is None else set())
                ),
                **(inputs or {}),
                "prompts": {},
                "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            }
        )
    )


def _stage_identity_block(config: RunConfig, options: RunOptions) -> dict[str, Any]:
    """spec.json's ``stage_identity`` (plug-in stages' code, prompt files): absent when there is none."""
    stages = run_stages_identity(config, options)
    return {"stage_identity": stages} if stages else {}
