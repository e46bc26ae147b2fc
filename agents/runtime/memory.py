"""Memory configuration and the thread API shared by every memory backend.

``Memory`` on the Django models lives in ``agents.memory``; :class:`InMemoryMemory` keeps threads in
a dict for scripts and tests that run without Django.

The thread API mirrors Mastra's ``Memory`` in snake_case (``createThread`` → :meth:`create_thread`,
``getThreadById``, ``listThreads``, ``updateThread``, ``deleteThread``, ``recall``,
``saveMessages``). It is async, as the rest of the runtime, and goes through the memory's store
(:class:`~agents.runtime.storage.MemoryStore`): on the Django models, the same services the HTTP
memory routes call. A thread is identified by (resource id, thread id), so every call that names
a thread names its resource too. Messages are in Mastra's stored format
(:mod:`~agents.runtime.stored_messages`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from .errors import AgentConfigError, ThreadNotFoundError
from .ids import MAX_RESOURCE_ID, MAX_THREAD_ID, id_check
from .storage import InMemoryStore

#: Mastra's defaults: a page of threads, a page of recalled messages (without ``last_messages``)
THREADS_PER_PAGE = 100
MESSAGES_PER_PAGE = 40


@dataclass(frozen=True)
class MemoryThread:
    """A memory thread (Mastra's ``StorageThreadType``); ``to_dict()`` is its JSON (camelCase)."""

    id: str
    resource_id: str
    title: str
    metadata: dict
    created_at: str
    updated_at: str

    @classmethod
    def from_dict(cls, data: dict) -> "MemoryThread":
        return cls(id=data["id"], resource_id=data["resourceId"], title=data.get("title") or "",
                   metadata=dict(data.get("metadata") or {}), created_at=data["createdAt"],
                   updated_at=data["updatedAt"])

    def to_dict(self) -> dict:
        return {"id": self.id, "resourceId": self.resource_id, "title": self.title, "metadata": self.metadata,
                "createdAt": self.created_at, "updatedAt": self.updated_at}


@dataclass(frozen=True)
class ThreadPage:
    """A page of threads (Mastra's ``StorageListThreadsOutput``)."""

    threads: list[MemoryThread]
    total: int
    page: int
    per_page: int | bool
    has_more: bool


@dataclass(frozen=True)
class MessagePage:
    """A page of a thread's messages in Mastra's stored format (``recall``'s answer): page 0
    holds the newest ``per_page`` messages, in chronological order."""

    messages: list[dict]
    total: int
    page: int
    per_page: int | bool
    has_more: bool


def _ids(resource_id: Any, thread_id: Any) -> None:
    id_check(resource_id, "resource_id", MAX_RESOURCE_ID, error=AgentConfigError)
    id_check(thread_id, "thread_id", MAX_THREAD_ID, error=AgentConfigError)


def _paging(page: Any, per_page: Any) -> None:
    if isinstance(page, bool) or not isinstance(page, int) or page < 0:
        raise AgentConfigError("page", "must be a non-negative integer", code="invalid_field")
    if per_page is not False and (isinstance(per_page, bool) or not isinstance(per_page, int) or per_page < 1):
        raise AgentConfigError("per_page", "must be a positive integer or False (all)", code="invalid_field")


def _optional_dict(value: Any, name: str) -> dict | None:
    if value is not None and not isinstance(value, dict):
        raise AgentConfigError(name, "must be a dict", code="invalid_field")
    return value


class BaseMemory:
    """Conversation memory: ``last_messages`` of history per call, optional title generation, and
    the thread API.

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

    # -- the thread API (Mastra's Memory) ------------------------------------------------------

    async def create_thread(self, *, resource_id: str, thread_id: str | None = None, title: str | None = None,
                            metadata: dict | None = None) -> MemoryThread:
        """Create the thread (a new id when none is given) and return it; an existing thread of
        that id gets the title and the metadata (merged), as Mastra's ``createThread`` saves it."""
        thread_id = str(uuid.uuid4()) if thread_id is None else thread_id
        _ids(resource_id, thread_id)
        thread, _ = await self.store.prepare_thread(resource_id=resource_id, thread_id=thread_id, title=title,
                                                    metadata=_optional_dict(metadata, "metadata"),
                                                    last_messages=0, read_only=False)
        return MemoryThread.from_dict(thread)

    async def get_thread_by_id(self, *, resource_id: str, thread_id: str) -> MemoryThread | None:
        """The thread, or None (also for another resource's thread of that id)."""
        _ids(resource_id, thread_id)
        thread = await self.store.get_thread(resource_id=resource_id, thread_id=thread_id)
        return None if thread is None else MemoryThread.from_dict(thread)

    async def list_threads(self, *, filter: dict | None = None, page: int = 0,
                           per_page: int | bool = THREADS_PER_PAGE, order_by: dict | None = None) -> ThreadPage:
        """A page of threads, most recently updated first (Mastra's ``listThreads``): ``filter``
        ``{"resource_id": ..., "metadata": {...}}`` (every pair must match), ``order_by``
        ``{"field": "createdAt"|"updatedAt", "direction": "ASC"|"DESC"}``, ``per_page=False`` for
        all of them."""
        filter = _optional_dict(filter, "filter") or {}
        unknown = set(filter) - {"resource_id", "resourceId", "metadata"}
        if unknown:
            raise AgentConfigError("filter", f"unknown key {sorted(unknown)[0]!r}", code="invalid_field")
        resource_id = filter.get("resource_id", filter.get("resourceId"))
        if resource_id is not None:
            id_check(resource_id, "filter.resource_id", MAX_RESOURCE_ID, error=AgentConfigError)
        _paging(page, per_page)
        listing = await self.store.list_threads(resource_id=resource_id,
                                                metadata=_optional_dict(filter.get("metadata"), "filter.metadata"),
                                                page=page, per_page=per_page,
                                                order_by=_optional_dict(order_by, "order_by"))
        return ThreadPage(threads=[MemoryThread.from_dict(t) for t in listing["threads"]], total=listing["total"],
                          page=listing["page"], per_page=listing["perPage"], has_more=listing["hasMore"])

    async def update_thread(self, *, resource_id: str, thread_id: str, title: str | None = None,
                            metadata: dict | None = None) -> MemoryThread:
        """Set the title and merge ``metadata`` into the thread's; ``ThreadNotFoundError`` when
        there is no such thread (as Mastra's ``updateThread`` throws)."""
        _ids(resource_id, thread_id)
        thread = await self.store.update_thread(resource_id=resource_id, thread_id=thread_id, title=title,
                                                metadata=_optional_dict(metadata, "metadata"))
        if thread is None:
            raise ThreadNotFoundError(f"thread {thread_id!r} not found")
        return MemoryThread.from_dict(thread)

    async def delete_thread(self, *, resource_id: str, thread_id: str) -> None:
        """Delete the thread and everything of it (messages, and on the Django models its runs,
        inputs, events and notification records); nothing happens when it does not exist."""
        _ids(resource_id, thread_id)
        await self.store.delete_thread(resource_id=resource_id, thread_id=thread_id)

    async def recall(self, *, resource_id: str, thread_id: str, page: int = 0, per_page: int | bool | None = None,
                     include_system_reminders: bool = False) -> MessagePage:
        """A page of the thread's messages in Mastra's stored format (Mastra's ``recall``): page 0
        holds the newest ``per_page`` (default: this memory's ``last_messages``, else 40), in
        chronological order; ``reactive`` signals only with ``include_system_reminders``. A
        thread that does not exist has no messages."""
        _ids(resource_id, thread_id)
        if per_page is None:
            per_page = self.last_messages if self.last_messages else MESSAGES_PER_PAGE
        _paging(page, per_page)
        listing = await self.store.list_messages_page(resource_id=resource_id, thread_id=thread_id, page=page,
                                                      per_page=per_page,
                                                      include_system_reminders=bool(include_system_reminders))
        if listing is None:
            return MessagePage(messages=[], total=0, page=page, per_page=per_page, has_more=False)
        return MessagePage(messages=listing["messages"], total=listing["total"], page=listing["page"],
                           per_page=listing["perPage"], has_more=listing["hasMore"])

    async def save_messages(self, *, messages: list[dict], resource_id: str | None = None,
                            thread_id: str | None = None) -> list[dict]:
        """Store ``messages`` (Mastra's stored format, or model messages, which are converted) in
        their threads: each message's ``resourceId`` / ``threadId``, else the ones given here. A
        message whose id its thread holds replaces it; transient signals are never stored. Returns
        the messages as stored, in order (Mastra's ``saveMessages`` answer ``messages``)."""
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise AgentConfigError("messages", "must be a list of message dicts", code="invalid_messages")
        groups: dict[tuple[str, str], list[dict]] = {}
        for message in messages:
            resource = message.get("resourceId", resource_id)
            thread = message.get("threadId", thread_id)
            if resource is None or thread is None:
                raise AgentConfigError("messages", "each message needs a resourceId and a threadId (or pass "
                                       "resource_id= and thread_id=)", code="missing_target")
            _ids(resource, thread)
            groups.setdefault((resource, thread), []).append(
                {k: v for k, v in message.items() if k not in ("resourceId", "threadId")})
        saved: list[dict] = []
        for (resource, thread), group in groups.items():
            saved.extend(await self.store.save_messages(resource_id=resource, thread_id=thread, messages=group))
        return saved


class InMemoryMemory(BaseMemory):
    def __init__(self, *, store: InMemoryStore | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.store = store or InMemoryStore()
