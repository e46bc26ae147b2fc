"""A process's background work: thread recovery, the notification dispatcher, the schedules, the
channels, the retention sweep.

Eight periodic jobs (:data:`JOBS`), run by a :class:`Workers` on one event loop, each once at start
and then every ``interval`` seconds, until :meth:`Workers.stop`:

- ``thread-recovery`` (every third of ``MASTRA_THREAD_LEASE_TTL_MS``): starts runs for threads whose
  owner died (its lease expired) or that have waiting inputs and no owner
  (``ThreadRuntime.recover``). The input a dead run was answering is answered again here, then the
  inputs queued behind it, in order, each once;
- ``notification-dispatch`` (every ``MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S``, when
  ``MASTRA_NOTIFICATION_SCHEDULER`` is on, the default without a Celery broker): delivers the
  notification records that fell due (``inbox.dispatcher.dispatch_due_notifications``). With a broker,
  Celery beat runs the same dispatch instead;
- ``schedule-tick`` (every ``MASTRA_SCHEDULE_TICK_S``, when ``MASTRA_SCHEDULE_SCHEDULER`` is on, the
  default without a Celery broker): claims the schedules' due fires and runs them in this process
  (``schedules.runner``); with a broker, Celery beat claims them and the workers run them. Any
  number of processes may run it: each fire runs once;
- ``declared-schedules`` (at start, then daily): creates the schedules the site declares (the
  ``DECLARED_SCHEDULES`` of the module ``settings.MASTRA`` names) that do not exist yet;
- ``channels`` (every ``MASTRA_CHANNELS_POLL_MS``, when an agent has ``channels`` and
  ``MASTRA_CHANNELS_SCHEDULER`` is on, the default): hands received Slack and GitHub events to the
  agents, relays their runs to the outbox and sends what is due (``agent_channels.work``); Celery
  beat runs the same pass too when a broker is set (every step claims its rows);
- ``editor-sync`` (at start, then hourly): the site's code agents → the admin editor's agent
  definitions (``agents.editor.sync``);
- ``provider-keys`` (at start, then daily): a warning for each agent whose provider key is not set
  (``agents.runtime.providers.credentials``): it could not answer anyone;
- ``retention-sweep`` (every ``MASTRA_SWEEP_INTERVAL_S``, when ``MASTRA_SWEEP_SCHEDULER`` is on, the
  default without a Celery broker): deletes the rows past their retention (``mastra_site.sweeper``),
  on a thread of its own. With a broker, Celery beat runs the same sweep instead.

Where they run:

- every serving process, from the moment it starts serving and before any request:
  :func:`start_with_server` (called by ``mastra_site.asgi``) hooks the start into daphne's reactor
  (daphne sends no ASGI lifespan events) and, for other ASGI servers, into the lifespan ``startup``
  event;
- a worker-only process: ``manage.py run_workers``.

A process that only sends (a management command, a Celery worker) runs none of them; the serving
and worker processes recover what its runs leave behind.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from django.conf import settings

from agent_channels.adapters import channels_configured
from agent_channels.work import channels_work
from agents.editor.sync import sync_at_start
from agents.registry import declared_schedules, get_mastra
from agents.runtime.providers.credentials import missing_keys
from agents.runtime.providers.sdk import close_loop_clients
from agents.runtime.threads import get_thread_runtime
from inbox.dispatcher import dispatch_due_notifications
from mastra_site.sweeper import sweep_in_background
from schedules.declared import schedules_declare
from schedules.runner import schedules_tick

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    """A periodic job: ``run()`` once at start, then every ``interval()`` seconds while ``enabled()``."""

    name: str
    run: Callable[[], Awaitable[object]]
    interval: Callable[[], float]
    enabled: Callable[[], bool] = lambda: True


async def recover_threads() -> None:
    await get_thread_runtime().recover()


async def dispatch_notifications() -> None:
    await dispatch_due_notifications()


async def warn_missing_keys() -> None:
    for found in missing_keys(get_mastra().get_agents().values()):
        logger.warning("%s", found.message())


async def tick_schedules() -> None:
    await schedules_tick()


async def declare_schedules() -> None:
    declared = declared_schedules()
    if declared:
        await schedules_declare(get_mastra(), declared)


JOBS = (
    Job("thread-recovery", recover_threads, interval=lambda: settings.MASTRA_THREAD_LEASE_TTL_MS / 3000.0),
    Job("notification-dispatch", dispatch_notifications,
        interval=lambda: float(settings.MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S),
        enabled=lambda: bool(settings.MASTRA_NOTIFICATION_SCHEDULER)),
    Job("schedule-tick", tick_schedules, interval=lambda: float(settings.MASTRA_SCHEDULE_TICK_S),
        enabled=lambda: bool(settings.MASTRA_SCHEDULE_SCHEDULER)),
    Job("declared-schedules", declare_schedules, interval=lambda: 86_400.0),
    Job("channels", channels_work, interval=lambda: settings.MASTRA_CHANNELS_POLL_MS / 1000.0,
        enabled=lambda: bool(settings.MASTRA_CHANNELS_SCHEDULER) and channels_configured()),
    # the admin editor: code agents → agent definitions at start (and hourly, harmlessly)
    Job("editor-sync", sync_at_start, interval=lambda: 3600.0),
    Job("provider-keys", warn_missing_keys, interval=lambda: 86400.0),
    Job("retention-sweep", sweep_in_background, interval=lambda: float(settings.MASTRA_SWEEP_INTERVAL_S),
        enabled=lambda: bool(settings.MASTRA_SWEEP_SCHEDULER)),
)


class Workers:
    """The background jobs of one process, running on one event loop."""

    def __init__(self, jobs: tuple[Job, ...] | list[Job] = JOBS):
        self.jobs = list(jobs)
        self.tasks: dict[str, asyncio.Task] = {}

    @property
    def running(self) -> bool:
        return any(not task.done() for task in self.tasks.values())

    def start(self) -> None:
        """Start every enabled job on the running event loop (idempotent)."""
        loop = asyncio.get_running_loop()
        for job in self.jobs:
            if job.name in self.tasks and not self.tasks[job.name].done():
                continue
            if not job.enabled():
                logger.info("background job %s is disabled in this process", job.name)
                continue
            self.tasks[job.name] = loop.create_task(_repeat(job), name=f"mastra-{job.name}")

    async def stop(self) -> None:
        """Cancel the jobs and wait for them to end (a job's current pass is interrupted)."""
        tasks = list(self.tasks.values())
        self.tasks.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


async def _repeat(job: Job) -> None:
    while True:
        try:
            await job.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("background job %s failed; it runs again in %.1f s", job.name, job.interval())
        await asyncio.sleep(job.interval())


# -- the serving process -------------------------------------------------------------------------
_serving: Workers | None = None


def serving_workers() -> Workers:
    """The serving process's workers (one per process)."""
    global _serving
    if _serving is None:
        _serving = Workers()
    return _serving


async def stop_serving() -> None:
    """The serving process's shutdown: its workers stop, then the model SDK clients its event loop
    built close their connections (the loop outlives the last request)."""
    await serving_workers().stop()
    await close_loop_clients()


def start_with_server(application: Callable) -> Callable:
    """Return ``application`` wrapped so that this process's workers run while it serves.

    Under daphne the workers start when its reactor starts running, before it accepts a connection,
    and stop before the reactor shuts down. Under a server that sends ASGI lifespan events (uvicorn,
    hypercorn) they start on ``lifespan.startup`` and stop on ``lifespan.shutdown``.
    """
    _hook_daphne()
    return WorkersMiddleware(application)


def _hook_daphne() -> None:
    reactor = sys.modules.get("twisted.internet.reactor")
    if reactor is None or not hasattr(reactor, "callWhenRunning"):
        return  # not inside daphne (its server module installs the asyncio reactor before loading us)
    from twisted.internet.defer import Deferred

    def started() -> None:
        loop = asyncio.get_event_loop()  # daphne sets the reactor's asyncio loop as the current loop
        loop.call_soon(serving_workers().start)

    def stopping():
        return Deferred.fromFuture(asyncio.ensure_future(stop_serving()))

    reactor.callWhenRunning(started)
    reactor.addSystemEventTrigger("before", "shutdown", stopping)


class WorkersMiddleware:
    """ASGI wrapper: lifespan events start and stop the workers (connections pass through: an
    application driven without a server, as in tests, starts no background work)."""

    def __init__(self, app: Callable):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await self._lifespan(receive, send)
        return await self.app(scope, receive, send)

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                serving_workers().start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await stop_serving()
                await send({"type": "lifespan.shutdown.complete"})
                return
