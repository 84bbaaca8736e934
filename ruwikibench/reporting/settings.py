"""The settings in which compared runs differ (from each run's spec.json)."""

from __future__ import annotations

import json
from typing import Any

from ruwikibench.rundir import RunDir
from ruwikibench.runspec import spec_record

IGNORED_SETTINGS = ("name", "cache_dir", "options.out", "options.run_id")


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        flat: dict[str, Any] = {}
        for key, value in data.items():
            flat.update(_flatten(value, f"{prefix}{key}."))
        return flat
    return {prefix.rstrip("."): data}


def settings_table(runs: list[tuple[str, dict[str, Any], RunDir]]) -> list[list[str]]:
    """Rows (header first): each run's config name and the settings in which the runs differ."""
    specs = [
        spec_record(rundir) for _, _, rundir in runs
    ]
    flat = [
        _flatten(spec.get("config", {})) | _flatten(spec.get("options", {}), "options.")
        | {f"override.{key}.sha256": (o.get("sha256") or "")[:12] for key, o in spec.get("overrides", {}).items()}
        for spec in specs
    ]
    keys = sorted({k for f in flat for k in f if not k.startswith(IGNORED_SETTINGS)})
    differing = [k for k in keys if len({json.dumps(f.get(k), sort_keys=True) for f in flat}) > 1]
    rows = [["run", "config", "dataset", "differs in"]]
    for (name, _, _), spec, settings in zip(runs, specs, flat, strict=True):
        diff = "; ".join(f"{k}={json.dumps(settings.get(k), ensure_ascii=False)}" for k in differing)
        rows.append(
            [name, str(settings.get("name", "")), str(spec.get("dataset", {}).get("id", "")), diff or "—"]
        )
    return rows
