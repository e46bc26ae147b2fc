"""The SQL statements of a notification ingest, pinned: ``send_notification_signal`` of a low
notification (stored and planned in one group-commit transaction; nothing is sent until the digest)."""

from __future__ import annotations

import pytest

from agents.runtime.testing import drain_thread_runtime
from agents.runtime.threads import get_thread_runtime
from tests.queries import statements

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_a_notification_ingest(make_agent):
    agent = make_agent()
    await agent.send_message("hi", resource_id="u1", thread_id="t1")
    await drain_thread_runtime(get_thread_runtime())
    with statements() as seen:
        result = await agent.send_notification_signal(
            {"source": "github", "kind": "ci", "priority": "low", "summary": "CI failed"},
            resource_id="u1", thread_id="t1")
    await drain_thread_runtime(get_thread_runtime())
    assert result.decision.action == "summarize"
    # the thread (it exists), the thread's lease (its state, read in the same transaction), the record
    # with its plan's schedule fields
    assert seen == ["SELECT agents_thread", "SELECT agents_threadlease", "INSERT inbox_notificationrecord"]
