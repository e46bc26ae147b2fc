"""subscribe_to_thread: fan-out, per-thread seq, isolation, late joiners, resume after a seq,
active_run_id (DESIGN §2 invariant 3, §3)."""

import asyncio
import json

import pytest

from agents.runtime import create_tool
from agents.runtime.errors import SignalError
from tests.agents.thread_harness import (bounded, buffered, collect, make_agent, settle, starts, texts_by_run, types,
                            wait_for_chunk, wait_idle)

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

R, T = "user-1", "thread-1"


@pytest.fixture(autouse=True)
async def _drain():
    yield
    await settle()


async def test_two_subscribers_get_identical_chunks_with_increasing_seq():
    agent = make_agent(delay=5)
    sub1 = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    sub2 = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("a\nb\nc", resource_id=R, thread_id=T)
    more = await agent.send_message("d", resource_id=R, thread_id=T)
    assert more.action == "deliver"
    got1, got2 = await asyncio.gather(collect(sub1), collect(sub2))
    assert got1 == got2
    assert json.loads(json.dumps(got1)) == got1  # chunks are JSON as they are
    assert [c["seq"] for c in got1] == list(range(1, len(got1) + 1))
    assert all(c["runId"] == r.run_id for c in got1)
    assert types(got1)[0] == "start" and types(got1)[-1] == "finish"
    # the next run continues the thread's sequence in both
    r2 = await agent.send_message("e", resource_id=R, thread_id=T)
    next1, next2 = await asyncio.gather(collect(sub1), collect(sub2))
    assert next1 == next2
    assert [c["seq"] for c in next1] == list(range(len(got1) + 1, len(got1) + len(next1) + 1))
    assert starts(next1) == [r2.run_id]


async def test_seq_is_per_thread():
    agent = make_agent()
    sub_a = await agent.subscribe_to_thread(resource_id=R, thread_id="A")
    sub_b = await agent.subscribe_to_thread(resource_id=R, thread_id="B")
    await agent.send_message("one", resource_id=R, thread_id="A")
    got_a = await collect(sub_a)
    await agent.send_message("two", resource_id=R, thread_id="B")
    got_b = await collect(sub_b)
    assert [c["seq"] for c in got_a] == list(range(1, len(got_a) + 1))
    assert [c["seq"] for c in got_b] == list(range(1, len(got_b) + 1))


async def test_unsubscribe_never_aborts_the_run():
    agent = make_agent(delay=30)
    leaving = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    staying = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("a\nb\nc\nd", resource_id=R, thread_id=T)
    await wait_for_chunk(leaving, lambda c: c["type"] == "text-delta")
    waiting = len(buffered_view(leaving))
    leaving.unsubscribe()
    leaving.unsubscribe()  # idempotent
    # the stream of an unsubscribed subscription ends (after what it held) instead of waiting forever
    rest = await bounded(_drain_stream(leaving))
    assert len(rest) == waiting
    result = await bounded(r.output.get_full_output())
    assert result.finish_reason == "stop" and result.text == "echo: a\necho: b\necho: c\necho: d"
    got = await collect(staying)
    assert got[-1]["type"] == "finish" and got[-1]["payload"]["stepResult"]["reason"] == "stop"
    assert "abort" not in types(got)


def buffered_view(sub) -> list[dict]:
    return sub.peek_buffered()


async def _drain_stream(sub):
    out = []
    async for chunk in sub.stream:
        out.append(chunk)
    return out


async def test_run_completes_with_every_subscriber_gone():
    agent = make_agent(delay=30)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("a\nb", resource_id=R, thread_id=T)
    await wait_for_chunk(sub, lambda c: c["type"] == "text-delta")
    sub.unsubscribe()
    result = await bounded(r.output.get_full_output())
    assert result.finish_reason == "stop" and result.text == "echo: a\necho: b"


async def test_subscribers_never_see_other_threads():
    agent = make_agent(delay=10)
    sub_a = await agent.subscribe_to_thread(resource_id=R, thread_id="A")
    sub_b = await agent.subscribe_to_thread(resource_id=R, thread_id="B")
    # the same thread id under another resource id is another thread key
    sub_x = await agent.subscribe_to_thread(resource_id="someone-else", thread_id="A")
    ra = await agent.send_message("for a", resource_id=R, thread_id="A")
    rb = await agent.send_message("for b", resource_id=R, thread_id="B")
    got_a, got_b = await asyncio.gather(collect(sub_a), collect(sub_b))
    assert {c["runId"] for c in got_a} == {ra.run_id}
    assert {c["runId"] for c in got_b} == {rb.run_id}
    assert texts_by_run(got_a) == {ra.run_id: "echo: for a"}
    assert texts_by_run(got_b) == {rb.run_id: "echo: for b"}
    await settle()
    await asyncio.sleep(0.05)
    assert buffered(sub_x) == [] and buffered(sub_a) == [] and buffered(sub_b) == []
    # another resource's thread "A" is another thread: a resume there finds nothing of R's
    other = await agent.subscribe_to_thread(resource_id="someone-else", thread_id="A", after_seq=0)
    await asyncio.sleep(0.05)
    assert buffered(other) == []
    other.unsubscribe()


