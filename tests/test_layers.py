"""Import layers: no module of the package imports from a layer above its own.

Every module of ``ruwikibench`` sits in one layer of :data:`LAYERS` (bottom first), found by its longest
dotted name in the table: a top-level module or package (``"runner"``), or a module placed apart from its
package (``"conf.loader"`` checks a config's stages against the registry, so it sits with ``stage``;
``"storage.results"`` types metrics.json with the evaluators' estimates; the aggregation compares a run with
its baselines through ``"reporting.tables"`` and ``"reporting.paired"``). A module may import from its own
layer and from layers below it; ``from package import module`` counts as an import of that module. Imports
under ``if TYPE_CHECKING:`` are annotations only and are not counted; the late imports of :data:`LATE_EDGES`
(inside functions only, checked) are left out too. Built-in stages reach the runner through
:mod:`ruwikibench.stage.registry` (imported by name at run time), never by an upward import. The README's
"Layout" section lists every package and module of this table.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ruwikibench"

LAYERS: list[tuple[str, set[str]]] = [
    ("foundation", {"", "version", "dataset", "prompts", "runtime", "conf"}),
    ("storage", {"storage"}),
    ("support", {"models", "retrieval", "corpus_builder"}),
    ("stage", {"stage", "conf.loader"}),
    ("nodes", {"nodes"}),
    ("evaluators", {"evaluators"}),
    ("results", {"storage.results"}),  # metrics.json and result rows typed, with the evaluators' estimates
    ("baselines", {"baselines"}),  # the built-in stages (graphs) name their baselines
    ("graphs", {"graphs"}),
    ("plugin", {"plugin"}),  # the plug-in authors' module: re-exports the layers below
    # a stage's table and headlines, paired comparisons: the aggregation compares a run with its baselines
    # through them, the reports print them
    ("tables", {"reporting.tables", "reporting.paired"}),
    ("aggregation", {"aggregation"}),
    ("reporting", {"reporting"}),  # reads what the aggregation wrote: its views, its stamp of metrics.json
    ("validity", {"validity"}),
    ("runner", {"runner"}),
    ("writer", {"writer"}),
    ("external", {"external"}),
    ("api", {"api"}),
    ("cli", {"cli", "__main__"}),
]
# The package's __init__ re-exports the Python API (run, score, report, Run); ruwikibench.api imports
# everything above the bottom layer inside its functions, so `import ruwikibench` stays cheap and loads no
# upper layer.
FACADE = {("ruwikibench", "ruwikibench.api")}
# Older names of moved modules, kept for outside code (plug-ins written against older docs, scripts): each is
# the new module under another name (a sys.modules alias). Nothing in the package imports them.
ALIASES = {
    "ruwikibench.config": "ruwikibench.conf.config",
    "ruwikibench.config_loader": "ruwikibench.conf.loader",
    "ruwikibench.context": "ruwikibench.stage.context",
    "ruwikibench.contract": "ruwikibench.stage.contract",
    "ruwikibench.registry": "ruwikibench.stage.registry",
}


def unit_of(module: str) -> str:
    """'ruwikibench.graphs.outline' -> 'graphs'; 'ruwikibench.conf.loader' -> 'conf.loader'."""
    relative = module.split(".", 1)[1] if "." in module else ""
    placed = set().union(*(members for _, members in LAYERS))
    parts = relative.split(".")
    while parts:
        if ".".join(parts) in placed:
            return ".".join(parts)
        parts.pop()
    return relative.split(".")[0]


def layer_of(unit: str) -> int:
    for index, (_, members) in enumerate(LAYERS):
        if unit in members:
            return index
    raise KeyError(unit)


def module_name(path: Path, package: Path = PACKAGE) -> str:
    relative = path.relative_to(package.parent).with_suffix("")
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
    """``import_module("ruwikibench.x")`` (or ``importlib.import_module``) with a constant name."""
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
            # `from ruwikibench.stage import registry` imports stage.registry; `from x.y import name` x.y
            # (imported_module keeps the longest module name of `x.y.name`)
            found.extend(
                (node.lineno, base if alias.name == "*" else f"{base}.{alias.name}") for alias in node.names
            )
        elif isinstance(node, ast.Call) and _imported_by_name(node):
            found.append((node.lineno, node.args[0].value))  # type: ignore[attr-defined]
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def package_modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Module name -> file, the alias modules of the older names left out."""
    found = {module_name(path, package): path for path in sorted(package.rglob("*.py"))}
    return {name: path for name, path in found.items() if name not in ALIASES}


def imported_module(imported: str, known: dict[str, Path]) -> str | None:
    """The package module an import loads: 'ruwikibench.reporting.tables.cell' -> '….reporting.tables'."""
    parts = imported.split(".")
    while parts:
        name = ".".join(parts)
        if name in known or name in ALIASES:
            return name
        parts.pop()
    return None


def _package_imports(package: Path) -> list[tuple[str, Path, int, str]]:
    """(module, file, line, imported package module) of every runtime import of another package module."""
    known = package_modules(package)
    found = []
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, name in runtime_imports(tree, module, path.name == "__init__.py"):
            target = imported_module(name, known)
            if target and target != module:
                found.append((module, path, line, target))
    return found


