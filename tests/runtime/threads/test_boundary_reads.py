"""A run reads its waiting inputs at a step boundary only when one may wait there (docs/threads.md,
"Delivery"): an input accepted in this process marks its thread, one accepted in another process is
announced through pub/sub, and an input nobody heard of is answered by the next run, never lost."""

from __future__ import annotations

import asyncio

import pytest

from agents.runtime import Agent, InMemoryMemory
from agents.runtime.testing import ScriptedModel, drain_thread_runtime, text_step
from agents.runtime.threads import InMemoryThreadStore, ThreadRuntime, set_thread_runtime

pytestmark = pytest.mark.asyncio

R, T = "user-1", "thread-1"
TIMEOUT = 5.0


class SharedPubSub:
    """Pub/sub between the runtimes of one test; ``drop`` names the kinds of message it loses."""

    def __init__(self, drop: tuple[str, ...] = ()):
        self.callbacks: dict[str, list] = {}
        self.drop = drop

    async def publish(self, key, message):
        if message.get("kind") in self.drop:
            return
        for callback in list(self.callbacks.get(key, ())):
            callback(message)

    async def subscribe(self, key, callback):
        self.callbacks.setdefault(key, []).append(callback)
        return lambda: self.callbacks[key].remove(callback)


def counted_reads(store: InMemoryThreadStore) -> list[str]:
    """The run ids of the store's ``take_inputs`` calls (the boundary reads), as they happen."""
    reads: list[str] = []
    take = store.take_inputs

    async def counted(**kwargs):
        reads.append(kwargs["run_id"])
        return await take(**kwargs)

    store.take_inputs = counted
    return reads


def held_agent(gate: asyncio.Event) -> tuple[Agent, ScriptedModel]:
    """An agent whose first model call waits for ``gate``."""
    async def held(request):
        await asyncio.wait_for(gate.wait(), TIMEOUT)
        return text_step("first")

    model = ScriptedModel([held, text_step("second")])
    return Agent(id="bot", instructions="x", model=model, memory=InMemoryMemory()), model


def texts(request) -> list[str]:
    return [str(m.get("content")) for m in request.messages if m["role"] == "user"]


async def until(predicate) -> None:
    async def wait():
        while not predicate():
            await asyncio.sleep(0.005)
    await asyncio.wait_for(wait(), TIMEOUT)


async def test_alone_a_run_reads_only_at_the_boundary_after_an_input_arrived():
    store = InMemoryThreadStore()
    reads = counted_reads(store)
    runtime = ThreadRuntime(store, None, single_process=True)
    set_thread_runtime(runtime)
    try:
        gate = asyncio.Event()
        agent, model = held_agent(gate)
        woke = await agent.send_message("go", resource_id=R, thread_id=T)
        await until(lambda: model.calls == 1)
        delivered = await agent.send_message("also this", resource_id=R, thread_id=T)
        assert (delivered.action, delivered.run_id) == ("deliver", woke.run_id)
        gate.set()
        result = await asyncio.wait_for(woke.output.get_full_output(), TIMEOUT)
        assert result.text == "second" and model.calls == 2
        assert "also this" in " ".join(texts(model.requests[1]))  # the same run's next step
        assert reads == [woke.run_id]  # the boundary after the input arrived, and no other
        quiet = await agent.send_message("alone", resource_id=R, thread_id=T)
        model.steps.append(text_step("third"))
        await asyncio.wait_for(quiet.output.get_full_output(), TIMEOUT)
        assert reads == [woke.run_id]  # a run nobody sent to reads at no boundary
    finally:
        gate.set()
        await drain_thread_runtime(runtime, timeout=TIMEOUT)
        set_thread_runtime(None)


async def two_processes(pubsub: SharedPubSub):
    store = InMemoryThreadStore()
    reads = counted_reads(store)
    here, there = ThreadRuntime(store, pubsub), ThreadRuntime(store, pubsub)
    gate = asyncio.Event()
    agent, model = held_agent(gate)
    set_thread_runtime(here)
    woke = await agent.send_message("go", resource_id=R, thread_id=T)
    await until(lambda: model.calls == 1)
    set_thread_runtime(there)
    delivered = await agent.send_message("also this", resource_id=R, thread_id=T)
    assert (delivered.action, delivered.run_id) == ("deliver", woke.run_id)
    set_thread_runtime(here)
    gate.set()
    result = await asyncio.wait_for(woke.output.get_full_output(), TIMEOUT)
    await drain_thread_runtime(here, timeout=TIMEOUT)
    await drain_thread_runtime(there, timeout=TIMEOUT)
    set_thread_runtime(None)
    return woke, result, model, reads


async def test_an_input_another_process_accepts_is_announced_and_taken_at_the_next_boundary():
    woke, result, model, reads = await two_processes(SharedPubSub())
    assert result.text == "second" and model.calls == 2
    assert "also this" in " ".join(texts(model.requests[1]))
    # the first boundary (another process could have stored an input unannounced), then the one
    # after the announcement; not the last one
    assert reads == [woke.run_id, woke.run_id]


async def test_an_input_whose_announcement_is_lost_is_answered_by_the_next_run():
    woke, result, model, reads = await two_processes(SharedPubSub(drop=("inputs",)))
    assert result.text == "first"  # the run did not hear of it: it ended after its step
    assert model.calls == 2  # and the next run answered it
    assert "also this" in " ".join(texts(model.requests[1]))
    assert len(reads) == 2 and reads[0] == woke.run_id != reads[1]  # and the next run's first boundary
