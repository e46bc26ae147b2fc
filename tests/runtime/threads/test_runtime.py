"""The thread runtime on the in-memory store (no Django): subscriptions with bounded buffers, the
signal rendered once per input, and the test helper that fails when background work does not end."""

from __future__ import annotations

import asyncio

import pytest

from agents.runtime import Agent, InMemoryMemory
from agents.runtime import signal as signal_module
from agents.runtime.testing import drain_thread_runtime
from agents.runtime.threads import (SUBSCRIBER_BUFFER_MAX, SUBSCRIBER_OVERFLOW, InMemoryThreadStore, ThreadRuntime,
                                    set_thread_runtime, thread_key)
from agents.runtime.threads import memory_store as memory_store_module
from agents.runtime.threads import runtime as runtime_module
from agents.runtime.threads.events import SEQ_BLOCK

pytestmark = pytest.mark.asyncio

R, T = "user-1", "thread-1"
TIMEOUT = 5.0


@pytest.fixture
async def runtime():
    runtime = ThreadRuntime(InMemoryThreadStore(), None, subscriber_buffer_max=5)
    set_thread_runtime(runtime)
    yield runtime
    await drain_thread_runtime(runtime, timeout=TIMEOUT)
    set_thread_runtime(None)


def echo_agent(**model) -> Agent:
    return Agent(id="bot", instructions="Be brief.", model={"id": "local/echo", **model}, memory=InMemoryMemory())


async def read_all(sub) -> list[dict]:
    async def go():
        return [chunk async for chunk in sub.stream]

    return await asyncio.wait_for(go(), TIMEOUT)


async def test_the_default_subscriber_bound_is_ten_thousand_chunks():
    assert SUBSCRIBER_BUFFER_MAX == 10_000
    assert ThreadRuntime(InMemoryThreadStore(), None).subscriptions.buffer_max == 10_000


async def test_a_subscriber_that_falls_behind_is_dropped_with_an_overflow_error(runtime):
    agent = echo_agent(chunk_size=1)
    slow = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    result = await agent.send_message("abcdefghij", resource_id=R, thread_id=T)
    full = await asyncio.wait_for(result.output.get_full_output(), TIMEOUT)
    assert full.text == "echo: abcdefghij"
    assert slow.overflowed is True
    assert len(slow.peek_buffered()) == 6  # never more than the bound and the closing error
    chunks = await read_all(slow)  # ends on its own after the error
    assert [c["seq"] for c in chunks[:5]] == [1, 2, 3, 4, 5]
    assert chunks[5] == {"type": "error", "runId": None, "from": "AGENT", "payload": {"error": {
        "message": "the subscriber fell 5 chunks behind and was dropped; subscribe again with the last seq it read",
        "code": SUBSCRIBER_OVERFLOW}}}
    assert len(chunks) == 6
    assert thread_key(R, T) not in runtime.subscriptions


async def test_a_dropped_subscriber_resumes_from_the_last_seq_it_read(runtime):
    agent = echo_agent(chunk_size=1)
    slow = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    result = await agent.send_message("abcdefghij", resource_id=R, thread_id=T)
    await asyncio.wait_for(result.output.get_full_output(), TIMEOUT)
    await drain_thread_runtime(runtime, timeout=TIMEOUT)
    read = await read_all(slow)
    last_seq = read[-2]["seq"]
    runtime.subscriptions.buffer_max = 100
    again = await agent.subscribe_to_thread(resource_id=R, thread_id=T, after_seq=last_seq)
    rest = again.take_buffered()
    again.unsubscribe()
    logged = await runtime.store.read_events(key=thread_key(R, T), after_seq=0)
    assert [c["seq"] for c in read[:-1] + rest] == [c["seq"] for c in logged]
    assert rest[-1]["type"] == "finish"


