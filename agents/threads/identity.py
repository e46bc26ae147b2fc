"""One identity for a thread: its ``Thread`` row.

The runtime names a thread by a key (``agents.runtime.threads.thread_key``: resource id and thread
id joined by ``\\x1f``). Every service resolves that key here: both ids are checked (no control
character, so a key has exactly one reading; at most the columns' lengths), and the thread's row,
when it exists, must belong to the resource the caller named (else ``thread_resource_mismatch``).
Leases, inputs, events, runs and notification records point at the row by foreign key.
"""

from __future__ import annotations

from django.utils import timezone

from agents.models import Thread
from agents.runtime.errors import SignalError
from agents.runtime.ids import MAX_RESOURCE_ID, MAX_THREAD_ID, id_check

#: the separator of a thread key's two ids (control characters are refused in ids)
KEY_SEPARATOR = "\x1f"


def thread_ref(key: str) -> tuple[str, str]:
    """``(resource_id, thread_id)`` of a thread key, both checked; ``invalid_id`` otherwise."""
    if not isinstance(key, str) or key.count(KEY_SEPARATOR) != 1:
        raise SignalError("a thread is named by a resource id and a thread id without control characters",
                          code="invalid_id")
    resource_id, thread_id = key.split(KEY_SEPARATOR)
    return (id_check(resource_id, "resource_id", MAX_RESOURCE_ID), id_check(thread_id, "thread_id", MAX_THREAD_ID))


def thread_mismatch(thread_id: str) -> SignalError:
    return SignalError(f"thread {thread_id!r} belongs to another resource", code="thread_resource_mismatch")


def thread_checked(resource_id: str, thread_id: str, *, for_update: bool = False) -> Thread | None:
    """The thread's row (locked with ``for_update``), or None; a row of another resource raises
    ``thread_resource_mismatch``."""
    thread = Thread.objects.select_row({"id": thread_id}, for_update=for_update)
    if thread is not None and thread.resource_id != resource_id:
        raise thread_mismatch(thread_id)
    return thread


def thread_ensure(resource_id: str, thread_id: str) -> tuple[Thread, bool]:
    """The thread's row, created in the caller's transaction when missing: ``(thread, created)``.
    Another process may create it at the same moment: its row stands and is checked."""
    thread = thread_checked(resource_id, thread_id)
    if thread is not None:
        return thread, False
    now = timezone.now()
    if Thread.objects.insert_rows([{"id": thread_id, "resource_id": resource_id, "created_at": now,
                                    "updated_at": now}], ignore_conflicts=True):
        return Thread(id=thread_id, resource_id=resource_id, title="", metadata={}, created_at=now,
                      updated_at=now), True
    return thread_checked(resource_id, thread_id), False


def threads_ensure(pairs: set[tuple[str, str]] | list[tuple[str, str]]) -> None:
    """:func:`thread_ensure` for several ``(resource_id, thread_id)`` at once (two or three
    statements, whatever their number), in the caller's transaction."""
    pairs = set(pairs)
    if not pairs:
        return
    ids = sorted({thread_id for _, thread_id in pairs})
    owners = dict(Thread.objects.filter(pk__in=ids).values_list("id", "resource_id"))
    missing = sorted(pair for pair in pairs if pair[1] not in owners)
    if missing:
        now = timezone.now()
        inserted = Thread.objects.insert_rows([{"id": thread_id, "resource_id": resource_id, "created_at": now,
                                                "updated_at": now} for resource_id, thread_id in missing],
                                              ignore_conflicts=True)
        if inserted == len(missing):
            owners.update((thread_id, resource_id) for resource_id, thread_id in missing)
        else:  # another process created some of them, or two pairs name one thread: read them back
            owners = dict(Thread.objects.filter(pk__in=ids).values_list("id", "resource_id"))
    for resource_id, thread_id in sorted(pairs):
        if owners.get(thread_id) != resource_id:
            raise thread_mismatch(thread_id)
