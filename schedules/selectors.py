"""Reads of the schedules app, and the isolation rule for schedules (DESIGN §2.6): a user sees and
changes the schedules of their own resource (a threaded schedule's ``resource_id``) and the
threadless ones they created; staff see all."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q, QuerySet

from agents.runtime.schedules import Schedule as ScheduleRecord
from agents.runtime.schedules import ScheduleFilter, Trigger, from_ms

from .models import Schedule, ScheduleTrigger
from .rows import schedule_record, trigger_record


def visible_to(*, resource_id: str, user_id: int | None, is_staff: bool) -> Q:
    """The schedules a caller may see and change (an empty ``Q`` for staff)."""
    if is_staff:
        return Q()
    return Q(thread_id__gt="", resource_id=resource_id) | Q(thread_id="", created_by_id=user_id)


def schedule_get(*, schedule_id: str, visible: Q | None = None) -> ScheduleRecord | None:
    row = Schedule.objects.filter(visible or Q(), pk=schedule_id).first()
    return None if row is None else schedule_record(row)


def schedules_matching(filter: ScheduleFilter, visible: Q | None = None) -> QuerySet:
    rows = Schedule.objects.filter(visible or Q())
    if filter.agent_id:
        rows = rows.filter(kind="agent", agent_id=filter.agent_id)
    if filter.workflow_id:
        rows = rows.filter(kind="workflow", workflow_id=filter.workflow_id)
    if filter.status:
        rows = rows.filter(status=filter.status)
    if filter.resource_id is not None:
        rows = rows.filter(resource_id=filter.resource_id)
    if filter.thread_id is not None:
        rows = rows.filter(kind="agent", thread_id=filter.thread_id)
    if filter.name is not None:
        rows = rows.filter(kind="agent", name=filter.name)
    return rows.order_by("created_at", "id")


def schedules_list(*, filter: ScheduleFilter, visible: Q | None = None) -> list[ScheduleRecord]:
    return [schedule_record(row) for row in schedules_matching(filter, visible)]


def triggers_list(*, schedule_id: str, limit: int | None = None, from_ms_: int | None = None,
                  to_ms_: int | None = None) -> list[Trigger]:
    """The schedule's fires, newest first (``actual_fire_at``, then ``scheduled_fire_at``)."""
    rows = ScheduleTrigger.objects.filter(schedule_id=schedule_id)
    if from_ms_ is not None:
        rows = rows.filter(actual_fire_at__gte=from_ms(from_ms_))
    if to_ms_ is not None:
        rows = rows.filter(actual_fire_at__lte=from_ms(to_ms_))
    rows = rows.order_by("-actual_fire_at", "-scheduled_fire_at")
    return [trigger_record(row) for row in (rows[:limit] if limit else rows)]


def next_fires_overview(*, now: datetime, limit: int = 50) -> list[ScheduleRecord]:
    """The active schedules that fire next (the admin's dashboard)."""
    return [schedule_record(row) for row in Schedule.objects.filter(status="active", next_fire_at__gte=now)
            .order_by("next_fire_at")[:limit]]
