"""The built-in stages come through the plug-in door, so the orchestration, the reports and the run config
name none of them: every stage-specific choice there is an attribute or method the stage declares (issue: "the
grep returns nothing"). ``"writer"`` as a role or a profile lives where roles and profiles are declared."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ruwikibench"
STAGE_NAME = re.compile(r'"(ranking|outline|sections|writer)"')


def stage_names_in(paths: list[Path]) -> list[tuple[str, int, str]]:
    """(file, line, text) of every quoted built-in stage name in the Python files and templates of ``paths``
    (folders searched whole)."""
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*"))) if f.is_file()]
    return [
        (file.name, number, line.strip())
        for file in files
        if file.suffix in (".py", ".j2")
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1)
        if STAGE_NAME.search(line)
    ]


def test_runner_reporting_and_config_name_no_builtin_stage() -> None:
    checked = ["runner", "aggregation", "validity", "cli/pictures.py", "reporting", "conf/config.py"]
    assert stage_names_in([PACKAGE / path for path in checked]) == []


def test_the_check_finds_a_quoted_stage_name(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text('x = 1\nif stage == "outline":\n    pass\n', encoding="utf-8")
    (tmp_path / "b.html.j2").write_text('{% if v.kind == "ranking" %}\n', encoding="utf-8")
    (tmp_path / "c.py").write_text("# ranking outline sections writer, unquoted\n", encoding="utf-8")
    assert [(name, line) for name, line, _ in stage_names_in([tmp_path])] == [("a.py", 2), ("b.html.j2", 1)]
