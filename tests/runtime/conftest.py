"""Fixtures of the runtime tests: they need no Django (run them with ``-p no:django``).

When the Django plugin is active anyway, the app's ``ready()`` has installed the ORM run store and
the thread runtime factory; each test here swaps in a fresh in-memory run store and no thread
runtime, and puts the previous ones back afterwards.
"""

import pytest

from agents.runtime import storage, threads
from agents.runtime.storage import InMemoryStore, set_run_store


@pytest.fixture(autouse=True)
def run_store():
    """A fresh process-wide run store per test (suspended runs, run records)."""
    previous_store = storage._run_store
    previous_factory = threads.get_thread_runtime_factory()
    store = InMemoryStore()
    set_run_store(store)
    threads.set_thread_runtime_factory(None)
    yield store
    set_run_store(previous_store)
    threads.set_thread_runtime_factory(previous_factory)
