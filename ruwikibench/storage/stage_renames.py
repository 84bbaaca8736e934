"""Stages renamed since earlier versions: run files, configs and commands from before a rename name the old
one."""

from __future__ import annotations

from typing import Any

RENAMED_STAGES: dict[str, str] = {"article": "writer"}  # an earlier name -> the stage's name now


def current_stage_name(name: str) -> str:
    """The stage's name now: run files, configs and commands from before a rename still name the old one."""
    return RENAMED_STAGES.get(name, name)


def with_current_stage(record: dict[str, Any]) -> dict[str, Any]:
    """A run-file record with its ``stage`` under the current name (the record itself, renamed in place)."""
    stage = record.get("stage")
    if isinstance(stage, str) and stage in RENAMED_STAGES:
        record["stage"] = RENAMED_STAGES[stage]
    return record
