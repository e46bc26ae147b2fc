"""``mastra.schedules``: Mastra's schedules API in Python (snake_case; every method is async and
returns after the change is stored).

``create`` / ``get`` / ``list`` / ``update`` / ``pause`` / ``resume`` / ``delete`` return
:class:`Schedule` objects (``to_dict()`` is Mastra's flat JSON view); ``run`` fires once now without
changing the cadence and returns a :class:`RunReceipt`; ``list_triggers`` returns the fire history,
newest first. Ids are looked up as given, then as ``agent_<slug>`` (Mastra's lookup)."""

from __future__ import annotations

import time
from typing import Any, Callable

from ..errors import MastraError
from .definition import AGENT_SCHEDULE_PREFIX, ScheduleError, ScheduleNotFound, canonical_id, schedule_build, \
    schedule_changes
from .records import RunReceipt, Schedule, ScheduleFilter, Trigger
from .store import ScheduleStore, get_schedule_store

MAX_TRIGGERS = 1000


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class Schedules:
    """The schedules of one ``Mastra`` instance. ``clock`` returns the current time in ms (tests
    inject one); ``store`` defaults to the process's (:func:`get_schedule_store`)."""

    def __init__(self, mastra: Any, *, store: ScheduleStore | None = None, clock: Callable[[], int] = wall_clock_ms):
        self.mastra = mastra
        self._store = store
        self.clock = clock

    @property
    def store(self) -> ScheduleStore:
        return self._store if self._store is not None else get_schedule_store()

    async def _load(self, schedule_id: str) -> Schedule | None:
        if not isinstance(schedule_id, str):
            raise ScheduleError("schedule id must be a string", code="invalid_schedule_id")
        trimmed = schedule_id.strip()
        found = await self.store.get(schedule_id=trimmed) if trimmed else None
        if found is not None:
            return found
        canonical = canonical_id(trimmed, AGENT_SCHEDULE_PREFIX)
        if not canonical or canonical == trimmed:
            return None
        return await self.store.get(schedule_id=canonical)

    async def _existing(self, schedule_id: str) -> Schedule:
        found = await self._load(schedule_id)
        if found is None:
            raise ScheduleNotFound(f'Schedule "{schedule_id}" not found.')
        return found

    async def create(self, *, agent_id: str | None = None, cron: str | None = None, prompt: str | None = None,
                     workflow_id: str | None = None, created_by: int | None = None, **fields: Any) -> Schedule:
        """Create a schedule (the keyword arguments of Mastra's ``CreateScheduleInput`` in snake_case,
        plus ``misfire_policy`` and ``misfire_cap``). The agent (or workflow) must be registered
        (``agent_not_found``); a bad cron or time zone is ``invalid_cron`` / ``invalid_timezone``."""
        schedule = schedule_build({"agent_id": agent_id, "cron": cron, "prompt": prompt, "workflow_id": workflow_id,
                                   **fields}, now_ms=self.clock(), created_by=created_by)
        if schedule.kind == "agent":
            self.mastra.get_agent(schedule.agent_id)
        else:
            self.mastra.get_workflow(schedule.workflow_id)
        return await self.store.create(schedule=schedule)

    async def get(self, schedule_id: str) -> Schedule | None:
        return await self._load(schedule_id)

    async def list(self, *, agent_id: str | None = None, workflow_id: str | None = None, status: str | None = None,
                   thread_id: str | None = None, resource_id: str | None = None,
                   name: str | None = None) -> list[Schedule]:
        return await self.store.list(filter=ScheduleFilter(agent_id=agent_id, workflow_id=workflow_id, status=status,
                                                           thread_id=thread_id, resource_id=resource_id, name=name))

    async def update(self, schedule_id: str, **patch: Any) -> Schedule:
        """Change the given fields; the target (agent or workflow; the thread and resource of an agent
        schedule) is fixed (``schedule_target_fixed``). A new cron or time zone, or a move from
        ``paused`` to ``active``, recomputes the next fire time from now."""
        existing = await self._existing(schedule_id)
        changes = schedule_changes(existing, patch, now_ms=self.clock())
        return await self._save(existing, changes)

    async def _save(self, existing: Schedule, changes: dict) -> Schedule:
        saved = await self.store.save(schedule_id=existing.id, changes=changes)
        if saved is None:
            raise ScheduleNotFound(f'Schedule "{existing.id}" not found.')
        return saved

    async def pause(self, schedule_id: str) -> Schedule:
        """Pause (idempotent): no fire is claimed while paused."""
        existing = await self._existing(schedule_id)
        if existing.status == "paused":
            return existing
        return await self._save(existing, {"status": "paused", "updated_at": self.clock()})

    async def resume(self, schedule_id: str) -> Schedule:
        """Resume (idempotent); the next fire time is computed from now: a long pause fires no backlog."""
        existing = await self._existing(schedule_id)
        if existing.status == "active":
            return existing
        return await self._save(existing, schedule_changes(existing, {"status": "active"}, now_ms=self.clock()))

    async def run(self, schedule_id: str) -> RunReceipt:
        """Fire once now (``manual`` trigger), whatever the status; the cadence is unchanged."""
        existing = await self._existing(schedule_id)
        receipt = await self.store.run_now(schedule_id=existing.id, now_ms=self.clock())
        if receipt is None:
            raise ScheduleNotFound(f'Schedule "{schedule_id}" not found.')
        return receipt

    async def delete(self, schedule_id: str) -> None:
        """Delete the schedule and its history (nothing when it does not exist, as Mastra)."""
        existing = await self._load(schedule_id)
        if existing is not None:
            await self.store.delete(schedule_id=existing.id)

    async def list_triggers(self, schedule_id: str, *, limit: int | None = None, from_actual_fire_at: int | None = None,
                            to_actual_fire_at: int | None = None) -> list[Trigger]:
        """The schedule's fires, newest first (``limit`` at most 1000)."""
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_TRIGGERS):
            raise ScheduleError(f"limit must be a whole number from 1 to {MAX_TRIGGERS}", code="invalid_field")
        existing = await self._load(schedule_id)
        return await self.store.list_triggers(schedule_id=existing.id if existing else schedule_id.strip(),
                                              limit=limit, from_ms=from_actual_fire_at, to_ms=to_actual_fire_at)


__all__ = ["MastraError", "Schedules"]
