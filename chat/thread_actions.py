"""Writes of the chat page's thread list: rename and delete one of the caller's own threads."""

from __future__ import annotations

from agents.access import Caller
from agents.memory_threads import memory_thread_delete_by_id, memory_thread_update

#: the longest title (the column's length)
MAX_TITLE = 255


def thread_rename(*, caller: Caller, thread_id: str, title: str) -> dict | None:
    """Give the caller's thread ``title`` (spaces collapsed; empty: no title, the list shows the
    start of its first message). Returns ``{"id", "title"}``, or None when the caller has no such
    thread."""
    title = " ".join(title.split())
    thread = memory_thread_update(resource_id=caller.resource_id, thread_id=thread_id, title=title, metadata=None)
    return None if thread is None else {"id": thread_id, "title": thread["title"] or ""}


def thread_delete(*, caller: Caller, thread_id: str) -> bool:
    """Delete the caller's thread with its messages, runs and notifications; False when the caller
    has no such thread."""
    return memory_thread_delete_by_id(resource_id=caller.resource_id, thread_id=thread_id)
