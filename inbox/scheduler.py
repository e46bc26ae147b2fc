"""The in-process notification dispatcher of the embedded default (no Celery broker).

One asyncio task per event loop calls ``dispatch_due_notifications()`` every
``MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S`` seconds. It is started lazily, where the site's event loop
first does notification work or serves a request:

- the inbox app's ``DjangoNotificationStore`` starts it on the first ``send_notification_signal``
  (the app builds the store with ``on_use=ensure_notification_scheduler``);
- ``NotificationSchedulerMiddleware`` (wrapping the ASGI application in ``mastra_site.asgi``) starts it
  on the first HTTP or websocket connection, so that a restarted site dispatches records that fell due
  while it was down.

It runs when ``MASTRA_NOTIFICATION_SCHEDULER`` is true, which is the default without a broker; with a
broker Celery beat runs ``inbox.tasks.dispatch_due_notifications_task`` instead. Running both is safe
(claims are compare-and-set) but wasteful.
"""

from __future__ import annotations

import asyncio
import logging
import weakref

from django.conf import settings

from .dispatcher import dispatch_due_notifications

logger = logging.getLogger(__name__)

_tasks: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task]" = weakref.WeakKeyDictionary()


def scheduler_enabled() -> bool:
    return bool(getattr(settings, "MASTRA_NOTIFICATION_SCHEDULER", not getattr(settings, "CELERY_BROKER_URL", "")))


def ensure_notification_scheduler(interval: float | None = None) -> asyncio.Task | None:
    """Start the dispatcher loop on the running event loop once (no-op when disabled or started)."""
    if not scheduler_enabled():
        return None
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    task = _tasks.get(loop)
    if task is not None and not task.done():
        return task
    period = float(interval if interval is not None else settings.MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S)
    task = _tasks[loop] = loop.create_task(_run(period), name="mastra-notification-dispatcher")
    return task


def stop_notification_scheduler() -> None:
    """Cancel the loop on the running event loop (tests, shutdown)."""
    task = _tasks.pop(asyncio.get_running_loop(), None)
    if task is not None:
        task.cancel()


async def _run(period: float) -> None:
    while True:
        await asyncio.sleep(period)
        try:
            await dispatch_due_notifications()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("notification dispatch failed")


class NotificationSchedulerMiddleware:
    """ASGI wrapper: starts the in-process dispatcher with the first connection."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope.get("type") in ("http", "websocket"):
            ensure_notification_scheduler()
        return await self.app(scope, receive, send)
