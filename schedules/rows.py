"""Rows ↔ the runtime's records (``agents.runtime.schedules.records``): the one place that knows
both shapes."""

from __future__ import annotations

from agents.runtime.schedules import Schedule as ScheduleRecord
from agents.runtime.schedules import Trigger, from_ms, to_ms

from .models import Schedule, ScheduleTrigger

#: record fields stored as they are (the rest: times, empty strings for None)
TEXT_FIELDS = ("agent_id", "workflow_id", "prompt", "thread_id", "resource_id", "timezone", "signal_type", "tag_name",
               "last_run_id", "last_outcome")
PLAIN_FIELDS = ("name", "cron", "status", "kind", "attributes", "provider_options", "if_active", "if_idle",
                "input_data", "initial_state", "request_context", "metadata", "misfire_policy", "misfire_cap")
TIME_FIELDS = ("next_fire_at", "last_fire_at", "created_at", "updated_at")


def schedule_record(row: Schedule) -> ScheduleRecord:
    return ScheduleRecord(
        id=row.id, **{name: getattr(row, name) for name in PLAIN_FIELDS},
        **{name: getattr(row, name) or None for name in TEXT_FIELDS},
        **{name: to_ms(getattr(row, name)) for name in TIME_FIELDS}, created_by=row.created_by_id)


def row_values(changes: dict) -> dict:
    """Record fields (snake_case, ms times) → model field values."""
    out = {}
    for name, value in changes.items():
        if name in TEXT_FIELDS:
            out[name] = value or ""
        elif name in TIME_FIELDS:
            out[name] = from_ms(value)
        elif name == "created_by":
            out["created_by_id"] = value
        else:
            out[name] = value
    return out


def schedule_row(record: ScheduleRecord) -> Schedule:
    fields = {name: getattr(record, name) for name in (*TEXT_FIELDS, *PLAIN_FIELDS, *TIME_FIELDS, "created_by")}
    return Schedule(id=record.id, **row_values(fields))


def trigger_record(row: ScheduleTrigger) -> Trigger:
    return Trigger(id=str(row.id), schedule_id=row.schedule_id, claim_id=row.claim_id,
                   scheduled_fire_at=to_ms(row.scheduled_fire_at), actual_fire_at=to_ms(row.actual_fire_at),
                   outcome=row.outcome, trigger_kind=row.trigger_kind, run_id=row.run_id or None,
                   error=row.error or None, metadata=row.metadata or {}, finished_at=to_ms(row.finished_at))
