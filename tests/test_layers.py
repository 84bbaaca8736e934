"""Import layers: no module of the package imports from a layer above its own.

Every top-level module or package of ``ruwikibench`` sits in one layer of :data:`LAYERS` (bottom first). A module
may import from its own layer and from layers below it. Imports under ``if TYPE_CHECKING:`` are annotations
only and are not counted. Built-in stages reach the runner through :mod:`ruwikibench.registry` (imported by
name at run time), never by an upward import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ruwikibench"

LAYERS: list[tuple[str, set[str]]] = [
    ("bottom", {"", "config", "dataset", "contract", "registry", "jsonl", "runlock", "executors", "progress", "prompts", "rundir", "config_loader",
                "durable", "faults", "secrets"}),
    ("support", {"models", "retrieval", "corpus_builder"}),
    ("context", {"context"}),
    ("nodes", {"nodes"}),
    ("evaluators", {"evaluators"}),
    ("graphs", {"graphs"}),
    ("baselines", {"baselines"}),
    ("plugin", {"plugin"}),  # the plug-in authors' module: re-exports the layers below
    ("runner", {"runner"}),
    ("writer", {"writer"}),
    ("external", {"external"}),
    ("api", {"api"}),
    ("cli", {"cli", "__main__"}),
]
# The package's __init__ re-exports the Python API (run, score, report, Run); ruwikibench.api imports everything
# above the bottom layer inside its functions, so `import ruwikibench` stays cheap and loads no upper layer.
FACADE = {("ruwikibench", "ruwikibench.api")}


def layer_of(top: str) -> int:
    for index, (_, members) in enumerate(LAYERS):
        if top in members:
            return index
    raise KeyError(top)


def top_of(module: str) -> str:
    """'ruwikibench.graphs.outline' -> 'graphs'; 'ruwikibench' -> ''."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, imported module) of every import outside ``if TYPE_CHECKING:`` blocks; relative imports resolved."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            if base == "ruwikibench" or (node.level and not node.module):  # `from ruwikibench import config`
                found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
            else:
                found.append((node.lineno, base))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def upward_imports() -> list[str]:
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        own = layer_of(top_of(module))
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, imported in runtime_imports(tree, module, path.name == "__init__.py"):
            if imported != "ruwikibench" and not imported.startswith("ruwikibench."):
                continue
            target = top_of(imported)
            try:
                theirs = layer_of(target)
            except KeyError:
                if imported.split(".")[1] == "__version__":
                    continue
                raise
            if theirs > own and (module, imported) not in FACADE:
                problems.append(
                    f"{path.relative_to(PACKAGE.parent)}:{line}: {module} ({LAYERS[own][0]}) imports {imported} "
                    f"({LAYERS[theirs][0]})"
                )
    return problems


def test_every_top_level_module_has_a_layer() -> None:
    tops = {top_of(module_name(path)) for path in PACKAGE.rglob("*.py")}
    placed = set().union(*(members for _, members in LAYERS))
    assert tops <= placed, f"place these in LAYERS: {sorted(tops - placed)}"


def test_no_module_imports_from_a_layer_above() -> None:
    assert upward_imports() == []


def test_the_walk_finds_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: a node module importing the runner is caught, a TYPE_CHECKING import is not."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from ruwikibench.runner.execute import execute\n"
        "if TYPE_CHECKING:\n"
        "    from ruwikibench.cli import app\n"
        "from . import outline\n"
    )
    imports = runtime_imports(ast.parse(source), "ruwikibench.nodes.fake", is_package=False)
    assert [name for _, name in imports] == ["typing", "ruwikibench.runner.execute", "ruwikibench.nodes.outline"]
    own, theirs = layer_of("nodes"), layer_of(top_of("ruwikibench.runner.execute"))
    assert theirs > own


@pytest.mark.parametrize("top", ["contract", "registry", "config", "dataset"])
def test_contract_and_registry_sit_at_the_bottom(top: str) -> None:
    assert layer_of(top) == 0