async def test_a_subscriber_that_keeps_up_is_never_dropped(runtime):
    agent = echo_agent(chunk_size=1, delay_ms=1)  # the model pauses: the reader keeps up
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)

    async def read_run():
        out = []
        async for chunk in sub.stream:
            out.append(chunk)
            if chunk["type"] == "finish":
                return out

    reader = asyncio.ensure_future(read_run())
    result = await agent.send_message("abcdefghij", resource_id=R, thread_id=T)
    chunks = await asyncio.wait_for(reader, TIMEOUT)
    await asyncio.wait_for(result.output.get_full_output(), TIMEOUT)
    assert sub.overflowed is False
    assert [c["type"] for c in chunks if c["type"] == "error"] == []
    assert "".join(c["payload"]["text"] for c in chunks if c["type"] == "text-delta") == "echo: abcdefghij"
    sub.unsubscribe()


async def test_a_model_that_never_pauses_still_lets_subscribers_read_as_it_streams(runtime):
    agent = echo_agent(chunk_size=1)  # 2,000 deltas, never a pause: the run alone would keep the loop
    runtime.subscriptions.buffer_max = 10_000
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    handed_out_at_first_read: list[int] = []

    async def read_run():
        async for chunk in sub.stream:
            if chunk["type"] == "text-delta" and not handed_out_at_first_read:
                handed_out_at_first_read.append(len(runtime.active[thread_key(R, T)].chunks))
            if chunk["type"] == "finish":
                return

    reader = asyncio.ensure_future(read_run())
    result = await agent.send_message("x" * 2000, resource_id=R, thread_id=T)
    await asyncio.wait_for(reader, TIMEOUT)
    await asyncio.wait_for(result.output.get_full_output(), TIMEOUT)
    sub.unsubscribe()
    # the first delta reached the subscriber while most of the 2,000 were still to come
    assert handed_out_at_first_read and handed_out_at_first_read[0] < 1000


async def test_a_run_that_waits_for_its_model_between_chunks_does_not_also_go_round_the_loop(runtime, monkeypatch):
    yields = []

    class CountedYield:
        def __await__(self):
            yields.append(1)
            yield

    monkeypatch.setattr(runtime_module, "_YIELD", CountedYield())
    runtime.subscriptions.buffer_max = 10_000
    agent = echo_agent(chunk_size=1, delay_ms=1)  # the model sleeps before each of its 100 deltas
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    result = await agent.send_message("y" * 94, resource_id=R, thread_id=T)
    full = await asyncio.wait_for(result.output.get_full_output(), TIMEOUT)
    read = await asyncio.wait_for(sub.stream.__anext__(), TIMEOUT)
    sub.unsubscribe()
    assert full.text == "echo: " + "y" * 94
    assert read["type"] == "start" and thread_key(R, T) not in runtime.active  # subscribed to the end
    # the subscribers ran while the model slept; a yield after every chunk (one per delta) made each
    # chunk of a run on a busy loop wait a turn more. The run's first chunk yields; a rare other one
    # where the machine stalls the run for a millisecond between two sleeps.
    assert 1 <= len(yields) < 25


async def test_each_input_is_rendered_once(runtime, monkeypatch):
    calls = []
    original = signal_module.render_content

    def counting(signal):
        calls.append(signal["contents"])
        return original(signal)

    monkeypatch.setattr(signal_module, "render_content", counting)
    monkeypatch.setattr(memory_store_module, "render_content", counting)
    agent = echo_agent(delay_ms=30)
    woken = await agent.send_message("first", resource_id=R, thread_id=T)
    delivered = await agent.send_message("second", resource_id=R, thread_id=T)
    assert (woken.action, delivered.action) == ("wake", "deliver")
    full = await asyncio.wait_for(woken.output.get_full_output(), TIMEOUT)
    assert full.text.startswith("echo: first")
    assert calls == ["first", "second"]


