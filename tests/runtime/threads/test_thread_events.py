"""``Agent.subscribe_thread_events`` (Mastra's ``subscribeThreadEvents``) on the in-memory store:
the count of messages waiting for a run of their own, at once and at each change, also when
another process changes the queue."""

from __future__ import annotations

import asyncio

import pytest

from agents.runtime import Agent, InMemoryMemory, SignalError
from agents.runtime.testing import ScriptedModel, drain_thread_runtime, text_step
from agents.runtime.threads import InMemoryThreadStore, ThreadRuntime, set_thread_runtime

pytestmark = pytest.mark.asyncio

R, T = "user-1", "thread-1"
TIMEOUT = 5.0


class SharedPubSub:
    """Pub/sub between runtimes of one test: every subscriber of a thread gets each message."""

    def __init__(self):
        self.callbacks: dict[str, list] = {}

    async def publish(self, key, message):
        for callback in list(self.callbacks.get(key, ())):
            callback(message)

    async def subscribe(self, key, callback):
        self.callbacks.setdefault(key, []).append(callback)
        return lambda: self.callbacks[key].remove(callback)


def gated_agent(gate: asyncio.Event, memory: InMemoryMemory) -> Agent:
    async def held(request):
        await gate.wait()
        return text_step("first")
    model = ScriptedModel([held, text_step("second"), text_step("third")])
    return Agent(id="bot", instructions="x", model=model, memory=memory)


async def until(predicate) -> None:
    async def wait():
        while not predicate():
            await asyncio.sleep(0.005)
    await asyncio.wait_for(wait(), TIMEOUT)


@pytest.fixture
async def runtime():
    runtime = ThreadRuntime(InMemoryThreadStore(), None)
    set_thread_runtime(runtime)
    yield runtime
    await drain_thread_runtime(runtime, timeout=TIMEOUT)
    set_thread_runtime(None)


async def test_a_listener_gets_the_queue_count_at_once_and_at_each_change(runtime):
    gate = asyncio.Event()
    agent = gated_agent(gate, InMemoryMemory())
    events: list[dict] = []
    unsubscribe = await agent.subscribe_thread_events(resource_id=R, thread_id=T, listener=events.append)
    assert events == [{"type": "queue-count-changed", "count": 0}]
    woke = await agent.send_message("go", resource_id=R, thread_id=T)
    assert woke.action == "wake" and events == [{"type": "queue-count-changed", "count": 0}]  # no queue change
    delivered = await agent.send_message("also this", resource_id=R, thread_id=T)
    assert delivered.action == "deliver" and len(events) == 1  # into the active run: not queued
    first = await agent.queue_message("later 1", resource_id=R, thread_id=T)
    second = await agent.queue_message("later 2", resource_id=R, thread_id=T)
    assert [e["count"] for e in events] == [0, 1, 2]
    assert await agent.cancel_queued_inputs([second.signal["id"]], resource_id=R, thread_id=T) == 1
    assert [e["count"] for e in events] == [0, 1, 2, 1]
    gate.set()  # the active run ends; the queued message runs as its own run
    await until(lambda: events[-1]["count"] == 0)
    assert events == [{"type": "queue-count-changed", "count": n} for n in (0, 1, 2, 1, 0)]
    assert first.action == "deliver"
    unsubscribe()
    await agent.queue_message("idle now", resource_id=R, thread_id=T)  # wakes (and nobody listens)
    await drain_thread_runtime(runtime, timeout=TIMEOUT)
    assert len(events) == 5


async def test_a_listener_hears_another_processs_queue_through_pub_sub():
    store, pubsub = InMemoryThreadStore(), SharedPubSub()
    here, there = ThreadRuntime(store, pubsub), ThreadRuntime(store, pubsub)
    memory = InMemoryMemory()
    gate = asyncio.Event()
    set_thread_runtime(there)
    try:
        sender = gated_agent(gate, memory)
        await sender.send_message("go", resource_id=R, thread_id=T)
        set_thread_runtime(here)
        listener_agent = Agent(id="bot", instructions="x", model=ScriptedModel([]), memory=memory)
        events: list[dict] = []
        unsubscribe = await listener_agent.subscribe_thread_events(resource_id=R, thread_id=T, listener=events.append)
        set_thread_runtime(there)
        await sender.queue_message("later", resource_id=R, thread_id=T)  # accepted by the other process
        await until(lambda: len(events) == 2)
        gate.set()
        await until(lambda: len(events) == 3)
        assert [e["count"] for e in events] == [0, 1, 0]
        unsubscribe()
    finally:
        gate.set()
        await drain_thread_runtime(there, timeout=TIMEOUT)
        await drain_thread_runtime(here, timeout=TIMEOUT)
        set_thread_runtime(None)


async def test_an_async_listener_is_awaited_and_a_listener_error_is_its_own(runtime, caplog):
    agent = gated_agent(asyncio.Event(), InMemoryMemory())
    seen: list[int] = []

    async def slow(event):
        await asyncio.sleep(0)
        seen.append(event["count"])

    def broken(event):
        raise RuntimeError("listener bug")

    await agent.subscribe_thread_events(resource_id=R, thread_id=T, listener=slow)
    await agent.subscribe_thread_events(resource_id=R, thread_id=T, listener=broken)
    assert seen == [0]
    assert "a thread event listener" in caplog.text


async def test_bad_arguments_raise_signal_errors(runtime):
    agent = gated_agent(asyncio.Event(), InMemoryMemory())
    for kwargs, code in (({"resource_id": "", "thread_id": T, "listener": print}, "missing_target"),
                         ({"resource_id": R, "thread_id": T, "listener": "not callable"}, "invalid_listener")):
        with pytest.raises(SignalError) as caught:
            await agent.subscribe_thread_events(**kwargs)
        assert caught.value.code == code
