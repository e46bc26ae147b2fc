"""The import graph of the inbox app and of the runtime's notification package (the project-wide
rules are in ``tests/test_architecture.py``): the dispatcher above the store, and every runtime
module importable without Django."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from tests.test_architecture import MODULES, import_graph

def modules_of(package: str) -> dict[str, Path]:
    """The modules of ``package`` itself (not of its subpackages)."""
    depth = package.count(".") + 1
    return {name: path for name, path in MODULES.items()
            if name == package or (name.startswith(package + ".") and name.count(".") == depth)}


def graph(package: str) -> dict[str, set[str]]:
    return import_graph(modules_of(package))


def test_the_dispatcher_and_store_import_in_one_direction():
    edges = graph("inbox")
    assert "inbox.store" not in edges["inbox.services"] and "inbox.dispatcher" not in edges["inbox.store"]
    assert "inbox.store" in edges["inbox.dispatcher"]


@pytest.mark.parametrize("module", sorted(modules_of("agents.runtime.notifications")))
def test_each_runtime_module_imports_alone(module):
    """Each module of the runtime package imports (none needs Django)."""
    assert importlib.import_module(module).__name__ == module
