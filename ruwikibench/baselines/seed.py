"""Seeds of the random baselines, drawn from keys."""

from __future__ import annotations

import hashlib


def stable_seed(*parts: str) -> int:
    """A seed from keys (never from the order in which units finished)."""
    return int(hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:12], 16)
