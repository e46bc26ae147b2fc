"""Writes of the schedules app (each one transaction; keyword-only).

The claim of fires (:func:`fires_claim_due`) is what makes a fire run once however many schedulers
race: under a row lock (PostgreSQL: ``FOR UPDATE SKIP LOCKED``, so racing schedulers share the due
schedules; SQLite: the write transaction), a compare-and-set moves each schedule's
``next_fire_at`` past its due fires and inserts one trigger row per fire, unique per (schedule,
scheduled fire time). A fire then runs only once its row moved from ``claimed`` to ``running`` for
one runner (:func:`fire_start`), and it ends with a compare-and-set on that runner
(:func:`fire_finish`). A runner renews its lease while the fire runs; a fire whose runner stopped
renewing (its process died) is failed by :func:`fires_sweep`, never run again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import Q

from agents.runtime.schedules import (FireResult, RunReceipt, Schedule as ScheduleRecord, ScheduleError, Trigger,
                                      plan_due_fires, to_ms)

from .models import Schedule, ScheduleTrigger
from .rows import row_values, schedule_record, schedule_row, trigger_record

logger = logging.getLogger(__name__)

IN_FLIGHT = ("claimed", "running")


def claim_id_for(schedule_id: str, at: datetime, *, manual: bool = False) -> str:
    """Mastra's claim ids: ``sched_<schedule>_<ms>`` for a cron fire, ``manual_<schedule>_<ms>``."""
    return f"{'manual' if manual else 'sched'}_{schedule_id}_{to_ms(at)}"


# -- schedules ---------------------------------------------------------------------------------
def schedule_create(*, schedule: ScheduleRecord) -> ScheduleRecord:
    """Insert ``schedule``; ``schedule_exists`` (409) when its id is taken."""
    exists = ScheduleError(f'schedules.create: a schedule with id "{schedule.id}" already exists. Use update() to '
                           "modify it or choose a different id.", code="schedule_exists")
    if Schedule.objects.filter(pk=schedule.id).exists():
        raise exists
    try:
        with transaction.atomic():
            row = schedule_row(schedule)
            row.save(force_insert=True)
    except IntegrityError:
        raise exists from None
    return schedule_record(row)


def schedule_save(*, schedule_id: str, changes: dict) -> ScheduleRecord | None:
    """Apply ``changes`` (record fields); None when the schedule is gone."""
    with transaction.atomic():
        if not Schedule.objects.filter(pk=schedule_id).update(**row_values(changes)):
            return None
        return schedule_record(Schedule.objects.get(pk=schedule_id))


def schedule_delete(*, schedule_id: str) -> bool:
    deleted, _ = Schedule.objects.filter(pk=schedule_id).delete()
    return deleted > 0


# -- claiming fires ------------------------------------------------------------------------------
@dataclass
class Claim:
    """What one claim pass did: ``to_run`` the ids of the trigger rows claimed to run (oldest fire
    first), ``skipped`` the fires recorded as skipped, ``schedules`` the schedules it advanced."""

    to_run: list[str] = field(default_factory=list)
    skipped: int = 0
    schedules: int = 0
    exhausted: list[str] = field(default_factory=list)


def _plan_rows(row: Schedule, *, now: datetime, grace: timedelta, claim: Claim) -> tuple[list[ScheduleTrigger], dict]:
    """The trigger rows and the schedule's new values for its due fires at ``now``."""
    plan = plan_due_fires(cron=row.cron, timezone=row.timezone or None, next_fire_at=row.next_fire_at, now=now,
                          policy=row.misfire_policy, cap=row.misfire_cap, grace=grace)
    triggers, values, last_run = [], {"updated_at": now}, None
    for fire in plan.fires:
        trigger = ScheduleTrigger(schedule_id=row.id, claim_id=claim_id_for(row.id, fire.at), scheduled_fire_at=fire.at,
                                  actual_fire_at=now, trigger_kind="schedule-fire", metadata=fire.metadata)
        if fire.action == "run":
            last_run = trigger
        else:
            trigger.outcome, trigger.error, trigger.finished_at = "skipped", fire.reason, now
            claim.skipped += 1
        triggers.append(trigger)
    if last_run is not None:
        values.update(last_fire_at=now, last_run_id=last_run.claim_id)
    if plan.next_fire_at is None:  # the expression has no more fire times (a year field): nothing to claim
        values["status"] = "paused"
        claim.exhausted.append(row.id)
    else:
        values["next_fire_at"] = plan.next_fire_at
    return triggers, values


