"""Baselines by stage name: the built-in ones (outline, sections, ranking); a stage may add its own with a
``baselines`` attribute (a sequence of :class:`Baseline`, defined with the stage contract)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from ruwikibench.contract import Baseline, BaselineSkipped, Stage

__all__ = ["BASELINES", "Baseline", "BaselineSkipped", "baselines_of", "register", "stable_seed"]

BASELINES: dict[str, list[Baseline]] = {}


def register(stage: str, baseline: Baseline) -> Baseline:
    BASELINES.setdefault(stage, []).append(baseline)
    return baseline


def baselines_of(stage: Stage[Any]) -> list[Baseline]:
    """The built-in baselines of the stage named like ``stage``, then those the stage object declares."""
    from ruwikibench.baselines import outline, ranking, sections  # noqa: F401 - registers the built-in ones

    own: Sequence[Baseline] = stage.baselines
    return [*BASELINES.get(stage.name, []), *own]


def stable_seed(*parts: str) -> int:
    """A seed from keys (never from the order in which units finished)."""
    return int(hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:12], 16)
