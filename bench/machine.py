"""What the bench figures were measured on: the CPU model, its cores, the load average; CPU seconds of reaped
children. Figures under load vary in wall time far more than in CPU seconds: print both."""

from __future__ import annotations

import os
import platform
import resource
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; the platform's processor string elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages, ``1.2 / 0.9 / 0.7``."""
    return " / ".join(f"{value:.1f}" for value in os.getloadavg())


def machine_line() -> str:
    """``CPU: AMD EPYC · 2 cores · load average 1.2 / 0.9 / 0.7 (1 / 5 / 15 min)``."""
    return f"CPU: {cpu_model()} · {os.cpu_count()} cores · load average {load_average()} (1 / 5 / 15 min)"


def children_cpu_seconds() -> float:
    """User + system CPU seconds of this process's children that have ended and been waited for (with
    theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
