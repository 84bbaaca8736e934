"""Where the real Ruwiki sample lives (tests skip when it is absent)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE_FILE = "ruwikibench_articles.json"


def sample_dir() -> Path | None:
    """RUWIKIBENCH_SAMPLE, else the first ``shared/data/ruwiki`` beside the repository or one of its parents."""
    env = os.environ.get("RUWIKIBENCH_SAMPLE")
    if env:
        path = Path(env)
        path = path.parent if path.is_file() else path
        return path if (path / SAMPLE_FILE).is_file() else None
    for parent in REPO.parents:
        candidate = parent / "shared" / "data" / "ruwiki"
        if (candidate / SAMPLE_FILE).is_file():
            return candidate
    return None
