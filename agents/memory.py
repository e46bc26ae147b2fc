"""``Memory`` on the Django models: ``Agent(memory=Memory(last_messages=10))``."""

from __future__ import annotations

from typing import Any

from agents.runtime.memory import BaseMemory


class Memory(BaseMemory):
    """Threads and messages in ``agents.models``; options as ``BaseMemory``.

    The store is created lazily so that importing this module needs no configured Django.
    """

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._store = None

    @property
    def store(self):
        if self._store is None:
            from agents.memory_threads import DjangoMemoryStore

            self._store = DjangoMemoryStore()
        return self._store
