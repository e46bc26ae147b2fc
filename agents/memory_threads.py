"""Memory threads as Mastra's memory routes show them: pages of threads and messages (selectors),
create, update and delete (services). The caller's rights are checked before these are called
(``agents.access.Caller``); a thread is created through ``agents.store.thread_prepare``, as a run
creates it."""

from __future__ import annotations

from django.db import transaction

from agents.models import Message, Thread
from agents.store import thread_prepare


def page_bounds(page: int, per_page: int) -> tuple[int, int]:
    return page * per_page, page * per_page + per_page


def memory_threads_page(*, threads, page: int, per_page: int) -> dict:
    """``{threads, total, page, perPage, hasMore}`` of a thread queryset, most recently updated first."""
    total = threads.count()
    start, end = page_bounds(page, per_page)
    rows = [t.to_dict() for t in threads.order_by("-updated_at", "thread_id")[start:end]]
    return {"threads": rows, "total": total, "page": page, "perPage": per_page, "hasMore": end < total}


def memory_messages_page(*, thread: Thread, page: int, per_page: int, include_system_reminders: bool) -> dict:
    """``{messages, total, page, perPage, hasMore}`` of a thread, oldest first; system reminders
    (``reactive`` signals) only with ``include_system_reminders``, as Mastra lists them."""
    rows = Message.objects.filter(thread_id=thread.key).order_by("id")
    if not include_system_reminders:
        rows = rows.exclude(type="signal", metadata__signal__tagName="system-reminder")
    total = rows.count()
    start, end = page_bounds(page, per_page)
    return {"messages": [m.to_dict() for m in rows[start:end]], "total": total, "page": page, "perPage": per_page,
            "hasMore": end < total}


def memory_thread_save(*, resource_id: str, thread_id: str, title: str | None, metadata: dict | None) -> dict:
    """Create the thread (or update its title and metadata) and return it."""
    thread, _ = thread_prepare(resource_id=resource_id, thread_id=thread_id, title=title, metadata=metadata,
                               last_messages=0, read_only=False)
    return thread


def memory_thread_delete(*, thread: Thread) -> None:
    """Delete the thread with its messages, inputs, events, runs and notification records."""
    with transaction.atomic():
        Thread.objects.filter(pk=thread.pk).delete()
