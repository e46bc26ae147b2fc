"""Memory threads as Mastra's memory shows them: pages of threads and messages (selectors),
create, update and delete (services). The HTTP routes (``agents.api.memory``) and the Python
thread API of ``Memory`` (:class:`DjangoMemoryStore`) both call these. The HTTP caller's rights
are checked before these are called (``agents.access.Caller``); a thread is created through
``agents.store.thread_prepare``, as a run creates it."""

from __future__ import annotations

import re

from django.db import transaction

from agents.connections import async_twin

from agents.models import Message, Thread
from agents.runtime.errors import AgentConfigError
from agents.runtime.storage import REMINDER_TYPES, newest_page
from agents.runtime.threads.store import thread_key
from agents.store import DjangoStore, thread_ids_check, thread_prepare, thread_row_get

#: a metadata key a thread listing may filter on (Mastra's rule for metadata filters)
METADATA_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
#: what a thread listing may be ordered by, and the column each names
ORDER_FIELDS = {"createdAt": "created_at", "updatedAt": "updated_at"}


def page_bounds(page: int, per_page: int) -> tuple[int, int]:
    return page * per_page, page * per_page + per_page


def memory_threads_page(*, threads, page: int, per_page: int | bool, metadata: dict | None = None,
                        order_by: dict | None = None) -> dict:
    """``{threads, total, page, perPage, hasMore}`` of a thread queryset, most recently updated
    first unless ``order_by`` (``{"field": "createdAt"|"updatedAt", "direction": "ASC"|"DESC"}``)
    says otherwise; ``metadata`` keeps the threads whose metadata holds every pair; ``per_page``
    ``False`` gives them all."""
    for name, value in (metadata or {}).items():
        if not isinstance(name, str) or not METADATA_KEY_RE.fullmatch(name):
            raise AgentConfigError("filter.metadata", f"invalid metadata key {name!r}", code="invalid_field")
        threads = threads.filter(**{f"metadata__{name}": value})
    field = ORDER_FIELDS.get((order_by or {}).get("field") or "updatedAt")
    direction = str((order_by or {}).get("direction") or "DESC").upper()
    if field is None or direction not in ("ASC", "DESC"):
        raise AgentConfigError("order_by", "field is createdAt or updatedAt, direction ASC or DESC",
                               code="invalid_field")
    ordered = threads.order_by(f"-{field}" if direction == "DESC" else field, "thread_id")
    total = threads.count()
    if per_page is False:
        rows, has_more = list(ordered), False
    else:
        start, end = page_bounds(page, per_page)
        rows, has_more = list(ordered[start:end]), end < total
    return {"threads": [t.to_dict() for t in rows], "total": total, "page": page, "perPage": per_page,
            "hasMore": has_more}


def memory_messages_page(*, thread: Thread, page: int, per_page: int | bool, include_system_reminders: bool) -> dict:
    """``{messages, total, page, perPage, hasMore}`` of a thread in Mastra's stored format, as
    Mastra pages them: page 0 holds the newest ``per_page`` messages, each page in chronological
    order (``per_page`` ``False``: all of them); system reminders (``reactive`` signals) only with
    ``include_system_reminders``."""
    rows = Message.objects.filter(thread_id=thread.key).order_by("id")
    if not include_system_reminders:
        rows = rows.exclude(role="signal", content__metadata__signal__type__in=REMINDER_TYPES)
    total = rows.count()
    start, end, has_more = newest_page(total, page, per_page)
    window = page_window(rows, start, end, total)
    return {"messages": [m.to_dict() for m in window], "total": total, "page": page, "perPage": per_page,
            "hasMore": has_more}


def page_window(rows, start: int, end: int, total: int) -> list[Message]:
    """``rows[start:end]`` (chronological), read from the nearer end of the thread: the newest pages
    (the ones read) skip no rows however long the thread, the oldest ones few."""
    if end <= start:
        return []
    if total - end < start:  # nearer the newest end: read backwards from it
        return list(reversed(rows.reverse()[total - end:total - start]))
    return list(rows[start:end])


def memory_thread_save(*, resource_id: str, thread_id: str, title: str | None, metadata: dict | None) -> dict:
    """Create the thread (or update its title and merge its metadata) and return it."""
    thread, _ = thread_prepare(resource_id=resource_id, thread_id=thread_id, title=title, metadata=metadata,
                               last_messages=0, read_only=False)
    return thread


def memory_thread_update(*, resource_id: str, thread_id: str, title: str | None, metadata: dict | None) -> dict | None:
    """Update an existing thread's title and merge its metadata; None when there is no such thread."""
    thread_ids_check(resource_id, thread_id)
    if thread_row_get(resource_id, thread_id) is None:
        return None
    return memory_thread_save(resource_id=resource_id, thread_id=thread_id, title=title, metadata=metadata)


def memory_thread_delete(*, thread: Thread) -> None:
    """Delete the thread with its messages, inputs, events, runs and notification records."""
    with transaction.atomic():
        Thread.objects.filter(pk=thread.pk).delete()


def memory_thread_delete_by_id(*, resource_id: str, thread_id: str) -> bool:
    """:func:`memory_thread_delete` by ids; False when there is no such thread."""
    thread_ids_check(resource_id, thread_id)
    thread = thread_row_get(resource_id, thread_id)
    if thread is None:
        return False
    memory_thread_delete(thread=thread)
    return True


def memory_threads_of(*, resource_id: str | None, page: int, per_page: int | bool, metadata: dict | None,
                      order_by: dict | None) -> dict:
    """:func:`memory_threads_page` of one resource's threads (all threads without one)."""
    threads = Thread.objects.all()
    if resource_id is not None:
        threads = threads.filter(resource_id=resource_id)
    return memory_threads_page(threads=threads, page=page, per_page=per_page, metadata=metadata, order_by=order_by)


def memory_messages_of(*, resource_id: str, thread_id: str, page: int, per_page: int | bool,
                       include_system_reminders: bool) -> dict | None:
    """:func:`memory_messages_page` by ids; None when there is no such thread."""
    thread_ids_check(resource_id, thread_id)
    thread = Thread.objects.select_row({"key": thread_key(resource_id, thread_id)})
    if thread is None:
        return None
    return memory_messages_page(thread=thread, page=page, per_page=per_page,
                                include_system_reminders=include_system_reminders)


amemory_messages_of = async_twin(memory_messages_of)
amemory_threads_of = async_twin(memory_threads_of)
amemory_thread_update = async_twin(memory_thread_update)
amemory_thread_delete_by_id = async_twin(memory_thread_delete_by_id)


class DjangoMemoryStore(DjangoStore):
    """``DjangoStore`` with the memory thread API (``agents.runtime.memory.BaseMemory``) on the
    services above: the store of ``agents.memory.Memory``."""

    async def list_messages_page(self, **kwargs):
        return await amemory_messages_of(**kwargs)

    async def list_threads(self, **kwargs):
        return await amemory_threads_of(**kwargs)

    async def update_thread(self, **kwargs):
        return await amemory_thread_update(**kwargs)

    async def delete_thread(self, **kwargs):
        return await amemory_thread_delete_by_id(**kwargs)
