"""A run directory is resumed only by the same run: same config identity and dataset, same plug-in and
override code, same stored reference queries."""

from __future__ import annotations

from typing import Any

from ruwikibench.conf.config import RunConfig, RunInputError
from ruwikibench.storage.rundir import RunDir
from ruwikibench.storage.runspec import RunSpec, parse_spec, read_spec


def check_same_run(rundir: RunDir, spec: RunSpec | dict[str, Any]) -> None:
    """A run directory resumed only by the same run: :func:`check_same_specs` against its spec.json."""
    check_same_specs(rundir, read_spec(rundir.path), spec if isinstance(spec, RunSpec) else parse_spec(spec))


def check_same_specs(rundir: RunDir, old: RunSpec, spec: RunSpec) -> None:
    """Same config identity and dataset, same plug-in/override code (:func:`_check_same_code`), same stored
    reference queries (when both runs could read them)."""
    if _identity(old.config) != _identity(spec.config) or old.dataset_id != spec.dataset_id:
        raise RunInputError(
            f"--run-id {rundir.path.name}: {rundir.path} holds a run with another config or "
            "dataset; choose another --run-id"
        )
    _check_same_code(rundir, old, spec)
    before, now = (s.reference_queries.sha256 if s.reference_queries else None for s in (old, spec))
    if before and now and before != now:
        raise RunInputError(
            f"{rundir.path}: holds a run ranked with other stored reference queries "
            f"(sha256 {before[:12]}…, now {now[:12]}…); choose another --run-id"
        )


def _code_hashes(spec: RunSpec) -> dict[str, dict[str, Any]]:
    """The code hashes a spec records: overrides' and plug-in stages' (file sha256, distribution version, the
    files of its package and distribution, declared prompts, a stage's options)."""
    hashes: dict[str, dict[str, Any]] = {
        f"override {key}": _present(
            sha256=record.get("sha256"),
            version=record.get("version"),
            files=record.get("files"),
            prompts=record.get("prompts"),
        )
        for key, record in spec.overrides.items()
    }
    for name, record in (spec.stage_identity or {}).items():
        code = record.get("code") or {}
        hashes[f"stage {name}"] = _present(
            sha256=code.get("sha256"),
            version=code.get("version"),
            files=code.get("files"),
            prompts=record.get("prompts"),
            options=record.get("options"),
        )
    return hashes


def _present(**fields: Any) -> dict[str, Any]:
    """``fields`` without the newer ones a spec lacks (``files``, an override's ``prompts``: None)."""
    newer = ("files", "prompts")
    return {key: value for key, value in fields.items() if value is not None or key not in newer}


def _differs(before: dict[str, Any], now: dict[str, Any]) -> bool:
    """Two code records differ in a field both have (a spec written before ``files`` were recorded is
    compared by what it holds)."""
    return any(before[key] != now[key] for key in before.keys() & now.keys())


def code_changes(old: RunSpec, spec: RunSpec) -> list[str]:
    """The overrides and plug-in stages (``override <key>``, ``stage <name>``) whose code, prompts or options
    differ between two specs."""
    before, now = _code_hashes(old), _code_hashes(spec)
    return sorted(key for key in before.keys() & now.keys() if _differs(before[key], now[key]))


def _check_same_code(rundir: RunDir, old: RunSpec, spec: RunSpec) -> None:
    """A named run (``--run-id``) does not resume over outputs of other plug-in or override code (or other
    options of a stage)."""
    changed = code_changes(old, spec)
    if changed:
        raise RunInputError(
            f"{rundir.path}: holds a run made with other code ({', '.join(changed)} changed since); "
            "choose another --run-id"
        )


def _identity(config: Any) -> Any:
    try:
        return RunConfig.model_validate(config).identity()
    except ValueError:  # a spec written by another version: compare as stored
        return config
