"""One identity for a thread: the pair (resource id, thread id), and its ``Thread`` row.

The runtime names a thread by a key (``agents.runtime.threads.thread_key``: resource id and thread
id joined by ``\\x1f``), and that key is the ``Thread`` row's primary key: leases, inputs, events,
runs, messages and notification records point at the row by it. Two resources may each have a
thread of the same id; neither can see, take or probe the other's (DESIGN §2, invariant 6). Every
service resolves a key here: both ids are checked (no control character, so a key has exactly one
reading; at most the columns' lengths).
"""

from __future__ import annotations

from django.utils import timezone

from agents.models import Thread
from agents.runtime.errors import SignalError
from agents.runtime.ids import MAX_RESOURCE_ID, MAX_THREAD_ID, id_check
from agents.runtime.threads.store import thread_key

#: the separator of a thread key's two ids (control characters are refused in ids)
KEY_SEPARATOR = "\x1f"

__all__ = ["KEY_SEPARATOR", "thread_checked", "thread_ensure", "thread_key", "thread_ref", "threads_ensure"]


def thread_ref(key: str) -> tuple[str, str]:
    """``(resource_id, thread_id)`` of a thread key, both checked; ``invalid_id`` otherwise."""
    if not isinstance(key, str) or key.count(KEY_SEPARATOR) != 1:
        raise SignalError("a thread is named by a resource id and a thread id without control characters",
                          code="invalid_id")
    resource_id, thread_id = key.split(KEY_SEPARATOR)
    return (id_check(resource_id, "resource_id", MAX_RESOURCE_ID), id_check(thread_id, "thread_id", MAX_THREAD_ID))


def thread_checked(resource_id: str, thread_id: str, *, for_update: bool = False) -> Thread | None:
    """The row of the thread ``(resource_id, thread_id)`` (locked with ``for_update``), or None."""
    return Thread.objects.select_row({"key": thread_key(resource_id, thread_id)}, for_update=for_update)


def _new_row(resource_id: str, thread_id: str, now) -> dict:
    return {"key": thread_key(resource_id, thread_id), "resource_id": resource_id, "thread_id": thread_id,
            "created_at": now, "updated_at": now}


def thread_ensure(resource_id: str, thread_id: str) -> tuple[Thread, bool]:
    """The thread's row, created in the caller's transaction when missing: ``(thread, created)``.
    Another process may create it at the same moment: its row stands."""
    thread = thread_checked(resource_id, thread_id)
    if thread is not None:
        return thread, False
    row = _new_row(resource_id, thread_id, timezone.now())
    if Thread.objects.insert_rows([row], ignore_conflicts=True):
        return Thread(title="", metadata={}, **row), True
    return thread_checked(resource_id, thread_id), False


def threads_ensure(pairs: set[tuple[str, str]] | list[tuple[str, str]]) -> None:
    """:func:`thread_ensure` for several ``(resource_id, thread_id)`` at once (two statements at
    most, whatever their number), in the caller's transaction."""
    pairs = set(pairs)
    if not pairs:
        return
    keys = sorted(thread_key(resource_id, thread_id) for resource_id, thread_id in pairs)
    present = set(Thread.objects.filter(pk__in=keys).values_list("key", flat=True))
    now = timezone.now()
    missing = [_new_row(resource_id, thread_id, now) for resource_id, thread_id in sorted(pairs)
               if thread_key(resource_id, thread_id) not in present]
    if missing:
        Thread.objects.insert_rows(missing, ignore_conflicts=True)
