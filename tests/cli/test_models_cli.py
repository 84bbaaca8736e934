"""`ruwikibench models …` commands."""

from __future__ import annotations

from typer.testing import CliRunner

from ruwikibench.cli import app


def test_models_list_reports_missing_files(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RUWIKIBENCH_CACHE", str(tmp_path))
    result = CliRunner().invoke(app, ["models", "list"])
    assert result.exit_code == 0, result.output
    assert "qwen2.5-coder-1.5b" in result.output and "not fetched" in result.output
    assert str(tmp_path / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf") in result.output


def test_serve_local_rejects_unknown_model() -> None:
    result = CliRunner().invoke(app, ["models", "serve-local", "--model", "llama-70b"])
    assert result.exit_code != 0 and "unknown local model" in result.output
