"""The chat tests run against ``tests.chat.site`` (a fresh Mastra per test)."""

from __future__ import annotations

import pytest

from agents.registry import get_mastra
from agents.runtime import Mastra
from tests.chat import site
from tests.rates import clear_rate_counters


@pytest.fixture(autouse=True)
async def _drain():
    """No thread run outlives its test."""
    yield
    from tests.agents.thread_harness import settle

    await settle()


@pytest.fixture
async def alice():
    from asgiref.sync import sync_to_async
    from django.contrib.auth import get_user_model

    return await sync_to_async(get_user_model().objects.create_user)("alice", password="x")


@pytest.fixture
def chat_site(settings, monkeypatch):
    """Point the site at ``tests.chat.site``; yields a function that replaces its agents
    (``use(model=...)``) and returns the new Mastra."""
    settings.MASTRA = "tests.chat.site:mastra"
    clear_rate_counters()  # the send rate's counters (agents.api.throttling)

    def use(**kwargs) -> Mastra:
        monkeypatch.setattr(site, "mastra", Mastra(agents=site.build_agents(**kwargs)))
        get_mastra.cache_clear()
        return site.mastra

    use()
    site.DELETED.clear()
    yield use
    get_mastra.cache_clear()