def fires_claim_due(*, now: datetime, grace: timedelta, limit: int = 100) -> Claim:
    """Claim the due fires of up to ``limit`` active schedules whose next fire time is at or before
    ``now`` (earliest first): each schedule's due fires become trigger rows (``claimed`` to run,
    ``skipped`` per its misfire policy) and its ``next_fire_at`` moves past them, in one
    transaction. Schedules another scheduler holds are left to it (PostgreSQL: skipped, not waited
    for). Returns what was claimed; the caller runs ``to_run`` (:func:`fire_start`)."""
    claim = Claim()
    try:
        with transaction.atomic():
            _claim_batch(now=now, grace=grace, limit=limit, claim=claim)
    except IntegrityError:
        # another claimer inserted one of these fires (it cannot while the rows are locked: the
        # unique row is the last guard): claim schedule by schedule, leaving the conflicting ones
        logger.warning("a schedule claim met an existing fire row; claiming schedule by schedule")
        claim = Claim()
        for schedule_id in list(Schedule.objects.filter(status="active", next_fire_at__lte=now)
                                .order_by("next_fire_at").values_list("id", flat=True)[:limit]):
            try:
                with transaction.atomic():
                    _claim_batch(now=now, grace=grace, limit=1, claim=claim, only=schedule_id)
            except IntegrityError:
                logger.warning("schedule %s: a fire was claimed elsewhere; left to that claim", schedule_id)
    return claim


def _claim_batch(*, now: datetime, grace: timedelta, limit: int, claim: Claim, only: str | None = None) -> None:
    due = Schedule.objects.filter(status="active", next_fire_at__lte=now).order_by("next_fire_at")
    if only is not None:
        due = due.filter(pk=only)
    if connection.features.has_select_for_update_skip_locked:
        due = due.select_for_update(skip_locked=True)
    rows = list(due[:limit])
    if not rows:
        return
    triggers: list[ScheduleTrigger] = []
    for row in rows:
        planned, values = _plan_rows(row, now=now, grace=grace, claim=claim)
        # compare-and-set: the schedule is still where this claimer read it
        if not Schedule.objects.filter(pk=row.id, status="active", next_fire_at=row.next_fire_at).update(**values):
            continue
        triggers += planned
        claim.schedules += 1
    ScheduleTrigger.objects.bulk_create(triggers)
    claim.to_run += [str(t.id) for t in sorted(triggers, key=lambda t: t.scheduled_fire_at) if t.outcome == "claimed"]


def fire_claim_manual(*, schedule_id: str, now: datetime) -> RunReceipt | None:
    """A ``manual`` fire of the schedule at ``now`` (``claimed``); None when the schedule is gone."""
    with transaction.atomic():
        if not Schedule.objects.filter(pk=schedule_id).exists():
            return None
        trigger = ScheduleTrigger.objects.create(schedule_id=schedule_id, trigger_kind="manual",
                                                 claim_id=claim_id_for(schedule_id, now, manual=True),
                                                 scheduled_fire_at=now, actual_fire_at=now)
    return RunReceipt(schedule_id=schedule_id, claim_id=trigger.claim_id, scheduled_fire_at=to_ms(now),
                      trigger_id=str(trigger.id))