async def test_the_test_helper_fails_when_background_work_does_not_end(runtime):
    blocker = asyncio.Event()
    runtime.spawn(blocker.wait())
    assert await runtime.drain_background(timeout=0.05) is False
    with pytest.raises(AssertionError) as caught:
        await drain_thread_runtime(runtime, timeout=0.05)
    assert str(caught.value).startswith("the thread runtime was still busy after 0.05 s: task <coroutine object Event.wait")
    blocker.set()
    assert await runtime.drain_background(timeout=TIMEOUT) is True


async def test_a_run_hands_out_only_reserved_seqs_until_their_write_commits():
    """Chunks beyond the run's reservation reach subscribers only once the write that logs them
    (and extends the reservation) has committed; the run's end settles the lease at its last seq."""
    store = InMemoryThreadStore()
    runtime = ThreadRuntime(store, None)
    set_thread_runtime(runtime)
    gate = asyncio.Event()
    append = store.append_events

    async def gated(**kwargs):  # the event log's writes wait until the test opens the gate
        await gate.wait()
        return await append(**kwargs)

    store.append_events = gated
    try:
        agent = echo_agent(chunk_size=1)
        sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
        text = "x" * (SEQ_BLOCK + 100)
        result = await agent.send_message(text, resource_id=R, thread_id=T)
        while runtime.active[thread_key(R, T)].seq <= SEQ_BLOCK + 10:
            await asyncio.sleep(0)  # the run goes on past its reservation
        handed = sub.take_buffered()
        assert [c["seq"] for c in handed] == list(range(1, SEQ_BLOCK + 1))  # never beyond the reservation
        gate.set()
        full = await asyncio.wait_for(result.output.get_full_output(), TIMEOUT)
        assert full.text == "echo: " + text
        rest = []
        while not rest or rest[-1]["type"] != "finish":
            rest.append(await asyncio.wait_for(sub.stream.__anext__(), TIMEOUT))
        assert [c["seq"] for c in handed + rest] == list(range(1, len(handed) + len(rest) + 1))
        await drain_thread_runtime(runtime, timeout=TIMEOUT)
        lease = store.leases[thread_key(R, T)]
        assert lease["reserved_seq"] == lease["last_seq"] == rest[-1]["seq"]
        sub.unsubscribe()
    finally:
        set_thread_runtime(None)


class StalledPubSub:
    """A channel layer whose thread subscriptions never complete (a slow Redis): a run that waited
    for its subscription before renewing its lease would never renew it."""

    def __init__(self):
        self.release = asyncio.Event()

    async def publish(self, key, message):
        return None

    async def subscribe(self, key, callback):
        await self.release.wait()
        return lambda: None


async def test_recovered_runs_renew_their_leases_at_once_without_waiting_for_each_other():
    from agents.runtime.signal import message_to_signal

    store = InMemoryThreadStore()
    branches = {"if_active": {"behavior": "deliver", "attributes": {}, "stream_options": None},
                "if_idle": {"behavior": "wake", "attributes": {}, "stream_options": None}}
    keys = [thread_key(R, f"dead-{n}") for n in (1, 2)]
    for n, key in enumerate(keys, 1):  # two threads whose owner died mid-run
        woke = await store.accept(key=key, agent_id="bot", resource_id=R, thread_id=f"dead-{n}",
                                  signal=message_to_signal(f"input {n}"), mode="send", target_run_id=None,
                                  new_run_id=f"dead-run-{n}", stream_options={}, ttl_ms=300, process_id="dead",
                                  state=None, prepare=None, **branches)
        assert woke.action == "wake"
        store.leases[key]["expires_at"] = store.clock() - 1
    renewed, renewed_runs = [], set()
    renew = store.renew

    async def recording_renew(**kwargs):
        renewed.append(kwargs["key"])
        renewed_runs.add(kwargs["run_id"])
        return await renew(**kwargs)

    store.renew = recording_renew
    pubsub = StalledPubSub()
    agent = echo_agent()
    runtime = ThreadRuntime(store, pubsub, lease_ttl_ms=300, agent_lookup=lambda agent_id: agent)
    recovering = asyncio.ensure_future(runtime.recover())
    try:
        async def both_renewed():
            while not set(keys) <= set(renewed):
                await asyncio.sleep(0.01)

        await asyncio.wait_for(both_renewed(), TIMEOUT)
        assert not recovering.done()  # the runs still wait for their subscriptions
    finally:
        pubsub.release.set()
    assert sorted(await asyncio.wait_for(recovering, TIMEOUT)) == sorted(renewed_runs)
    assert len(renewed_runs) == 2
    await drain_thread_runtime(runtime, timeout=TIMEOUT)