def upward_imports(package: Path = PACKAGE) -> list[str]:
    problems = []
    for module, path, line, imported in _package_imports(package):
        if imported in ALIASES or (module, imported) in LATE_EDGES:
            continue  # an older name: reported by old_name_imports
        own, theirs = layer_of(unit_of(module)), layer_of(unit_of(imported))
        if theirs > own and (module, imported) not in FACADE:
            problems.append(
                f"{path.relative_to(package.parent)}:{line}: {module} ({LAYERS[own][0]}) imports {imported} "
                f"({LAYERS[theirs][0]})"
            )
    return problems


def old_name_imports(package: Path = PACKAGE) -> list[str]:
    return [
        f"{path.relative_to(package.parent)}:{line}: {module} imports the older name {imported} "
        f"(import {ALIASES[imported]})"
        for module, path, line, imported in _package_imports(package)
        if imported in ALIASES
    ]


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (late imports inside functions included: they loop at run
    time; annotations under ``if TYPE_CHECKING:`` too: a type that loops belongs in a module of its own); a
    package's ``__init__`` importing its own modules is left out (that is how a package re-exports, and Python
    runs it before any of them)."""
    known = package_modules()
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


# The one late import left out of the layer and loop checks: validating a run config asks the stage registry
# which stages declare options, aliases, profiles and roles (ruwikibench.conf.config._registry and the roles'
# lookup, called only inside validators and functions, never at import); the registry's stages import the
# config. Everything else may not reach up or loop.
LATE_EDGES = {("ruwikibench.conf.config", "ruwikibench.stage.registry")}


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


# The one loop left on purpose, through annotations only: the stage contract names the StageContext its
# methods receive, the context looks up a stage's options in the registry, the registry holds contract Stages.
ANNOTATION_LOOPS = [["ruwikibench.stage.context", "ruwikibench.stage.contract", "ruwikibench.stage.registry"]]


def test_no_import_cycles() -> None:
    """No loop of imports between modules, within a layer either (late and annotation imports count)."""
    assert import_cycles(import_graph()) == ANNOTATION_LOOPS


def test_the_allowed_loop_is_annotations_only() -> None:
    runtime = {module: set(targets) for module, targets in import_graph().items()}
    known = package_modules()
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


def module_level_imports(tree: ast.AST) -> list[str]:
    """The imported names of every import outside function bodies (run when the module is imported)."""
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.extend(f"{node.module or ''}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def test_the_late_edges_are_imported_inside_functions_only() -> None:
    known = package_modules()
    for module, imported in sorted(LATE_EDGES):
        path = known[module]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        lazy = [name for _, name in runtime_imports(tree, module, path.name == "__init__.py")]
        assert any(imported_module(name, known) == imported for name in lazy), (module, imported)
        eager = {imported_module(name, known) for name in module_level_imports(tree)}
        assert imported not in eager, f"{module} imports {imported} at import time"


def test_the_late_import_check_tells_a_function_body_from_the_module() -> None:
    source = "import a.b\nfrom c import d\ndef f():\n    from e import g\nclass K:\n    import h\n"
    assert module_level_imports(ast.parse(source)) == ["a.b", "c.d", "h"]


def test_the_cycle_finder_finds_a_loop_and_nothing_else() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_import_module_by_name_counts_as_an_import() -> None:
    source = "import importlib\nimportlib.import_module('ruwikibench.runner.execute')\n"
    imports = runtime_imports(ast.parse(source), "ruwikibench.nodes.fake", is_package=False)
    assert ("ruwikibench.runner.execute") in [name for _, name in imports]


def test_every_module_has_a_layer() -> None:
    units = {unit_of(module) for module in package_modules()}
    placed = set().union(*(members for _, members in LAYERS))
    assert units <= placed, f"place these in LAYERS: {sorted(units - placed)}"


def test_no_module_imports_from_a_layer_above() -> None:
    assert upward_imports() == []


def test_no_module_imports_an_older_name() -> None:
    assert old_name_imports() == []


def _plant(root: Path, files: dict[str, str]) -> Path:
    package = root / "ruwikibench"
    for name, source in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return package


def test_the_walk_finds_a_planted_upward_import(tmp_path: Path) -> None:
    """The checker itself, on a planted package: the config model importing the runner (directly, by a late
    import, through ``from ruwikibench.runner import execute`` or by name) is caught; the same import under
    ``if TYPE_CHECKING:``, a downward import, the config loader importing the registry and the config's late
    import of the registry (:data:`LATE_EDGES`) are not; an import of an older module name is reported on its
    own."""
    package = _plant(
        tmp_path,
        {
            "__init__.py": "",
            "runner/__init__.py": "",
            "runner/execute.py": "from ruwikibench.conf.config import RunConfig\n",
            "conf/__init__.py": "",
            "conf/loader.py": "from ruwikibench.stage.registry import get_stage\n",
            "stage/__init__.py": "",
            "stage/registry.py": "",
            "conf/config.py": (
                "from typing import TYPE_CHECKING\n"
                "from ruwikibench.runner.execute import execute\n"
                "if TYPE_CHECKING:\n"
                "    from ruwikibench.cli import app\n"
                "def late():\n"
                "    from ruwikibench.runner import execute\n"
                "    import importlib\n"
                "    importlib.import_module('ruwikibench.runner.execute')\n"
                "def _registry():\n"
                "    from ruwikibench.stage import registry\n"
            ),
            "nodes/__init__.py": "",
            "nodes/outline.py": "import ruwikibench.contract\n",
            "cli/__init__.py": "app = None\n",
        },
    )
    assert upward_imports(package) == [
        f"ruwikibench/conf/config.py:{line}: ruwikibench.conf.config (foundation) imports {imported} (runner)"
        for line, imported in (
            (2, "ruwikibench.runner.execute"),
            (6, "ruwikibench.runner.execute"),
            (8, "ruwikibench.runner.execute"),
        )
    ]
    assert old_name_imports(package) == [
        (
            "ruwikibench/nodes/outline.py:1: ruwikibench.nodes.outline imports the older name "
            "ruwikibench.contract (import ruwikibench.stage.contract)"
        )
    ]


def test_a_module_placed_apart_from_its_package_takes_its_own_layer() -> None:
    assert unit_of("ruwikibench.conf.loader") == "conf.loader"
    assert unit_of("ruwikibench.conf.config") == "conf"
    assert unit_of("ruwikibench") == ""
    assert layer_of("conf.loader") == layer_of("stage") > layer_of("conf")


def test_the_stage_contract_sits_below_everything_that_implements_or_consumes_it() -> None:
    contract = layer_of("stage")
    for unit in (
        "nodes",
        "evaluators",
        "graphs",
        "baselines",
        "plugin",
        "reporting",
        "aggregation",
        "runner",
    ):
        assert layer_of(unit) > contract, unit
    for unit in ("conf", "dataset", "storage"):
        assert layer_of(unit) < contract, unit


def test_the_results_sit_above_the_evaluators_and_below_their_readers() -> None:
    assert unit_of("ruwikibench.storage.results") == "storage.results"
    assert unit_of("ruwikibench.storage.rundir") == "storage"
    readers = ("reporting.tables", "aggregation", "reporting", "runner", "api", "cli")
    assert layer_of("evaluators") < layer_of("storage.results") < min(layer_of(unit) for unit in readers)


def test_the_aggregation_sits_between_the_tables_and_the_reports() -> None:
    assert unit_of("ruwikibench.reporting.paired") == "reporting.paired"
    assert unit_of("ruwikibench.reporting.compare") == "reporting"
    assert layer_of("reporting.tables") < layer_of("aggregation") < layer_of("reporting")


@pytest.mark.parametrize("old", sorted(ALIASES))
def test_an_older_name_is_the_moved_module(old: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(ALIASES[old])


def test_the_package_loads_no_older_name() -> None:
    """Dynamic imports too (the package's lazy names, the CLI, the plug-in module, the API)."""
    code = (
        "import sys, ruwikibench\n"
        "[getattr(ruwikibench, name) for name in ruwikibench.__all__]\n"
        "import ruwikibench.cli, ruwikibench.plugin, ruwikibench.api\n"
        "from ruwikibench.stage.registry import discover\n"
        "discover()\n"
        f"print(sorted(set(sys.modules) & set({sorted(ALIASES)!r})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _readme_layout() -> set[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    lines = block.splitlines()
    start = lines.index("ruwikibench/")
    names = set()
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        for match in re.finditer(r"(?:^  |;  )([\w.]+/?)  ", line):
            names.add(match[1].rstrip("/").removesuffix(".py"))
    return names


def test_the_readme_layout_names_every_package_and_module() -> None:
    """The README's layout lists what ruwikibench/ holds at its top, older names left out."""
    top = {
        path.stem if path.is_file() else path.name
        for path in PACKAGE.iterdir()
        if (path.is_dir() and (path / "__init__.py").exists()) or (path.suffix == ".py")
    }
    top -= {name.split(".")[1] for name in ALIASES} | {"__main__"}
    assert _readme_layout() == top


def test_the_readme_layout_lists_the_layers_bottom_first() -> None:
    order = [layer_of(unit_of(f"ruwikibench.{name}")) for name in _readme_order()]
    assert order == sorted(order)


def _readme_order() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("\n## Layout\n", 1)[1].split("```", 2)[1]
    lines = block.splitlines()
    names = []
    for line in lines[lines.index("ruwikibench/") + 1 :]:
        if not line.startswith("  "):
            break
        match = re.match(r"  ([\w.]+/?)  ", line)
        if match:
            name = match[1].rstrip("/").removesuffix(".py")
            names.append("" if name == "__init__" else name)
    return names


def test_the_plugins_page_lists_the_layers_in_order() -> None:
    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    block = text.split("\n## The layers\n", 1)[1].split("```", 2)[1]
    names = [line.split()[0] for line in block.splitlines() if line and not line.startswith(" ")]
    assert names == [name for name, _ in LAYERS]
