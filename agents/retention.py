"""Retention: which rows of a table expire, and how one table is swept (docs/operations.md).

A :class:`RetentionPolicy` names a table, the ``MASTRA_RETENTION_DAYS`` key that sets how long its
rows are kept, the rows that may expire and those never deleted whatever their age.
:func:`policy_sweep` deletes a table's expired rows in batches of a few hundred, one short
transaction per batch, so that the live writes of the same tables wait for at most one batch.
``mastra_site.sweeper`` lists the site's policies (these, the inbox's) and runs them under one lock.

The agents app's tables:

- ``thread_events``: the thread's event log, past its age; events of a thread whose run is active
  (its lease has an owner) or of a run still running or suspended are kept. The thread's lease
  records the highest seq deleted (``swept_seq``): a subscriber resuming from before it gets the
  thread's snapshot first (``agents.threads.events.events_read``), as past the per-thread window;
- ``thread_inputs``: consumed and cancelled inputs (pending and failed ones are kept) of threads
  with no active run;
- ``runs``: finished runs (completed, failed, aborted), and the trace spans and scores of any run
  that is not running or suspended.

Tool approvals have no policy: their decisions are the audit trail, kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import models, transaction
from django.db.models import Case, Exists, F, Max, OuterRef, Q, Value, When
from django.db.models.functions import Greatest
from django.utils import timezone

from agents.models import Run, ThreadEvent, ThreadInput, ThreadLease
from agents.observability import Score, TraceSpan

#: runs whose rows (events, spans, scores) are never swept
ACTIVE_RUN_STATUSES = (Run.Status.RUNNING, Run.Status.SUSPENDED)


@dataclass(frozen=True)
class RetentionPolicy:
    """How one table's rows expire.

    ``expires`` is the rows that may expire at all (None: every row), ``keep`` those never deleted
    whatever their age (None: none); a row expires once ``age_field`` is older than the setting's
    days. ``by_pk``: the table's integer primary key grows with ``age_field``, so the sweep walks the
    key in order and stops at the first row young enough to keep (no index on ``age_field``
    needed; a row written out of order waits for the next sweep past it). ``before_delete(rows)``
    runs in each batch's transaction before the batch's expired rows are deleted."""

    setting: str
    model: type[models.Model]
    age_field: str
    expires: Callable[[], Q] | None = None
    keep: Callable[[], Q] | None = None
    by_pk: bool = False
    before_delete: Callable[[models.QuerySet], None] | None = None

    @property
    def table(self) -> str:
        return self.model._meta.label

    def expired(self, cutoff: datetime) -> models.QuerySet:
        """Every row of the table that is expired at ``cutoff``."""
        rows = self.model._default_manager.filter(**{f"{self.age_field}__lt": cutoff})
        if self.expires is not None:
            rows = rows.filter(self.expires())
        if self.keep is not None:
            rows = rows.exclude(self.keep())
        return rows


@dataclass(frozen=True)
class SweepOutcome:
    """One table's sweep: ``rows`` deleted (or, in a dry run, that would be), ``days`` its setting."""

    table: str
    setting: str
    days: int
    rows: int
    dry_run: bool

    def to_dict(self) -> dict:
        return {"table": self.table, "setting": self.setting, "days": self.days, "rows": self.rows,
                "dryRun": self.dry_run}


