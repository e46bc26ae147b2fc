"""``ScheduleStore`` (``agents.runtime.schedules.store``) on the ORM: the runtime's schedules API
calls these, each one hop to Django's worker thread (``agents.connections.async_twin``)."""

from __future__ import annotations

from agents.connections import async_twin
from agents.runtime.schedules import RunReceipt, Schedule, ScheduleFilter, Trigger, from_ms

from . import runner, selectors, services


class DjangoScheduleStore:
    async def create(self, *, schedule: Schedule) -> Schedule:
        return await async_twin(services.schedule_create)(schedule=schedule)

    async def get(self, *, schedule_id: str) -> Schedule | None:
        return await async_twin(selectors.schedule_get)(schedule_id=schedule_id)

    async def list(self, *, filter: ScheduleFilter) -> list[Schedule]:
        return await async_twin(selectors.schedules_list)(filter=filter)

    async def save(self, *, schedule_id: str, changes: dict) -> Schedule | None:
        return await async_twin(services.schedule_save)(schedule_id=schedule_id, changes=changes)

    async def delete(self, *, schedule_id: str) -> bool:
        return await async_twin(services.schedule_delete)(schedule_id=schedule_id)

    async def run_now(self, *, schedule_id: str, now_ms: int) -> RunReceipt | None:
        receipt = await async_twin(services.fire_claim_manual)(schedule_id=schedule_id, now=from_ms(now_ms))
        if receipt is not None:
            runner.dispatch_fire(receipt.trigger_id)
        return receipt

    async def list_triggers(self, *, schedule_id: str, limit: int | None, from_ms: int | None,
                            to_ms: int | None) -> list[Trigger]:
        return await async_twin(selectors.triggers_list)(schedule_id=schedule_id, limit=limit, from_ms_=from_ms,
                                                         to_ms_=to_ms)
