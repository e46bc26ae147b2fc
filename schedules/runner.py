"""Where fires run: claim due fires, run each claimed fire once, settle fires whose process died.

- :func:`schedules_tick` (every ``MASTRA_SCHEDULE_TICK_S``): fail the fires whose runner stopped
  renewing its lease, claim the due fires (``services.fires_claim_due``) and dispatch them;
- :func:`dispatch_fire`: hand a claimed fire to whoever runs fires here: this process (the
  embedded default, ``MASTRA_SCHEDULE_SCHEDULER`` on: a background task on this event loop) or a
  Celery worker (the task ``schedules.run_fire``);
- :func:`run_fire`: start it (``claimed`` → ``running``, once), renew its lease while it runs on the
  lease thread (``agents.connections.async_twin`` on ``LEASE``), run it (``agents.runtime.schedules.execute``),
  write its end.

In the embedded default each serving process (and ``manage.py run_workers``) runs the tick as one of
its background jobs (``mastra_site.workers``); in production Celery beat runs the tick and the
workers run the fires. Any number of them may race: each fire runs once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from datetime import datetime, timedelta
from typing import Callable

from celery import current_app
from django.conf import settings
from django.utils import timezone

from agents.connections import LEASE, async_twin
from agents.registry import get_mastra
from agents.runtime.schedules import FireResult, execute_schedule_fire, execute_workflow_fire
from agents.runtime.schedules import Schedule as ScheduleRecord
from agents.runtime.schedules import Trigger

from .services import fire_finish, fire_renew, fire_start, fires_claim_due, fires_sweep

logger = logging.getLogger(__name__)

#: the Celery task that runs one fire (``schedules.tasks.run_fire_task``)
RUN_FIRE_TASK = "schedules.run_fire"
RUNNER_PREFIX = f"{socket.gethostname()[:32]}:{os.getpid()}"


def new_runner_id() -> str:
    return f"{RUNNER_PREFIX}:{uuid.uuid4().hex[:8]}"


def fire_lease() -> timedelta:
    return timedelta(seconds=settings.MASTRA_SCHEDULE_FIRE_LEASE_S)


def misfire_grace() -> timedelta:
    return timedelta(seconds=settings.MASTRA_SCHEDULE_MISFIRE_GRACE_S)


def dispatch_timeout() -> timedelta:
    """How long a claimed fire may wait for a runner before the sweep dispatches it again."""
    return max(fire_lease(), timedelta(seconds=3 * settings.MASTRA_SCHEDULE_TICK_S))


def runs_in_process() -> bool:
    return bool(settings.MASTRA_SCHEDULE_SCHEDULER)


async def _execute(schedule: ScheduleRecord, trigger: Trigger, fired_at: datetime) -> FireResult:
    mastra = get_mastra()
    if schedule.kind == "workflow":
        return await execute_workflow_fire(mastra, schedule, run_id=trigger.claim_id)
    return await execute_schedule_fire(mastra, schedule, kind="manual" if trigger.trigger_kind == "manual" else "cron",
                                       fired_at=fired_at, signal_id=f"fire_{uuid.UUID(trigger.id).hex}")


async def _renew(trigger_id: str, runner: str, clock: Callable[[], datetime]) -> None:
    lease = fire_lease()
    renew = async_twin(fire_renew, thread=LEASE)
    while True:
        await asyncio.sleep(lease.total_seconds() / 3)
        try:
            if not await renew(trigger_id=trigger_id, runner=runner, now=clock(), lease=lease):
                logger.warning("schedule fire %s: lease lost while running", trigger_id)
                return
        except Exception:  # noqa: BLE001 - the next renewal may work; the sweep decides past the lease
            logger.warning("schedule fire %s: lease renewal failed", trigger_id, exc_info=True)


async def run_fire(trigger_id: str, *, clock: Callable[[], datetime] = timezone.now,
                   runner: str | None = None) -> str | None:
    """Run the claimed fire ``trigger_id`` if no runner took it yet; returns its outcome, or None
    when it was not this call's to run."""
    runner = runner or new_runner_id()
    started = await async_twin(fire_start)(trigger_id=trigger_id, runner=runner, now=clock(), lease=fire_lease())
    if started is None:
        return None
    schedule, trigger = started
    renewing = asyncio.ensure_future(_renew(trigger_id, runner, clock))
    try:
        result = await _execute(schedule, trigger, clock())
    except asyncio.CancelledError:
        # this process is stopping: the fire stays running until the sweep fails it (it may have
        # done part of its work, so it is not run again)
        raise
    except Exception as exc:  # noqa: BLE001 - an error of ours, not the agent's: the fire fails with it
        logger.exception("schedule fire %s failed", trigger_id)
        result = FireResult("failed", reason=f"internal error: {type(exc).__name__}: {exc}")
    finally:
        renewing.cancel()
    if not await async_twin(fire_finish)(trigger_id=trigger_id, runner=runner, now=clock(), result=result):
        logger.warning("schedule fire %s ended after its lease was lost; its end is not recorded", trigger_id)
    return result.outcome


# -- dispatch ----------------------------------------------------------------------------------
_in_process: set[asyncio.Task] = set()


def dispatch_fire(trigger_id: str, *, clock: Callable[[], datetime] = timezone.now) -> None:
    """Hand the claimed fire to its runner: a background task here (must be called on the event
    loop) or a Celery task (``schedules.run_fire``)."""
    if not runs_in_process():
        current_app.send_task(RUN_FIRE_TASK, args=[trigger_id])
        return
    task = asyncio.get_running_loop().create_task(run_fire(trigger_id, clock=clock), name=f"schedule-fire-{trigger_id}")
    _in_process.add(task)
    task.add_done_callback(_fire_done)


def request_fire_dispatch(trigger_id: str) -> bool:
    """From sync code (the admin): enqueue the claimed fire on Celery (True), or leave it to this
    deployment's next in-process tick, which runs claimed manual fires (False)."""
    if runs_in_process():
        return False
    current_app.send_task(RUN_FIRE_TASK, args=[trigger_id])
    return True


def _fire_done(task: asyncio.Task) -> None:
    _in_process.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logger.error("schedule fire task failed", exc_info=task.exception())


async def drain_fires(timeout: float | None = None) -> None:
    """Wait for this process's in-process fires (tests; a stopping process)."""
    while _in_process:
        await asyncio.wait(set(_in_process), timeout=timeout)
        if timeout is not None:
            return


async def schedules_tick(*, now: datetime | None = None, limit: int = 100, max_batches: int = 50,
                         clock: Callable[[], datetime] = timezone.now) -> dict:
    """One pass of the scheduler at ``now`` (default: the clock's time): settle fires whose runner
    died, claim due fires (batches of ``limit`` schedules while a batch is full) and dispatch them.
    Returns ``{"claimed", "skipped", "schedules", "failed", "redispatched"}``."""
    now = now or clock()
    sweep = await async_twin(fires_sweep)(now=now, dispatch_timeout=dispatch_timeout())
    counts = {"claimed": 0, "skipped": 0, "schedules": 0, "failed": sweep.failed, "redispatched": len(sweep.redispatch)}
    for trigger_id in sweep.redispatch:
        dispatch_fire(trigger_id, clock=clock)
    for _ in range(max_batches):
        claim = await async_twin(fires_claim_due)(now=now, grace=misfire_grace(), limit=limit)
        counts["claimed"] += len(claim.to_run)
        counts["skipped"] += claim.skipped
        counts["schedules"] += claim.schedules
        for trigger_id in claim.to_run:
            dispatch_fire(trigger_id, clock=clock)
        if claim.schedules < limit:
            break
    return counts
