"""Celery tasks of the channels (thin: each calls one function)."""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from celery import shared_task

from agents.connections import DATABASE_DOWN
from agents.runtime.threads import get_thread_runtime

from .work import channels_work

logger = logging.getLogger(__name__)

#: how long the task waits, after its pass, for the thread runs it woke to finish in this worker
RUN_DRAIN_TIMEOUT_S = 600


async def work_and_drain() -> dict:
    result = await channels_work()
    # runs woken by a handoff execute on this event loop: let them end before async_to_sync closes it
    await get_thread_runtime().drain_background(timeout=RUN_DRAIN_TIMEOUT_S)
    return result


@shared_task(name="agent_channels.channels_work", ignore_result=True)
def channels_work_task() -> dict:
    """One pass of the channels' work (Celery beat runs it every 2 s)."""
    try:
        return async_to_sync(work_and_drain)()
    except DATABASE_DOWN as exc:  # an outage: the next pass picks up what waits (every step claims its rows)
        logger.warning("channels work skipped: the database is unavailable (%s)", exc)
        return {"skipped": "database_unavailable"}
    except Exception:
        logger.exception("channels work task failed")
        raise
