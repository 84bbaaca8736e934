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
    (
        "bottom",
        {
            "",
            "config",
            "dataset",
            "contract",
            "metric",
            "registry",
            "jsonl",
            "runlock",
            "executors",
            "progress",
            "prompts",
            "rundir",
            "config_loader",
            "builtin_options",
            "durable",
            "faults",
            "secrets",
            "stamps",
            "version",
            "runspec",
            "stage_renames",
        },
    ),
    ("support", {"models", "retrieval", "corpus_builder"}),
    ("datasets", {"dataset_files"}),
    ("context", {"context"}),
    ("nodes", {"nodes"}),
    ("evaluators", {"evaluators"}),
    ("results", {"results"}),  # metrics.json typed (its estimates are the evaluators')
    ("baselines", {"baselines"}),  # the built-in stages (graphs) name their baselines
    ("graphs", {"graphs"}),
    ("plugin", {"plugin"}),  # the plug-in authors' module: re-exports the layers below
    ("reporting", {"reporting"}),
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


def _imported_by_name(call: ast.Call) -> bool:
    """``import_module("ruwikibench.x")`` / ``importlib.import_module("ruwikibench.x")`` with a constant name."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return (
        name == "import_module"
        and bool(call.args)
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
    )


def runtime_imports(
    tree: ast.AST, module: str, is_package: bool, annotations: bool = False
) -> list[tuple[int, str]]:
    """(line, imported module) of every import outside ``if TYPE_CHECKING:`` blocks (inside them too with
    ``annotations``); relative imports resolved."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not annotations:
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
        elif isinstance(node, ast.Call) and _imported_by_name(node):
            found.append((node.lineno, node.args[0].value))  # type: ignore[attr-defined]
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
            theirs = layer_of(target)
            if theirs > own and (module, imported) not in FACADE:
                problems.append(
                    f"{path.relative_to(PACKAGE.parent)}:{line}: {module} ({LAYERS[own][0]}) imports {imported} "
                    f"({LAYERS[theirs][0]})"
                )
    return problems


def known_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported_module(imported: str, known: dict[str, Path]) -> str | None:
    """The package module an import loads: 'ruwikibench.reporting.tables.cell' -> 'ruwikibench.reporting.tables'."""
    parts = imported.split(".")
    while parts:
        name = ".".join(parts)
        if name in known:
            return name
        parts.pop()
    return None


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (late imports inside functions included: they loop at run time;
    annotations under ``if TYPE_CHECKING:`` too: a type that loops belongs in a module of its own); a package's ``__init__`` importing its own modules is left out (that is how a
    package re-exports, and Python runs it before any of them)."""
    known = known_modules()
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets = {
            imported_module(name, known)
            for _, name in runtime_imports(tree, module, path.name == "__init__.py", annotations=True)
        }
        is_package = path.name == "__init__.py"
        graph[module] = {
            t
            for t in targets
            if t
            and t != module
            and not (is_package and t.startswith(module + "."))
            and (module, t) not in LATE_EDGES
        }
    return graph


# The one late import left out of the loop check: validating a run config asks the stage registry which stages
# declare options, aliases, profiles and roles (ruwikibench.config._registry, called only inside validators and
# methods, never at import); the registry's stages import the config. Everything else may not loop.
LATE_EDGES = {("ruwikibench.config", "ruwikibench.registry")}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


# The one loop left on purpose, through annotations only: the stage contract names the StageContext its methods
# receive, the context looks up a stage's options in the registry, the registry holds contract Stages.
ANNOTATION_LOOPS = [["ruwikibench.context", "ruwikibench.contract", "ruwikibench.registry"]]


def test_no_import_cycles() -> None:
    """No loop of imports between modules, within a layer either (late and annotation imports count)."""
    assert import_cycles(import_graph()) == ANNOTATION_LOOPS


def test_the_allowed_loop_is_annotations_only() -> None:
    runtime = {module: set(targets) for module, targets in import_graph().items()}
    known = known_modules()
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        runtime[module] = {
            t
            for _, name in runtime_imports(tree, module, path.name == "__init__.py")
            if (t := imported_module(name, known))
            and t != module
            and not (path.name == "__init__.py" and t.startswith(module + "."))
            and (module, t) not in LATE_EDGES
        }
    assert import_cycles(runtime) == []


def test_the_cycle_finder_finds_a_loop_and_nothing_else() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_import_module_by_name_counts_as_an_import() -> None:
    source = "import importlib\nimportlib.import_module('ruwikibench.runner.execute')\n"
    imports = runtime_imports(ast.parse(source), "ruwikibench.nodes.fake", is_package=False)
    assert ("ruwikibench.runner.execute") in [name for _, name in imports]


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
    assert [name for _, name in imports] == [
        "typing",
        "ruwikibench.runner.execute",
        "ruwikibench.nodes.outline",
    ]
    own, theirs = layer_of("nodes"), layer_of(top_of("ruwikibench.runner.execute"))
    assert theirs > own


@pytest.mark.parametrize("top", ["contract", "registry", "config", "dataset"])
def test_contract_and_registry_sit_at_the_bottom(top: str) -> None:
    assert layer_of(top) == 0
