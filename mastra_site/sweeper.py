"""The retention sweeper: deletes the site's expired rows, table by table (docs/operations.md).

:data:`POLICIES` lists every app's retention policies (``agents.retention``, ``inbox.retention``,
``ledger.retention``);
a new table's policy goes into its app's ``retention`` module and this list, its days into
``MASTRA_RETENTION_DAYS``. :func:`sweep_run` runs them under one lock, so that one sweep runs at a
time across the processes: PostgreSQL's session advisory lock (``pg_try_advisory_lock``; a sweep
that finds it taken does nothing and says so), a process lock on SQLite (one process serves an
SQLite site). Each table is swept in batches of ``MASTRA_SWEEP_BATCH`` rows, one short transaction
each, ``MASTRA_SWEEP_PAUSE_MS`` apart.

Who runs it: Celery beat (``mastra_site.sweep_retention`` every ``MASTRA_SWEEP_INTERVAL_S``) with a
broker, the ``retention-sweep`` job of ``mastra_site.workers`` without one, ``manage.py sweep`` by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection, connections

from agents import retention as agents_retention
from agents.retention import RetentionPolicy, SweepOutcome, policy_sweep
from budgets import retention as budgets_retention
from inbox import retention as inbox_retention
from ledger import retention as ledger_retention

logger = logging.getLogger(__name__)

POLICIES: tuple[RetentionPolicy, ...] = (agents_retention.POLICIES + inbox_retention.POLICIES
                                          + budgets_retention.POLICIES
                                          + ledger_retention.POLICIES)

#: the advisory lock's key (the bytes ``mastraSw``)
SWEEP_LOCK_KEY = int.from_bytes(b"mastraSw", "big")

_process_lock = threading.Lock()


@dataclass(frozen=True)
class SweepReport:
    """A sweep's outcome per table, in :data:`POLICIES` order; ``skipped`` when another sweep held
    the lock (nothing was looked at)."""

    outcomes: tuple[SweepOutcome, ...]
    skipped: bool = False

    @property
    def rows(self) -> int:
        return sum(outcome.rows for outcome in self.outcomes)

    def to_dict(self) -> dict:
        return {"skipped": self.skipped, "rows": self.rows, "tables": [o.to_dict() for o in self.outcomes]}


@contextlib.contextmanager
def sweep_lock():
    """Yields True while this process holds the sweep lock, False when another one holds it (the
    lock is not waited for). On PostgreSQL a session advisory lock on this thread's connection."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [SWEEP_LOCK_KEY])
            held = bool(cursor.fetchone()[0])
        try:
            yield held
        finally:
            if held:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [SWEEP_LOCK_KEY])
        return
    held = _process_lock.acquire(blocking=False)
    try:
        yield held
    finally:
        if held:
            _process_lock.release()


def retention_days(policy: RetentionPolicy) -> int:
    """The days ``policy``'s rows are kept (``MASTRA_RETENTION_DAYS``; 0 keeps them forever)."""
    return int(settings.MASTRA_RETENTION_DAYS[policy.setting])


def sweep_run(*, dry_run: bool = False, now: datetime | None = None,
              policies: tuple[RetentionPolicy, ...] = POLICIES) -> SweepReport:
    """Delete every table's expired rows (a dry run counts them and deletes nothing). Must not run
    inside a transaction: each batch commits on its own."""
    with sweep_lock() as held:
        if not held:
            logger.info("retention sweep skipped: another sweep holds the lock")
            return SweepReport((), skipped=True)
        outcomes = tuple(
            policy_sweep(policy, days=retention_days(policy), batch=settings.MASTRA_SWEEP_BATCH,
                         pause_s=settings.MASTRA_SWEEP_PAUSE_MS / 1000.0,
                         duty=settings.MASTRA_SWEEP_DUTY_PERCENT / 100.0, dry_run=dry_run, now=now)
            for policy in policies)
    report = SweepReport(outcomes)
    if report.rows and not dry_run:
        logger.info("retention sweep deleted %d rows: %s", report.rows,
                    ", ".join(f"{o.table} {o.rows}" for o in outcomes if o.rows))
    return report


# -- the in-process scheduler's job ---------------------------------------------------------------
_executor: ThreadPoolExecutor | None = None


def _sweep_on_own_connection() -> SweepReport:
    try:
        return sweep_run()
    finally:
        connections.close_all()  # this thread's connections only; the next sweep opens its own


async def sweep_in_background() -> SweepReport:
    """:func:`sweep_run` on a thread of its own (with a database connection of its own), so that
    its batches and pauses never queue behind, or hold up, the requests' and runs' ORM calls."""
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mastra-sweep")
    return await asyncio.get_running_loop().run_in_executor(_executor, _sweep_on_own_connection)