def policy_sweep(policy: RetentionPolicy, *, days: int, batch: int, pause_s: float = 0.0, duty: float = 1.0,
                 dry_run: bool = False, now: datetime | None = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> SweepOutcome:
    """Delete ``policy``'s expired rows, ``batch`` at a time, one transaction per batch. After each
    batch the sweep sleeps ``pause_s`` at least, and long enough that it works at most ``duty`` (a
    share, 0 to 1) of its time: a batch slowed down by a busy database makes the next wait longer,
    so the sweep yields to live writes when they need the database most. ``days`` 0 keeps every
    row. A dry run counts the rows it would delete (for a ``by_pk`` table: at most that many, the
    sweep stopping at the first young row)."""
    if days <= 0:
        return SweepOutcome(policy.table, policy.setting, days, 0, dry_run)
    cutoff = (now or timezone.now()) - timedelta(days=days)
    if dry_run:
        return SweepOutcome(policy.table, policy.setting, days, policy.expired(cutoff).count(), True)
    batches = _batches_by_pk(policy, cutoff, batch) if policy.by_pk else _batches(policy, cutoff, batch)
    deleted = 0
    resting = (1.0 - duty) / duty if 0 < duty < 1 else 0.0
    started = clock()
    for pks in batches:
        with transaction.atomic():
            # which of the batch expired is decided once, in the transaction; the statements after
            # it work on plain keys (a thread that became active meanwhile writes only new rows)
            expired = list(policy.expired(cutoff).filter(pk__in=pks).values_list("pk", flat=True))
            rows = policy.model._default_manager.filter(pk__in=expired)
            if expired and policy.before_delete is not None:
                policy.before_delete(rows)
            count, _ = rows.delete() if expired else (0, {})
        deleted += count
        pause = max(pause_s, (clock() - started) * resting)
        if pause:
            sleep(pause)
        started = clock()
    return SweepOutcome(policy.table, policy.setting, days, deleted, False)


def _batches(policy: RetentionPolicy, cutoff: datetime, batch: int):
    """Primary keys of expired rows, ``batch`` at a time, until none is left (or a batch deleted
    nothing: its rows changed meanwhile, the next sweep looks again)."""
    seen: set = set()
    while True:
        pks = list(policy.expired(cutoff).order_by("pk").values_list("pk", flat=True)[:batch])
        if not pks or seen.issuperset(pks):
            return
        seen.update(pks)
        yield pks


def _batches_by_pk(policy: RetentionPolicy, cutoff: datetime, batch: int):
    """Primary keys in order, ``batch`` at a time, up to the first row whose age is under ``cutoff``
    (the keys of the rows before it; :func:`policy_sweep` deletes those of them that expired)."""
    manager = policy.model._default_manager
    after = None
    while True:
        rows = manager.order_by("pk")
        if after is not None:
            rows = rows.filter(pk__gt=after)
        page = list(rows.values_list("pk", policy.age_field)[:batch])
        old = []
        for pk, at in page:
            if at is not None and at >= cutoff:
                if old:
                    yield old
                return
            old.append(pk)
        if old:
            yield old
        if len(page) < batch:
            return
        after = page[-1][0]


# -- the agents app's policies --------------------------------------------------------------------
def _thread_active() -> Exists:
    return Exists(ThreadLease.objects.filter(thread_id=OuterRef("thread_id"), owner_run_id__isnull=False))


def _run_active() -> Exists:
    return Exists(Run.objects.filter(id=OuterRef("run_id"), status__in=ACTIVE_RUN_STATUSES))


def events_mark_swept(rows: models.QuerySet) -> None:
    """Raise each thread's ``swept_seq`` to the highest seq of ``rows`` about to be deleted. The
    lease rows are locked before the events, in the order the event writers lock them."""
    highest = dict(rows.order_by().values("thread_id").annotate(top=Max("seq")).values_list("thread_id", "top"))
    if not highest:
        return
    keys = sorted(highest)
    ThreadLease.objects.filter(thread_id__in=keys).update(swept_seq=Greatest(F("swept_seq"), Case(
        *[When(thread_id=key, then=Value(highest[key])) for key in keys], output_field=models.BigIntegerField())))


THREAD_EVENTS = RetentionPolicy(
    "thread_events", ThreadEvent, "created_at", keep=lambda: _thread_active() | _run_active(), by_pk=True,
    before_delete=events_mark_swept)
THREAD_INPUTS = RetentionPolicy(
    "thread_inputs", ThreadInput, "created_at",
    expires=lambda: Q(status__in=(ThreadInput.Status.CONSUMED, ThreadInput.Status.CANCELLED)),
    keep=_thread_active, by_pk=True)
RUNS = RetentionPolicy("runs", Run, "finished_at", keep=lambda: Q(status__in=ACTIVE_RUN_STATUSES))
TRACE_SPANS = RetentionPolicy("runs", TraceSpan, "started_at", keep=_run_active, by_pk=True)
SCORES = RetentionPolicy("runs", Score, "created_at", keep=_run_active, by_pk=True)

POLICIES = (THREAD_EVENTS, THREAD_INPUTS, RUNS, TRACE_SPANS, SCORES)
