"""Inputs accepted a few at a time (``agents.runtime.threads.admission``): the limit holds, the
waiting ones go in their order of arrival, a cancelled wait gives up nothing, and an input sent from
inside an acceptance (an instructions resolver, a thread-events listener, the run a wake starts and
the tasks they start) goes through instead of waiting for the acceptance that runs it."""

from __future__ import annotations

import asyncio

import pytest

from agents.runtime import Agent, InMemoryMemory
from agents.runtime.testing import ScriptedModel, drain_thread_runtime, text_step
from agents.runtime.threads import InMemoryThreadStore, ThreadRuntime, set_thread_runtime
from agents.runtime.threads.admission import AcceptGate
from agents.runtime.tools import create_tool
from tests.runtime.threads.accept_log import AcceptLog, record_accepts

pytestmark = pytest.mark.asyncio

R = "user-1"
TIMEOUT = 5.0


async def started(limit: int) -> tuple[ThreadRuntime, AcceptLog]:
    runtime = ThreadRuntime(InMemoryThreadStore(), None, accepts_at_once=limit)
    set_thread_runtime(runtime)
    return runtime, record_accepts(runtime.store, pause=0.01)


@pytest.fixture
async def cleanup():
    runtimes: list[ThreadRuntime] = []
    yield runtimes
    for runtime in runtimes:
        await drain_thread_runtime(runtime, timeout=TIMEOUT)
    set_thread_runtime(None)


def echo_agent(**kwargs) -> Agent:
    return Agent(id="bot", instructions=kwargs.pop("instructions", "Be brief."), model="local/echo",
                 memory=InMemoryMemory(), **kwargs)


async def send_all(agent: Agent, texts: list[str]) -> list:
    return await asyncio.wait_for(asyncio.gather(*(
        agent.send_message(text, resource_id=R, thread_id=f"t-{text}") for text in texts)), TIMEOUT)


async def test_one_at_a_time_by_default_in_their_order_of_arrival(cleanup):
    runtime, accepts = await started(1)
    cleanup.append(runtime)
    assert ThreadRuntime(InMemoryThreadStore(), None).accept_gate.limit == 1  # the default
    results = await send_all(echo_agent(), ["a", "b", "c", "d"])
    assert [r.action for r in results] == ["wake"] * 4
    assert accepts.most == 1
    assert accepts.steps == [("in", "t-a"), ("out", "t-a"), ("in", "t-b"), ("out", "t-b"), ("in", "t-c"),
                             ("out", "t-c"), ("in", "t-d"), ("out", "t-d")]
    for result in results:  # every wake ran its run
        assert (await asyncio.wait_for(result.output.get_full_output(), TIMEOUT)).text.startswith("echo: ")


async def test_the_limit_is_the_number_at_once_and_zero_is_none(cleanup):
    two, accepts = await started(2)
    cleanup.append(two)
    await send_all(echo_agent(), [str(n) for n in range(6)])
    assert accepts.most == 2
    none, accepts = await started(0)
    cleanup.append(none)
    await send_all(echo_agent(), [str(n) for n in range(6)])
    assert accepts.most == 6


async def test_an_input_whose_caller_gives_up_while_waiting_takes_no_turn(cleanup):
    runtime, accepts = await started(1)
    cleanup.append(runtime)
    agent = echo_agent()
    first = asyncio.ensure_future(agent.send_message("first", resource_id=R, thread_id="t-1"))
    gone = asyncio.ensure_future(agent.send_message("gone", resource_id=R, thread_id="t-2"))
    await asyncio.sleep(0.002)  # the first holds the turn, the second waits for it
    gone.cancel()
    third = await asyncio.wait_for(agent.send_message("third", resource_id=R, thread_id="t-3"), TIMEOUT)
    assert (await first).action == "wake" and third.action == "wake"
    assert gone.cancelled()
    assert accepts.began() == ["t-1", "t-3"]
    # and the turn is free again
    assert (await asyncio.wait_for(agent.send_message("fourth", resource_id=R, thread_id="t-4"), TIMEOUT)).action == "wake"


