"""The event log past its retention window: old events are pruned, the recent ones kept, and a
subscriber resuming from before them gets the thread's snapshot first."""

import pytest

from agents.models import Message, ThreadEvent, ThreadLease
from tests.agents.thread_harness import bounded, db, make_agent, settle, wait_idle

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

R, T = "user-1", "thread-1"
RETENTION = 10


@pytest.fixture(autouse=True)
async def _drain():
    yield
    await settle()


async def test_pruning_keeps_the_window_and_a_resume_from_before_it_gets_the_snapshot(settings):
    settings.MASTRA_EVENT_RETENTION = RETENTION
    agent = make_agent()
    for text in ("one", "two", "three", "four", "five"):
        r = await agent.send_message(text, resource_id=R, thread_id=T)
        await bounded(r.output.get_full_output())
        await wait_idle(R, T)
    await settle()
    last_seq = await db(lambda: ThreadLease.objects.get(thread__thread_id=T).last_seq)
    kept = await db(lambda: list(ThreadEvent.objects.filter(thread__thread_id=T).values_list("seq", flat=True)))
    assert last_seq > 3 * RETENTION
    # old events pruned, at least the window kept, with no gap up to the last one
    first = kept[0] if kept else None
    assert first is not None and first > 1 and len(kept) >= RETENTION
    assert kept == list(range(first, last_seq + 1))
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T, after_seq=0)
    replay = list(sub._buffer)
    sub.unsubscribe()
    snapshot, rest = replay[0], replay[1:]
    assert (snapshot["type"], snapshot["seq"]) == ("data-thread-snapshot", first - 1)
    # the thread's messages in Mastra's stored format, as the HTTP API serves them
    stored = await db(lambda: [m.to_dict() for m in Message.objects.filter(thread__thread_id=T).order_by("id")])
    assert snapshot["data"]["messages"] == stored
    assert [len(snapshot["data"]["messages"]), snapshot["data"]["threadId"], snapshot["data"]["resourceId"]] == [
        10, T, R]
    assert [c["seq"] for c in rest] == kept