async def test_late_subscriber_joins_the_active_run_from_its_start():
    agent = make_agent(gate=3)  # holds after two text deltas
    early = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("a\nb\nc\nd", resource_id=R, thread_id=T)
    head = await collect(early, lambda c: c["type"] == "text-delta", n=2)
    late = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    assert late.active_run_id() == r.run_id
    agent.model.open()
    tail = await collect(early)
    got_late = await collect(late)
    assert got_late == head + tail
    assert got_late[0]["type"] == "start" and got_late[0]["seq"] == 1


async def test_completed_runs_are_not_replayed():
    agent = make_agent()
    first = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    await agent.send_message("one", resource_id=R, thread_id=T)
    done = await collect(first)
    await wait_idle(R, T)
    later = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    await asyncio.sleep(0.05)
    assert buffered(later) == [] and later.active_run_id() is None
    r2 = await agent.send_message("two", resource_id=R, thread_id=T)
    got = await collect(later)
    assert got[0]["type"] == "start" and got[0]["runId"] == r2.run_id
    assert got[0]["seq"] == done[-1]["seq"] + 1
    assert got == await collect(first)


async def test_resume_after_seq_once_the_run_is_over():
    agent = make_agent(delay=5)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    await agent.send_message("a\nb", resource_id=R, thread_id=T)
    await agent.send_message("c", resource_id=R, thread_id=T, if_active={"behavior": "deliver"})
    full = await collect(sub)
    await wait_idle(R, T)
    await agent.send_message("p", resource_id=R, thread_id=T, if_idle={"behavior": "persist"})
    full += await collect(sub)
    last = full[-1]["seq"]
    assert [c["seq"] for c in full] == list(range(1, last + 1))
    for n in (0, 1, 5, last - 1, last):
        resumed = await agent.subscribe_to_thread(resource_id=R, thread_id=T, after_seq=n)
        assert buffered(resumed) == full[n:], n
        resumed.unsubscribe()
    # the live tail follows the backlog with no gap and no duplicate
    resumed = await agent.subscribe_to_thread(resource_id=R, thread_id=T, after_seq=last - 2)
    r = await agent.send_message("next", resource_id=R, thread_id=T)
    got = await collect(resumed, n=2)  # the synthetic run's finish, then the new run's finish
    assert got[:2] == full[-2:]
    assert [c["seq"] for c in got] == list(range(last - 1, got[-1]["seq"] + 1))
    assert starts(got) == [r.run_id]


async def test_resume_after_seq_during_an_active_run():
    agent = make_agent(gate=3)  # holds after two text deltas
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("a\nb\nc\nd\ne", resource_id=R, thread_id=T)
    head = await collect(sub, lambda c: c["type"] == "text-delta", n=2)
    await asyncio.sleep(0.05)  # let part of the run reach the event log
    n = head[3]["seq"]
    resumed = await agent.subscribe_to_thread(resource_id=R, thread_id=T, after_seq=n)
    assert resumed.active_run_id() == r.run_id
    agent.model.open()
    tail = await collect(sub)
    got = await collect(resumed)
    full = head + tail
    assert got == full[n:]
    assert [c["seq"] for c in got] == list(range(n + 1, full[-1]["seq"] + 1))
    assert resumed.active_run_id() is None


@pytest.mark.parametrize("after_seq", [-1, "3", True, 1.5])
async def test_after_seq_must_be_a_non_negative_int(after_seq):
    agent = make_agent()
    with pytest.raises(SignalError) as info:
        await agent.subscribe_to_thread(resource_id=R, thread_id=T, after_seq=after_seq)
    assert info.value.code == "invalid_after_seq"


@pytest.mark.parametrize("target", [{"resource_id": "", "thread_id": T}, {"resource_id": R, "thread_id": None}])
async def test_subscribe_needs_a_target(target):
    agent = make_agent()
    with pytest.raises(SignalError) as info:
        await agent.subscribe_to_thread(**target)
    assert info.value.code == "missing_target"


