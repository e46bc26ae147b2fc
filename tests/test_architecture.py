"""The shape of the code base (DESIGN §1): dependencies point down, modules talk through public
names, there is no import cycle (imports inside functions count: none can hide a cycle), and no
runtime class grows past one clear job (about 300 lines)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agents", "inbox", "mastra_site", "editor", "chat")
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
