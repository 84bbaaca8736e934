"""Skip helper for tests of the e5-int8 embedder: its model file is built into the cache by
``python -m ruwikibench.models.local_assets --fetch`` (CI does) and needs onnxruntime (the [score] extra)."""

from __future__ import annotations

import importlib.util

import pytest


def require_e5_int8() -> None:
    if importlib.util.find_spec("onnxruntime") is None:
        pytest.skip("onnxruntime is not installed (the [score] extra)")
    from ruwikibench.models.e5_int8_asset import is_built, model_path

    if not is_built():
        pytest.skip(f"{model_path()} is not built: python -m ruwikibench.models.local_assets --fetch")