async def test_active_run_id_during_and_after_a_run():
    agent = make_agent(gate=2)  # holds after the first text delta
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    assert sub.active_run_id() is None
    r = await agent.send_message("a\nb", resource_id=R, thread_id=T)
    await wait_for_chunk(sub, lambda c: c["type"] == "start")
    assert sub.active_run_id() == r.run_id
    await wait_for_chunk(sub, lambda c: c["type"] == "text-delta")
    assert sub.active_run_id() == r.run_id
    agent.model.open()
    await collect(sub)
    assert sub.active_run_id() is None
    # a late subscriber of an idle thread
    assert (await agent.subscribe_to_thread(resource_id=R, thread_id=T)).active_run_id() is None


async def test_finish_with_reason_tool_calls_is_not_the_end_of_a_run():
    tool = create_tool(id="t", execute=lambda input: {"ok": True})
    agent = make_agent(gate=0, tools={"t": tool})
    agent.model.open()
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("/tool t {}", resource_id=R, thread_id=T,
                                 if_idle={"stream_options": {"max_steps": 1}})
    got = await collect(sub)
    assert got[-1]["payload"]["stepResult"]["reason"] == "tool-calls"
    assert sub.active_run_id() == r.run_id
    # the next run's start replaces it; its finish with reason stop ends it
    agent.model.close()
    r2 = await agent.send_message("done", resource_id=R, thread_id=T)
    await wait_for_chunk(sub, lambda c: c["type"] == "start")
    assert sub.active_run_id() == r2.run_id
    agent.model.open()
    await collect(sub)
    assert sub.active_run_id() is None


def slow_store(method: str, delay: float, *, before: bool = False):
    """Make one store method of this loop's runtime slow, so that live chunks arrive meanwhile."""
    from agents.runtime.threads import get_thread_runtime

    store = get_thread_runtime().store
    original = getattr(store, method)

    async def slow(**kwargs):
        if before:
            await asyncio.sleep(delay)
        result = await original(**kwargs)
        if not before:
            await asyncio.sleep(delay)
        return result

    setattr(store, method, slow)


async def test_resume_after_seq_while_live_chunks_arrive_during_the_backlog_read():
    agent = make_agent(delay=20)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("\n".join("abcdefgh"), resource_id=R, thread_id=T)
    head = await collect(sub, lambda c: c["type"] == "text-delta", n=2)
    await asyncio.sleep(0.05)
    slow_store("read_events", 0.1)  # the run streams several chunks while the backlog is read
    resumed = await agent.subscribe_to_thread(resource_id=R, thread_id=T, after_seq=4)
    full = head + await collect(sub)
    got = await collect(resumed)
    assert got == full[4:]
    assert {c["runId"] for c in got} == {r.run_id} and got[-1]["type"] == "finish"
    assert [c["seq"] for c in got] == list(range(5, full[-1]["seq"] + 1))


async def test_subscriber_joining_a_run_before_its_first_chunk_gets_that_run_only():
    """A subscriber that finds the thread's run started in this process but not yet streaming (the
    run registered, its catch-up of the event log not done) is owed that run's chunks, not the
    thread's earlier runs: the catch-up must not take it for a subscriber behind the thread."""
    from agents.runtime.threads import get_thread_runtime

    agent = make_agent(delay=10)
    first = await agent.send_message("before", resource_id=R, thread_id=T)
    await bounded(first.output.get_full_output())
    await wait_idle(R, T)
    subscriptions = get_thread_runtime().subscriptions
    catch_up = subscriptions.catch_up
    registered, proceed = asyncio.Event(), asyncio.Event()

    async def paused(key, last_seq):
        registered.set()
        await proceed.wait()
        return await catch_up(key, last_seq)

    subscriptions.catch_up = paused
    try:
        sending = asyncio.ensure_future(agent.send_message("a\nb\nc", resource_id=R, thread_id=T))
        await bounded(registered.wait())
        sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
        proceed.set()
        r = await bounded(sending)
    finally:
        subscriptions.catch_up = catch_up
    got = await collect(sub)
    assert got[0]["type"] == "start" and got[0]["runId"] == r.run_id
    assert {c["runId"] for c in got} == {r.run_id}
    assert texts_by_run(got) == {r.run_id: "echo: a\necho: b\necho: c"}


async def test_subscriber_joining_while_a_run_starts_sees_the_whole_run():
    agent = make_agent(delay=10)
    first = await agent.send_message("before", resource_id=R, thread_id=T)
    await bounded(first.output.get_full_output())
    await wait_idle(R, T)
    slow_store("thread_state", 0.1, before=True)
    sub, r = await asyncio.gather(agent.subscribe_to_thread(resource_id=R, thread_id=T),
                                  agent.send_message("a\nb\nc", resource_id=R, thread_id=T))
    got = await collect(sub)
    assert got[0]["type"] == "start" and got[0]["runId"] == r.run_id
    assert [c["seq"] for c in got] == list(range(got[0]["seq"], got[-1]["seq"] + 1))
    assert texts_by_run(got) == {r.run_id: "echo: a\necho: b\necho: c"}
