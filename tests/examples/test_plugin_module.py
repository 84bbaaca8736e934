"""ruwikibench.plugin is the one module plug-in authors import: the examples import nothing else of
ruwikibench, and everything it lists in ``__all__`` is there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ruwikibench import plugin

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ALLOWED = "ruwikibench.plugin"


def ruwikibench_imports(path: Path) -> list[str]:
    """The ``ruwikibench`` modules a file imports (``import ruwikibench.x``, ``from ruwikibench.x import y``,
    ``from ruwikibench import x`` as ``ruwikibench.x``), with their line numbers."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = (
                [f"{node.module}.{alias.name}" for alias in node.names]
                if node.module == "ruwikibench"
                else [node.module]
            )
        else:
            continue
        found += [
            f"{module} (line {node.lineno})"
            for module in modules
            if module == "ruwikibench" or module.startswith("ruwikibench.")
        ]
    return found


def example_files() -> list[Path]:
    return sorted(EXAMPLES.rglob("*.py"))


def test_there_are_examples_to_check() -> None:
    names = {path.relative_to(EXAMPLES).as_posix() for path in example_files()}
    assert {"rwb_lead/rwb_lead/stage.py", "rwb_plugins/rwb_plugins/one_call_outline.py"} <= names


@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.relative_to(EXAMPLES).as_posix())
def test_examples_import_only_the_plugin_module(path: Path) -> None:
    others = [found for found in ruwikibench_imports(path) if not found.startswith(f"{ALLOWED} ")]
    assert others == [], f"{path}: imports {', '.join(others)}; plug-ins import ruwikibench.plugin only"


def test_the_check_sees_every_import_form(tmp_path: Path) -> None:
    source = tmp_path / "bad.py"
    source.write_text(
        "import ruwikibench.contract\nfrom ruwikibench import registry\n"
        "from ruwikibench.plugin import Stage\nfrom .local import x\nimport json\n",
        encoding="utf-8",
    )
    assert ruwikibench_imports(source) == [
        "ruwikibench.contract (line 1)",
        "ruwikibench.registry (line 2)",
        "ruwikibench.plugin (line 3)",
    ]


def test_every_name_in_all_is_defined() -> None:
    missing = [name for name in plugin.__all__ if not hasattr(plugin, name)]
    assert missing == [] and len(set(plugin.__all__)) == len(plugin.__all__)
    assert {"Stage", "StageScore", "register_stage", "ask", "cut_text", "rouge_l", "OutlineOutput"} <= set(
        plugin.__all__
    )
