"""A YAML alias bomb (9 levels of 9 aliases: ~387M strings once expanded) or an alias inside itself stops
`run -c`, `graph -c`, `write` and `judge --judge-config` in one line within seconds, before anything expands
it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ruwikibench.conf.config import ConfigError
from ruwikibench.conf.loader import MAX_VALUES, load_config
from tests.cli.test_input_errors import cli


def bomb(levels: int = 9, width: int = 9) -> str:
    lines = ['a0: &a0 ["lol${HOME}"]']
    for level in range(1, levels):
        refs = ", ".join(f"*a{level - 1}" for _ in range(width))
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join([*lines, "name: bomb", f"extra_body: *a{levels - 1}", ""])


def test_an_alias_bomb_fails_fast_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(), encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert time.monotonic() - started < 2
    assert str(caught.value) == (
        f"{path}: the YAML expands to more than {MAX_VALUES:,} values (aliases within aliases?); "
        "a run config has a few hundred"
    )


def test_an_alias_inside_itself_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("name: loop\nextra: &x [1, *x]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="a YAML alias refers to the mapping or list that contains it"):
        load_config(path)


def test_ordinary_aliases_still_work(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    model = "{name: m, endpoints: ['http://127.0.0.1:9/v1']}"
    path.write_text(f"name: ok\nmodels:\n  writer: &m {model}\n  judge: *m\n", encoding="utf-8")
    config = load_config(path)
    assert config.models["judge"] == config.models["writer"]


@pytest.mark.parametrize(
    "args",
    [
        ("run", "ranking", "--dataset", "data", "-c", "bomb.yaml"),
        ("graph", "outline", "-c", "bomb.yaml"),
        ("write", "Москва", "--dataset", "data", "--config", "bomb.yaml"),
        ("judge", "citations", "data", "--judge-config", "bomb.yaml"),
    ],
)
def test_every_command_reading_a_config_stops_on_a_bomb(tmp_path: Path, args: tuple[str, ...]) -> None:
    from ruwikibench.corpus_builder.store import save_dataset
    from tests.graphs.writer_fixture import make_dataset

    save_dataset(make_dataset(), tmp_path / "data")
    (tmp_path / "bomb.yaml").write_text(bomb(), encoding="utf-8")
    started = time.monotonic()
    result = cli(tmp_path, *args)
    assert time.monotonic() - started < 60
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stdout + result.stderr
    assert "bomb.yaml: the YAML expands to more than" in lines[0]
