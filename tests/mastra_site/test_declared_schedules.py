"""The demo site's declared schedules: the daily digest is created at start, paused, and never
overwritten afterwards."""

from __future__ import annotations

import pytest

from agents.registry import get_mastra
from mastra_site.mastra import DECLARED_SCHEDULES
from mastra_site.workers import JOBS, declare_schedules

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_the_daily_digest_is_created_paused_once(settings):
    settings.MASTRA = "mastra_site.mastra:mastra"
    get_mastra.cache_clear()
    assert "declared-schedules" in [job.name for job in JOBS]
    await declare_schedules()
    digest = await get_mastra().schedules.get("daily-digest")
    assert (digest.id, digest.agent_id, digest.cron, digest.status) == ("agent_daily-digest", "ops-assistant",
                                                                        "0 9 * * 1-5", "paused")
    await get_mastra().schedules.resume(digest.id)
    await declare_schedules()  # an operator's change stays
    assert (await get_mastra().schedules.get("daily-digest")).status == "active"
    assert len(await get_mastra().schedules.list()) == len(DECLARED_SCHEDULES)


async def test_a_site_with_its_own_module_gets_only_the_schedules_that_module_declares(settings, caplog):
    settings.MASTRA = "tests.schedules.schedule_site:mastra"  # a Mastra module that declares none
    get_mastra.cache_clear()
    try:
        await declare_schedules()
        assert await get_mastra().schedules.list() == []
        assert "ops-assistant" not in caplog.text
    finally:
        get_mastra.cache_clear()