async def test_an_instructions_resolver_that_sends_an_input_is_not_held_back(cleanup):
    runtime, _ = await started(1)
    cleanup.append(runtime)
    sent, resolved = [], []

    async def instructions(request_context):
        # runs while the wake that starts this run holds the turn; a task it starts does too (the
        # side threads' runs resolve it as well: only the first sends)
        resolved.append(1)
        if len(resolved) == 1:
            sent.append(await agent.send_signal({"type": "user", "contents": "noted"}, resource_id=R,
                                                thread_id="t-side"))
            sent.append(await asyncio.ensure_future(agent.send_signal(
                {"type": "user", "contents": "noted again"}, resource_id=R, thread_id="t-side-2")))
        return "Be brief."

    agent = echo_agent(instructions=instructions)
    result = await asyncio.wait_for(agent.send_message("go", resource_id=R, thread_id="t-main"), TIMEOUT)
    assert result.action == "wake"
    assert [s.action for s in sent] == ["wake", "wake"]
    assert (await asyncio.wait_for(result.output.get_full_output(), TIMEOUT)).text == "echo: go"


async def test_a_thread_events_listener_that_sends_an_input_is_not_held_back(cleanup):
    runtime, _ = await started(1)
    cleanup.append(runtime)
    gate = asyncio.Event()

    async def held(request):
        await gate.wait()
        return text_step("first")
    agent = Agent(id="held", instructions="x", model=ScriptedModel([held, text_step("second")]),
                  memory=InMemoryMemory())
    other = echo_agent()
    replies = []

    async def listener(event):
        # called inside the acceptance that queued an input
        if event["count"] == 1 and not replies:
            replies.append(await other.send_signal({"type": "user", "contents": "queue grew"}, resource_id=R,
                                                   thread_id="t-watch"))

    busy = await agent.send_message("first", resource_id=R, thread_id="t-q")
    await agent.subscribe_thread_events(resource_id=R, thread_id="t-q", listener=listener)
    queued = await asyncio.wait_for(agent.queue_message("second", resource_id=R, thread_id="t-q"), TIMEOUT)
    assert queued.action == "deliver"  # for a run of its own, after the active one
    assert [r.action for r in replies] == ["wake"]
    gate.set()
    await asyncio.wait_for(busy.output.get_full_output(), TIMEOUT)


async def test_a_run_started_by_a_wake_sends_from_its_tools_without_waiting(cleanup):
    runtime, _ = await started(1)
    cleanup.append(runtime)

    async def tell(input: dict) -> dict:
        result = await agent.send_signal({"type": "user", "contents": input["text"]}, resource_id=R,
                                         thread_id="t-told")
        return {"action": result.action}

    agent = echo_agent(tools={"tell": create_tool(id="tell", description="Tell another thread.", execute=tell)})
    result = await asyncio.wait_for(agent.send_message('/tool tell {"text": "hello"}', resource_id=R,
                                                       thread_id="t-teller"), TIMEOUT)
    full = await asyncio.wait_for(result.output.get_full_output(), TIMEOUT)
    assert [r["payload"]["result"] for r in full.tool_results] == [{"action": "wake"}]


async def test_the_gate_serves_each_event_loop_it_is_used_on():
    gate = AcceptGate(1)

    async def contend() -> list[str]:
        order = []

        async def one(name):
            async with gate.turn():
                order.append(name)
                await asyncio.sleep(0.001)
        await asyncio.gather(one("a"), one("b"))
        return order

    assert await contend() == ["a", "b"]
    # another loop (another thread's): the semaphore of the first is not reused
    assert await asyncio.to_thread(asyncio.run, contend()) == ["a", "b"]


@pytest.mark.parametrize("limit", [-1, 1.5, True, "2"])
async def test_a_limit_that_is_not_a_whole_number_from_zero_up_is_refused(limit):
    with pytest.raises(ValueError, match="the number of inputs accepted at once must be an integer >= 0"):
        AcceptGate(limit)
