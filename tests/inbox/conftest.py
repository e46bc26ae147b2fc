"""Fixtures of the inbox tests: agents on the echo model, a thread made busy on demand, and the
in-process scheduler switched off (tests call the dispatcher themselves, with an injected clock)."""

from __future__ import annotations

import pytest

from agents.memory import Memory
from agents.runtime import Agent


@pytest.fixture(autouse=True)
def no_scheduler(settings):
    settings.MASTRA_NOTIFICATION_SCHEDULER = False


@pytest.fixture
def make_agent():
    def make(agent_id: str = "support", *, delay_ms: float = 0, policy: dict | None = None, tools: dict | None = None):
        return Agent(id=agent_id, instructions="Triage notifications.",
                     model={"id": "local/echo", "delay_ms": delay_ms}, memory=Memory(),
                     notifications={"delivery_policy": policy} if policy is not None else None, tools=tools)

    return make


@pytest.fixture
def make_busy():
    async def busy(agent, resource_id: str, thread_id: str):
        """Start a run on the thread (a slow echo model keeps it active for a while)."""
        result = await agent.send_message("hi", resource_id=resource_id, thread_id=thread_id)
        assert result.action == "wake"
        return result

    return busy


