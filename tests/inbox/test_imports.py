"""The import graph of the inbox app and of the runtime's notification package: no cycle, counting
imports made inside functions too (so none can hide a cycle), and no private name imported from
another module."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"inbox": ROOT / "inbox", "agents.runtime.notifications": ROOT / "agents" / "runtime" / "notifications"}


def modules_of(package: str) -> dict[str, Path]:
    return {f"{package}.{path.stem}" if path.stem != "__init__" else package: path
            for path in sorted(PACKAGES[package].glob("*.py"))}


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


def graph(package: str) -> dict[str, set[str]]:
    modules = modules_of(package)
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for target, names in imports_of(name, path):
            for candidate in [target, *(f"{target}.{n}" for n in names)]:
                if candidate in modules and candidate != name and candidate != package:
                    edges[name].add(candidate)
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


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_import_cycle(package):
    assert cycle(graph(package)) is None


def test_the_dispatcher_and_store_import_in_one_direction():
    edges = graph("inbox")
    assert "inbox.store" not in edges["inbox.services"] and "inbox.dispatcher" not in edges["inbox.store"]
    assert "inbox.store" in edges["inbox.dispatcher"]


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_private_name_is_imported_from_another_module(package):
    private = [(name, target, imported) for name, path in modules_of(package).items()
               for target, names in imports_of(name, path) for imported in names
               if imported.startswith("_") and imported != "__future__"]
    assert private == []


@pytest.mark.parametrize("module", sorted(modules_of("agents.runtime.notifications")))
def test_each_runtime_module_imports_alone(module):
    """Each module of the runtime package imports (none needs Django)."""
    assert importlib.import_module(module).__name__ == module
