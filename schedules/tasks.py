"""Celery tasks of the schedules app (thin: each calls one function). Beat runs ``schedules.tick``
every ``MASTRA_SCHEDULE_TICK_S`` seconds: it claims the due fires and enqueues one
``schedules.run_fire`` per fire; a worker runs it (once, whatever the broker redelivers)."""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from celery import shared_task

from agents.connections import DATABASE_DOWN
from agents.runtime.threads import get_thread_runtime

from . import runner

logger = logging.getLogger(__name__)

#: how long a task waits, after a threaded fire, for the thread run it woke to finish in this worker
RUN_DRAIN_TIMEOUT_S = 600


async def _run_and_drain(trigger_id: str) -> str | None:
    outcome = await runner.run_fire(trigger_id)
    # a woken thread run executes on this event loop: let it finish before async_to_sync closes it
    await get_thread_runtime().drain_background(timeout=RUN_DRAIN_TIMEOUT_S)
    return outcome


@shared_task(name=runner.RUN_FIRE_TASK, ignore_result=True, acks_late=True)
def run_fire_task(trigger_id: str) -> str | None:
    """Run one claimed fire (a redelivered task finds it taken and does nothing)."""
    try:
        return async_to_sync(_run_and_drain)(trigger_id)
    except Exception:
        logger.exception("schedule fire task %s failed", trigger_id)
        raise


@shared_task(name="schedules.tick", ignore_result=True)
def tick_task() -> dict:
    """Claim the due fires and enqueue them (Celery beat)."""
    try:
        return async_to_sync(runner.schedules_tick)()
    except DATABASE_DOWN as exc:  # an outage: the next tick claims what fell due (the misfire policy decides)
        logger.warning("schedules tick skipped: the database is unavailable (%s)", exc)
        return {"skipped": "database_unavailable"}
    except Exception:
        logger.exception("schedules tick failed")
        raise
