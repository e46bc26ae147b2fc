"""What the runtime needs from the inbox (:class:`NotificationStore`), and the process-wide store
(``inbox.store.DjangoNotificationStore`` on the database, installed by the inbox app)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Protocol

from ..errors import AgentConfigError


@dataclass(frozen=True)
class Ingested:
    """What :meth:`NotificationStore.ingest` stored: one record per notification, in order, each with
    ``"coalesced": bool``. ``thread_read``: the store read the thread's state in the same
    transaction (``thread``: :meth:`ThreadStore.thread_state`'s answer, None for a thread with no
    lease); otherwise the caller reads it. ``planned``: what ``plan(records, state)`` returned, when
    the store ran it in that transaction and wrote its ``"updates"``."""

    records: list[dict]
    thread_read: bool = False
    thread: dict | None = None
    planned: dict | None = None


class NotificationStore(Protocol):
    """Records are snake_case dicts with aware datetimes.

    Every method is one transaction (a store may share it with the calls made meanwhile: group
    commit); ``update`` changes only rows whose ``lock_token`` is ``token`` (compare-and-set), so a
    claim taken over by another process is never overwritten.
    """

    async def ingest(self, *, agent_id: str, resource_id: str, thread_id: str, notifications: list[dict],
                     token: str, locked_until: datetime, now: datetime, thread_key: str, thread_store: Any,
                     plan: Callable[[list[dict], dict | None], dict] | None) -> Ingested:
        """Create each notification, or coalesce it into the oldest unclaimed pending record with the
        same agent, thread, source, kind and dedupe or coalesce key; claim the rows with ``token``.
        When the store can read the thread's state itself (``thread_store`` is one it knows, under
        ``thread_key``), it does so in the same transaction and, with ``plan``, calls
        ``plan(records, state)`` there and writes the returned ``"updates"`` with the records."""
        ...

    async def update(self, *, updates: list[dict], token: str) -> int:
        """Apply ``{"id", **fields}`` to each record still claimed by ``token``; returns the rows changed."""
        ...


_store: NotificationStore | None = None


def set_notification_store(store: NotificationStore | None) -> None:
    """Install the process-wide notification store (the inbox app does it at start-up)."""
    global _store
    _store = store


def get_notification_store() -> NotificationStore:
    if _store is None:
        raise AgentConfigError("notifications", "send_notification_signal needs a notification store: run inside "
                                                "the Django site (inbox app installed) or call set_notification_store()")
    return _store


__all__ = ["Ingested", "NotificationStore", "get_notification_store", "set_notification_store"]
