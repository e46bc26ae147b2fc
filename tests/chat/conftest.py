"""The chat tests run against ``tests.chat.site`` (a fresh Mastra per test)."""

from __future__ import annotations

import pytest

from agents.registry import get_mastra
from agents.runtime import Mastra
from tests.chat import site


@pytest.fixture
def chat_site(settings, monkeypatch):
    """Point the site at ``tests.chat.site``; yields a function that replaces its agents
    (``use(model=...)``) and returns the new Mastra."""
    from django.core.cache import cache

    settings.MASTRA = "tests.chat.site:mastra"
    cache.clear()  # the send rate's counters (agents.api.throttling)

    def use(**kwargs) -> Mastra:
        monkeypatch.setattr(site, "mastra", Mastra(agents=site.build_agents(**kwargs)))
        get_mastra.cache_clear()
        return site.mastra

    use()
    site.DELETED.clear()
    yield use
    get_mastra.cache_clear()
