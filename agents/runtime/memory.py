"""Memory configuration shared by every memory backend.

``Memory`` on the Django models lives in ``agents.memory``; :class:`InMemoryMemory` keeps threads in
a dict for scripts and tests that run without Django.
"""

from __future__ import annotations

from typing import Any

from .errors import AgentConfigError
from .storage import InMemoryStore


class BaseMemory:
    """Conversation memory: ``last_messages`` of history per call, optional title generation.

    Subclasses provide ``store`` (a :class:`~agents.runtime.storage.MemoryStore`).
    """

    store: Any = None

    def __init__(self, *, last_messages: int | bool = 10, generate_title: bool | dict = False,
                 read_only: bool = False):
        if last_messages is not False and (not isinstance(last_messages, int) or isinstance(last_messages, bool)
                                           or last_messages < 0):
            raise AgentConfigError("memory.last_messages", "must be a non-negative integer or False")
        if not isinstance(generate_title, (bool, dict)):
            raise AgentConfigError("memory.generate_title", "must be a bool or {'model': ..., 'instructions': ...}")
        self.last_messages = last_messages
        self.generate_title = generate_title
        self.read_only = bool(read_only)

    def resolve_options(self, overrides: dict | None) -> dict:
        opts = {"last_messages": self.last_messages, "read_only": self.read_only,
                "generate_title": self.generate_title}
        if overrides:
            opts.update({k: v for k, v in overrides.items() if v is not None})
        return opts


class InMemoryMemory(BaseMemory):
    def __init__(self, *, store: InMemoryStore | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.store = store or InMemoryStore()
