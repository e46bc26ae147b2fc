"""What the runtime needs from the inbox (:class:`NotificationStore`), and the process-wide store
(``inbox.store.DjangoNotificationStore`` on the database, installed by the inbox app)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from ..errors import AgentConfigError


class NotificationStore(Protocol):
    """Records are snake_case dicts with aware datetimes.

    Every method is one transaction; ``update`` changes only rows whose ``lock_token`` is ``token``
    (compare-and-set), so a claim taken over by another process is never overwritten.
    """

    async def ingest(self, *, agent_id: str, resource_id: str, thread_id: str, notifications: list[dict],
                     token: str, locked_until: datetime, now: datetime) -> list[dict]:
        """Create each notification, or coalesce it into the oldest unclaimed pending record with the
        same agent, thread, source, kind and dedupe or coalesce key; claim the rows with ``token``.
        Returns one record per notification, in order, each with ``"coalesced": bool``."""

    async def update(self, *, updates: list[dict], token: str) -> int:
        """Apply ``{"id", **fields}`` to each record still claimed by ``token``; returns the rows changed."""

    # Optional: a store with ``ingest_planned`` group-commits concurrent calls (``send_notification_signal``
    # then uses it and ``update_grouped`` instead of ``ingest`` and ``update``):
    #
    # async def ingest_planned(self, *, agent_id, resource_id, thread_id, notifications, token, locked_until,
    #                          now, thread_key, thread_store, plan) -> dict:
    #     """``ingest`` for one call, in a transaction shared with the calls made meanwhile. When it can
    #     read the thread's state itself (``thread_store`` is one it knows) it does so in that transaction
    #     and returns it as ``"thread"``; then, when ``plan`` is given, it calls ``plan(records, state)``
    #     there and writes the returned ``"updates"`` with the records (returned as ``"planned"``).
    #     Returns ``{"records", "thread"?, "planned"?}``."""
    #
    # async def update_grouped(self, *, updates, token) -> int:
    #     """``update``, in a transaction shared with the calls made meanwhile."""


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