# -- running fires -------------------------------------------------------------------------------
def fire_start(*, trigger_id: str, runner: str, now: datetime, lease: timedelta) -> tuple[ScheduleRecord, Trigger] | None:
    """Take the claimed fire ``trigger_id`` for ``runner`` (``claimed`` → ``running``, leased until
    ``now + lease``): the schedule and the trigger to run, or None when another runner took it, it
    already ran, or its schedule is gone. A fire is started at most once."""
    with transaction.atomic():
        taken = ScheduleTrigger.objects.filter(pk=trigger_id, outcome="claimed").update(
            outcome="running", runner=runner, started_at=now, lease_until=now + lease)
        if not taken:
            return None
        trigger = ScheduleTrigger.objects.select_related("schedule").get(pk=trigger_id)
        return schedule_record(trigger.schedule), trigger_record(trigger)


def fire_renew(*, trigger_id: str, runner: str, now: datetime, lease: timedelta) -> bool:
    """Extend ``runner``'s lease on its running fire; False when it lost it (the sweep failed it)."""
    return bool(ScheduleTrigger.objects.filter(pk=trigger_id, outcome="running", runner=runner).update(
        lease_until=now + lease))


def fire_finish(*, trigger_id: str, runner: str, now: datetime, result: FireResult) -> bool:
    """Write the end of ``runner``'s fire (compare-and-set on the runner) and the schedule's last
    outcome; pause the schedule when the result asks (its agent or thread is gone). False when the
    fire was no longer this runner's (the sweep failed it meanwhile)."""
    with transaction.atomic():
        ended = ScheduleTrigger.objects.filter(pk=trigger_id, outcome="running", runner=runner).update(
            outcome=result.outcome, run_id=result.run_id or "", error=result.reason or "", finished_at=now,
            lease_until=None)
        if not ended:
            return False
        schedule_id = ScheduleTrigger.objects.filter(pk=trigger_id).values_list("schedule_id", flat=True).first()
        values = {"last_outcome": result.outcome}
        if result.pause_schedule:
            values.update(status="paused", updated_at=now)
        Schedule.objects.filter(pk=schedule_id).update(**values)
        return True


@dataclass
class Sweep:
    failed: int = 0
    redispatch: list[str] = field(default_factory=list)


def fires_sweep(*, now: datetime, dispatch_timeout: timedelta, limit: int = 1000) -> Sweep:
    """Settle fires whose runner is gone: a ``running`` fire whose lease expired ends ``failed`` with
    the reason (it may have done part of its work: it is not run again); a ``claimed`` fire that no
    runner started within ``dispatch_timeout`` (its claimer stopped before running it, or its task
    was lost) is returned to be dispatched again (it never ran: :func:`fire_start` still lets one
    runner take it), and so is every ``claimed`` manual fire."""
    sweep = Sweep()
    stale = list(ScheduleTrigger.objects.filter(outcome="running", lease_until__lt=now)
                 .values_list("id", "lease_until", "runner")[:limit])
    for trigger_id, lease_until, runner in stale:
        reason = (f"the process running this fire ({runner}) stopped before it finished: its lease expired at "
                  f"{lease_until.isoformat()}; the fire is not run again")
        with transaction.atomic():
            if ScheduleTrigger.objects.filter(pk=trigger_id, outcome="running", lease_until=lease_until).update(
                    outcome="failed", error=reason, finished_at=now, lease_until=None):
                sweep.failed += 1
                Schedule.objects.filter(triggers__pk=trigger_id).update(last_outcome="failed")
    # a manual fire is run by the tick that sees it (its caller may have had no event loop to run
    # it on: the admin); a cron fire once its claimer had its chance
    sweep.redispatch = [str(i) for i in ScheduleTrigger.objects.filter(
        Q(trigger_kind="manual") | Q(actual_fire_at__lt=now - dispatch_timeout), outcome="claimed")
        .order_by("actual_fire_at").values_list("id", flat=True)[:limit]]
    return sweep


__all__ = ["Claim", "IN_FLIGHT", "Sweep", "claim_id_for", "fire_claim_manual", "fire_finish", "fire_renew",
           "fire_start", "fires_claim_due", "fires_sweep", "schedule_create", "schedule_delete", "schedule_save"]
