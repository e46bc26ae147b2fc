"""The notifications panel's **Send a test notification**: one low-priority record filed into the
caller's open thread, through the agent's own ``send_notification_signal`` (the path every
notification takes), so that the inbox, its badge and its delivery can be seen without a webhook."""

from __future__ import annotations

from agents.access import Caller
from agents.registry import get_mastra
from agents.runtime.errors import MastraError

#: what the test record says (a low priority stays pending until the dispatcher summarises it)
TEST_NOTIFICATION = {"source": "chat", "kind": "test", "priority": "low",
                     "summary": "A test notification from the chat page"}


class NoMemory(MastraError):
    code = "agent_without_memory"


async def notification_send_test(*, caller: Caller, agent_id: str, thread_id: str) -> dict:
    """File the test notification into the caller's thread ``thread_id`` of ``agent_id``; returns
    its stored record. ``agent_not_found`` (404) or ``agent_without_memory`` (400)."""
    agent = get_mastra().get_agent(agent_id)
    if agent.memory is None:
        raise NoMemory(f"agent {agent_id!r} has no memory: it has no threads to notify")
    result = await agent.send_notification_signal(dict(TEST_NOTIFICATION), resource_id=caller.resource_id,
                                                  thread_id=thread_id)
    return result.record
