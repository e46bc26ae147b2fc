"""``NotificationStore`` (``agents.runtime.notifications``) on the ORM.

Each method runs one service or selector (one transaction) in a worker thread. They run with
``thread_sensitive=False``: each call is self-contained (it holds no connection state between calls),
so notifications for different threads are stored in parallel, on the executor's threads and their
own database connections, instead of queueing behind every other ORM call of the process. The first
use in an event loop also starts the in-process dispatcher there when it is enabled
(``inbox.scheduler``).
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.db import connection

from .scheduler import ensure_notification_scheduler
from .selectors import notifications_pending_in_thread
from .services import notifications_ingest, notifications_update


def _worker(func):
    """``func`` in an executor thread. Such a thread sees no request signals, so nothing else closes
    its connection after a database error: do it here, and the next call reconnects."""

    def call(**kwargs):
        if connection.connection is not None and connection.errors_occurred and not connection.is_usable():
            connection.close()
        return func(**kwargs)

    return sync_to_async(call, thread_sensitive=False)


_ingest = _worker(notifications_ingest)
_update = _worker(notifications_update)
_thread_pending = _worker(notifications_pending_in_thread)


class DjangoNotificationStore:
    async def ingest(self, **kwargs):
        ensure_notification_scheduler()
        return await _ingest(**kwargs)

    async def update(self, **kwargs):
        return await _update(**kwargs)

    async def thread_pending(self, **kwargs):
        return await _thread_pending(**kwargs)
