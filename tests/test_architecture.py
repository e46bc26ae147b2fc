"""The shape of the code base (DESIGN §1): dependencies point down, modules talk through public
names, there is no import cycle (imports inside functions count: none can hide a cycle), and no
runtime class grows past one clear job (about 300 lines)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agents", "inbox", "mastra_site", "editor", "chat", "schedules", "agent_channels", "ledger", "budgets")
MAX_RUNTIME_CLASS_LINES = 320  # "about 300": a class past it does more than one job


def project_modules(packages=PACKAGES) -> dict[str, Path]:
    """``{dotted name: path}`` of every module of ``packages`` (migrations excluded)."""
    found = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = project_modules()


def imports_of(module: str, path: Path) -> list[tuple[str, list[str]]]:
    """``(imported module, names)`` for every import statement of the file, wherever it is."""
    found = []
    package = module if path.stem == "__init__" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[:len(parent) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            found.append((base, [alias.name for alias in node.names]))
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the project modules it imports (``from pkg import submodule`` is an edge to the
    submodule only; any other name imported from a package is an edge to the package)."""
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for target, names in imports_of(name, path):
            submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules]
            targets = submodules + ([target] if len(submodules) < max(len(names), 1) else [])
            edges[name] |= {t for t in targets if t in modules and t != name}
    return edges


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_the_project():
    assert cycle(import_graph(MODULES)) is None


def test_no_private_name_is_imported_from_another_module():
    private = [(name, target, imported) for name, path in MODULES.items()
               for target, names in imports_of(name, path) for imported in names
               if imported.startswith("_") and not imported.startswith("__")
               and target.split(".")[0] in PACKAGES]
    assert private == []


def test_the_runtime_imports_nothing_of_django_or_the_site():
    wrong = [(name, target) for name, path in MODULES.items() if name.startswith("agents.runtime")
             for target, _ in imports_of(name, path)
             if target.split(".")[0] in ("django", "channels", "rest_framework", "inbox", "mastra_site")
             or (target.startswith("agents") and not target.startswith("agents.runtime"))]
    assert wrong == []


def test_async_code_reaches_the_database_through_one_bridge():
    """``agents.connections.async_twin`` is the one bridge from async code to sync services: no
    other module imports asgiref's ``sync_to_async`` or Channels' ``database_sync_to_async``."""
    bridges = {("asgiref.sync", "sync_to_async"), ("channels.db", "database_sync_to_async")}
    wrong = [(name, target, imported) for name, path in MODULES.items() if name != "agents.connections"
             for target, names in imports_of(name, path) for imported in names if (target, imported) in bridges]
    assert wrong == []


def test_no_app_imports_the_site():
    wrong = [(name, target) for name, path in MODULES.items() if not name.startswith("mastra_site")
             for target, _ in imports_of(name, path) if target.split(".")[0] == "mastra_site"]
    assert wrong == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("agents.runtime")))
def test_no_runtime_class_is_over_about_300_lines(module):
    tree = ast.parse(MODULES[module].read_text())
    big = [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)
           if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_RUNTIME_CLASS_LINES]
    assert big == []


def package_edges(depth: int) -> dict[str, set[str]]:
    """The import graph with modules grouped by their package at ``depth`` (1: the apps)."""
    edges: dict[str, set[str]] = {}
    for module, targets in import_graph(MODULES).items():
        package = ".".join(module.split(".")[:depth])
        edges.setdefault(package, set())
        for target in targets:
            other = ".".join(target.split(".")[:depth])
            edges.setdefault(other, set())
            if other != package:
                edges[package].add(other)
    return edges


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_no_import_cycle_between_apps_or_packages(depth):
    """Dependencies point one way between apps (``agents`` ← ``inbox`` ← ``mastra_site``) and
    between the packages of an app (``agents.store`` ← ``agents.threads``)."""
    assert cycle(package_edges(depth)) is None


def protocol_methods(suffixes=("Store", "PubSub")) -> set[str]:
    """Method names of the storage and messaging protocols (``class XStore(Protocol)``)."""
    names = set()
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name.endswith(suffixes) and any(
                    isinstance(base, ast.Name) and base.id == "Protocol" for base in node.bases):
                names |= {f.name for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return names


def test_no_protocol_method_is_optional():
    """Every method of a store or pub/sub protocol is required: nobody asks ``hasattr`` whether an
    implementation has one (one code path, typed)."""
    methods = protocol_methods()
    assert {"ingest", "update", "accept", "publish"} <= methods
    probes = [(module, node.lineno, node.args[1].value) for module, path in MODULES.items()
              for node in ast.walk(ast.parse(path.read_text()))
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "hasattr"
              and len(node.args) == 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value in methods]
    assert probes == []


def runtime_classes() -> set[str]:
    return {node.name for module, path in MODULES.items() if module.startswith("agents.runtime")
            for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ClassDef)}


def late_collaborators(tree: ast.AST, classes: set[str]) -> list[tuple[int, str]]:
    """Collaborators given to a runtime object after it was built: a function assigned to an
    attribute of an object that the same function built from a runtime class, a runtime class
    (not a dataclass, whose fields are constructor arguments) with a class-level ``Callable`` slot
    to fill in later, and a lambda that calls through a holder filled in later
    (``lambda chunk: holder["emit"](chunk)``)."""
    found = []
    for scope in ast.walk(tree):
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nodes = list(ast.walk(scope))
            functions = {n.name for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            built = {target.id for node in nodes if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                     and getattr(node.value.func, "id", getattr(node.value.func, "attr", None)) in classes
                     for target in node.targets if isinstance(target, ast.Name)}
            for node in nodes:
                if not isinstance(node, ast.Assign):
                    continue
                function = isinstance(node.value, ast.Lambda) or (
                    isinstance(node.value, ast.Name) and node.value.id in functions)
                found += [(node.lineno, ast.unparse(target)) for target in node.targets
                          if function and isinstance(target, ast.Attribute)
                          and isinstance(target.value, ast.Name) and target.value.id in built]
        elif isinstance(scope, ast.ClassDef) and scope.name in classes and not any(
                "dataclass" in ast.unparse(d) for d in scope.decorator_list):
            found += [(node.lineno, f"{scope.name}.{node.target.id}") for node in scope.body
                      if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                      and "Callable" in ast.unparse(node.annotation) and node.value is not None]
        elif isinstance(scope, ast.Lambda) and isinstance(scope.body, ast.Call) \
                and isinstance(scope.body.func, ast.Subscript):
            found.append((scope.lineno, ast.unparse(scope)))
    return sorted(set(found))


def test_the_checker_finds_late_collaborators():
    late = ast.parse("def build():\n    runtime = ThreadRuntime(store)\n    runtime.lookup = lambda i: i\n"
                     "    holder = {}\n    run = Run(emit=lambda c: holder['emit'](c))\n"
                     "class ThreadRuntime:\n    lookup: Callable | None = None\n")
    assert [line for line, _ in late_collaborators(late, {"ThreadRuntime", "Run"})] == [3, 5, 7]


def test_runtime_objects_get_their_collaborators_at_construction():
    classes = runtime_classes()
    late = [(module, line, what) for module, path in MODULES.items()
            for line, what in late_collaborators(ast.parse(path.read_text()), classes)]
    assert late == []
