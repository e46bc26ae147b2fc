"""Celery tasks of the inbox (thin: each calls one function)."""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from celery import shared_task
from django.conf import settings

from agents.connections import DATABASE_DOWN
from agents.runtime.threads import get_thread_runtime

from .dispatcher import dispatch_due_notifications, dispatch_result_json

logger = logging.getLogger(__name__)

#: how long a task waits, after dispatching, for the thread runs it woke to finish in this worker
RUN_DRAIN_TIMEOUT_S = 600


async def _dispatch_and_drain() -> dict:
    result = await dispatch_due_notifications()
    # woken runs execute on this event loop: let them finish before async_to_sync closes it
    await get_thread_runtime().drain_background(timeout=RUN_DRAIN_TIMEOUT_S)
    return dispatch_result_json(result)


@shared_task(name="inbox.dispatch_due_notifications", ignore_result=True)
def dispatch_due_notifications_task() -> dict:
    """Dispatch due notification records (Celery beat runs it every
    ``MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S`` seconds)."""
    try:
        return async_to_sync(_dispatch_and_drain)()
    except DATABASE_DOWN as exc:  # an outage: the next beat tick dispatches what is due
        logger.warning("notification dispatch skipped: the database is unavailable (%s)", exc)
        return {"skipped": "database_unavailable"}
    except Exception:
        logger.exception("notification dispatch task failed")
        raise


def request_dispatch() -> bool:
    """Ask for a dispatch soon: a Celery task when a broker is configured (returns True); without
    one the in-process scheduler runs at its next tick (returns False)."""
    if getattr(settings, "CELERY_TASK_ALWAYS_EAGER", True):
        return False
    dispatch_due_notifications_task.delay()
    return True
