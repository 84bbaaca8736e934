"""Every command and command group answers `--help` (rich renders help text as markup: a stray `[…]` crashes
it)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import typer

from ruwikibench.cli import app


def _paths(group: Any, prefix: list[str]) -> list[list[str]]:
    paths = [prefix]
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            paths += _paths(command, [*prefix, name])
        else:
            paths.append([*prefix, name])
    return paths


COMMANDS = _paths(typer.main.get_command(app), [])


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "ruwikibench")
def test_help(path: list[str]) -> None:
    # a real process: typer's test runner renders help without rich markup and would not see the crash
    command = [sys.executable, "-c", "from ruwikibench.cli import main; main()", *path, "--help"]
    result = subprocess.run(
        command, check=False, capture_output=True, text=True, timeout=60, env={"COLUMNS": "100", "PATH": ""}
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Usage" in result.stdout


def test_every_group_is_listed() -> None:
    top = {p[0] for p in COMMANDS if p}
    assert {"run", "score", "report", "write", "corpus", "models", "judge", "ranking"} <= top
