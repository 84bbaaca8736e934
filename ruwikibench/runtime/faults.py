"""Fault injection for tests: ``RUWIKIBENCH_FAULT=POINT`` (or ``POINT@N``) kills the process with SIGKILL the
first (N-th) time the code reaches :func:`fault_point` ``(POINT)`` — a ``kill -9`` at a chosen write of a run.

Points of a run's finish phase (``ruwikibench run``): ``after_outputs`` (a unit's output written, its scores
not), ``before_floors``, ``before_baselines``, ``before_stamp``, ``before_spec``, ``before_metrics``,
``before_csv``, ``before_report``. Unset (always, outside tests) the hook costs one dictionary look-up.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

FAULT_ENV = "RUWIKIBENCH_FAULT"
_hits: Counter[str] = Counter()


def fault_point(name: str) -> None:
    """Die here with SIGKILL when ``RUWIKIBENCH_FAULT`` names this point (at its N-th hit with ``@N``)."""
    wanted = os.environ.get(FAULT_ENV)
    if not wanted:
        return
    point, _, nth = wanted.partition("@")
    if point != name:
        return
    _hits[name] += 1
    if _hits[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
