"""The schedule store protocol (implemented on the ORM by the ``schedules`` app) and the process's
store. Every method is required; the rules (validation, next fire times, misfire policy) are the
runtime's pure functions, the store locks, loads and persists."""

from __future__ import annotations

from typing import Protocol

from ..errors import AgentConfigError
from .records import RunReceipt, Schedule, ScheduleFilter, Trigger


class ScheduleStore(Protocol):
    async def create(self, *, schedule: Schedule) -> Schedule:
        """Insert ``schedule``; ``ScheduleError`` ``schedule_exists`` (409) when its id is taken."""

    async def get(self, *, schedule_id: str) -> Schedule | None: ...

    async def list(self, *, filter: ScheduleFilter) -> list[Schedule]:
        """Schedules matching ``filter``, oldest first."""

    async def save(self, *, schedule_id: str, changes: dict) -> Schedule | None:
        """Apply ``changes`` (snake_case fields); None when the schedule is gone."""

    async def delete(self, *, schedule_id: str) -> bool: ...

    async def run_now(self, *, schedule_id: str, now_ms: int) -> RunReceipt | None:
        """Claim a manual fire (a ``manual`` trigger row, ``claimed``) and hand it to whoever runs
        fires in this deployment (this process, or a Celery worker); None when the schedule is gone."""

    async def list_triggers(self, *, schedule_id: str, limit: int | None, from_ms: int | None,
                            to_ms: int | None) -> list[Trigger]:
        """Fires of the schedule, newest ``actual_fire_at`` first."""


_store: ScheduleStore | None = None


def set_schedule_store(store: ScheduleStore | None) -> None:
    """Install the process-wide schedule store (the ``schedules`` app does it at start-up)."""
    global _store
    _store = store


def get_schedule_store() -> ScheduleStore:
    if _store is None:
        raise AgentConfigError("schedules", "mastra.schedules needs a schedule store: run inside the Django site "
                                            "(schedules app installed) or call set_schedule_store()",
                               code="schedules_unavailable")
    return _store
