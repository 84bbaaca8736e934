"""The stamps of what a run's derived files were computed from (``derived.json``): floors.jsonl and
baselines.jsonl (stamped by :mod:`ruwikibench.aggregation.derived`), and metrics.json. Is a run's metrics.json
the one of the results on disk? Its finish stamps it beside the floors' and baselines' stamp: the sha256 of
the outputs and results it was computed from and of metrics.json itself. ``report`` reads the stamp and says
when the metrics are stale (a session killed after its units were scored but before metrics.json was
rewritten; a file edited since) instead of printing them as current."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ruwikibench.storage.rundir import RunDir

STAMP_FILE = "derived.json"  # the outputs and results floors.jsonl and baselines.jsonl were computed from
INPUT_FILES = ("outputs.jsonl", "results.jsonl")
METRICS_KEY = "metrics"  # derived.json's entry: None while the metrics of its inputs are not yet written


def inputs_digest(rundir: RunDir) -> str:
    """sha256 over the bytes of outputs.jsonl and results.jsonl: what floors and baselines are computed
    from."""
    digest = hashlib.sha256()
    for name in INPUT_FILES:
        path = rundir.file(name)
        digest.update(name.encode() + b"\0")
        if path.exists():
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def _stamp(rundir: RunDir) -> dict[str, Any] | None:
    path = rundir.file(STAMP_FILE)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _sha256(rundir: RunDir, name: str) -> str | None:
    path = rundir.file(name)
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def stamp_metrics(rundir: RunDir) -> None:
    """Record in ``derived.json`` that metrics.json, as it is now, was computed from the outputs and results
    now on disk (the floors' and baselines' stamp kept)."""
    stamp = _stamp(rundir) or {}
    stamp[METRICS_KEY] = {
        "inputs_sha256": inputs_digest(rundir),
        "metrics_sha256": _sha256(rundir, "metrics.json"),
    }
    rundir.write_json(STAMP_FILE, stamp)


def stale_metrics(rundir: RunDir) -> str | None:
    """None when metrics.json is current for the run's results (or the run predates the stamp and nothing says
    otherwise); else why it is not, one line."""
    stamp = _stamp(rundir)
    if stamp is None:
        return None  # a run written before the stamps (or one that makes no floors): nothing to compare with
    digest = inputs_digest(rundir)
    if METRICS_KEY not in stamp:  # stamped before metrics were: only the floors' inputs can be compared
        if stamp.get("inputs_sha256") not in (None, digest):
            return "results.jsonl or outputs.jsonl changed after its metrics were computed"
        return None
    recorded = stamp[METRICS_KEY]
    if not isinstance(recorded, dict):
        return "the last session stopped before writing metrics.json for its results"
    if recorded.get("inputs_sha256") != digest:
        return "results.jsonl or outputs.jsonl changed after metrics.json was written"
    if recorded.get("metrics_sha256") != _sha256(rundir, "metrics.json"):
        return "metrics.json changed after it was written"
    return None