async def test_a_run_renews_its_lease_until_its_end_is_written():
    """The run's end is one write that may wait its turn (a busy database thread) longer than the
    TTL: the lease is renewed until it is written, then the run ends as any other."""
    store = InMemoryThreadStore()
    finish, renew = store.finish, store.renew
    writing, release = asyncio.Event(), asyncio.Event()
    renewed_while_writing = []

    async def slow_finish(**kwargs):
        writing.set()
        await release.wait()
        return await finish(**kwargs)

    async def recording_renew(**kwargs):
        state = await renew(**kwargs)
        if writing.is_set() and not release.is_set():
            renewed_while_writing.append(state.ok)
        return state

    store.finish, store.renew = slow_finish, recording_renew
    runtime = ThreadRuntime(store, None, lease_ttl_ms=300)
    set_thread_runtime(runtime)
    try:
        agent = echo_agent()
        result = await agent.send_message("hello", resource_id=R, thread_id=T)
        await asyncio.wait_for(writing.wait(), TIMEOUT)

        async def renewed_twice():
            while len(renewed_while_writing) < 2:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(renewed_twice(), TIMEOUT)  # longer than the TTL
        release.set()
        full = await asyncio.wait_for(result.output.get_full_output(), TIMEOUT)
        await drain_thread_runtime(runtime, timeout=TIMEOUT)
        assert full.text == "echo: hello"
        assert all(renewed_while_writing)
        lease = store.leases[thread_key(R, T)]
        assert (lease["owner_run_id"], lease["status"]) == (None, "idle")
        assert [c["type"] for c in await store.read_events(key=thread_key(R, T), after_seq=0)][-1] == "finish"
    finally:
        release.set()
        set_thread_runtime(None)


async def test_a_run_that_raises_is_ended_by_the_runtime_and_its_thread_serves_the_next_input(runtime):
    def raising(chunk):  # the caller's on_chunk, on every chunk: the run cannot even send its error
        raise RuntimeError("on_chunk failed")

    agent = echo_agent()
    first = await agent.send_message("hello", resource_id=R, thread_id=T, if_idle={"stream_options": {"on_chunk": raising}})
    with pytest.raises(RuntimeError):
        await asyncio.wait_for(first.output.get_full_output(), TIMEOUT)
    await drain_thread_runtime(runtime, timeout=TIMEOUT)  # fails if the run is still going
    store = runtime.store
    assert store.leases[thread_key(R, T)]["owner_run_id"] is None
    # the run's own error went out before the callback raised on it: the run failed of that one
    assert (store.runs[first.run_id]["status"], store.runs[first.run_id]["error_code"]) == ("failed", "error")
    events = await store.read_events(key=thread_key(R, T), after_seq=0)
    assert [c["type"] for c in events].count("error") == 1 and events[-1]["type"] == "finish"
    kept = store.history[thread_key(R, T)]
    assert [(m["role"], m["content"]["parts"]) for m in kept] == [("signal", [{"type": "text", "text": "hello"}]),
                                                                   ("assistant", [])]
    assert kept[1]["content"]["metadata"]["error"] == {"code": "error", "message": "on_chunk failed"}
    second = await agent.send_message("again", resource_id=R, thread_id=T)
    assert second.action == "wake"
    assert (await asyncio.wait_for(second.output.get_full_output(), TIMEOUT)).finish_reason == "stop"
