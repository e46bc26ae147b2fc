"""Fixtures of the schedules tests: the test site (``schedule_site``) as ``settings.MASTRA``, fires
run in process, and an injected clock."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from agents.registry import get_mastra
from agents.runtime.schedules import Schedules, to_ms

from . import schedule_site


class Clock:
    """A settable clock: ``clock.now`` (aware UTC); ``clock.ms()`` for ``Schedules``."""

    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def ms(self) -> int:
        return to_ms(self.now)


@pytest.fixture(autouse=True)
def site(settings):
    settings.MASTRA = "tests.schedules.schedule_site:mastra"
    settings.MASTRA_SCHEDULE_SCHEDULER = True
    get_mastra.cache_clear()
    schedule_site.HOOK_CALLS.clear()
    schedule_site.PREPARE.clear()
    schedule_site.WORKFLOW_INPUTS.clear()
    yield schedule_site
    get_mastra.cache_clear()


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc))  # a Monday


@pytest.fixture
def schedules(clock) -> Schedules:
    """``mastra.schedules`` of the test site, on the injected clock."""
    return Schedules(schedule_site.mastra, clock=clock.ms)
