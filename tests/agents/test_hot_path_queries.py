"""The SQL statements of the agent's hot paths, pinned (the hand-written SQL of ``agents.sql``
exists for these counts): a ``generate`` on a memory thread, a send that wakes an idle thread, and
a message delivered into an active run. A change that adds a statement fails here and says which."""

from __future__ import annotations

import asyncio

import pytest

from agents.observability_services import spans_writer
from agents.runtime.testing import drain_thread_runtime
from agents.runtime.threads import ThreadRuntime, get_thread_runtime, set_thread_runtime
from agents.threads.store import DjangoThreadStore
from tests.agents.thread_harness import make_agent
from tests.queries import statements

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture(autouse=True)
def traces_in_the_background(settings):
    """As in production: a run's trace is queued for the trace writer, not stored on its path."""
    settings.MASTRA_TRACE_BATCH = True
    yield
    assert spans_writer().flush(timeout=10)


async def test_generate_on_a_memory_thread():
    agent = make_agent("bot")
    await agent.generate("first", memory={"resource": "u1", "thread": "t1"})  # the thread exists
    with statements() as seen:
        result = await agent.generate("second", memory={"resource": "u1", "thread": "t1"})
    assert result.text == "echo: second"
    assert seen == [
        "SELECT agents_thread", "SELECT agents_message",  # the thread and its history
        # the end, in one transaction: the thread touched, the new messages, the run record (its
        # trace is queued)
        "UPDATE agents_thread", "INSERT agents_message", "INSERT agents_run",
    ]


class QuietPubSub:
    """Pub/sub beside other processes that never has a message for this one."""

    async def publish(self, key, message):
        return None

    async def subscribe(self, key, callback):
        return lambda: None


def runtime_for(layout: str) -> ThreadRuntime:
    """The site's thread runtime alone (no channel layer, no broker, one serving process), or
    beside other processes (pub/sub between them)."""
    alone = layout == "alone"
    return ThreadRuntime(DjangoThreadStore(), None if alone else QuietPubSub(), single_process=alone)


@pytest.mark.parametrize("layout", ["alone", "beside other processes"])
async def test_a_send_that_wakes_an_idle_thread(layout):
    set_thread_runtime(runtime_for(layout))
    agent = make_agent("bot")
    await agent.send_message("first", resource_id="u1", thread_id="t1")
    await drain_thread_runtime(get_thread_runtime())
    with statements() as seen:
        sent = await agent.send_message("second", resource_id="u1", thread_id="t1")
        await drain_thread_runtime(get_thread_runtime())
    assert sent.action == "wake"
    # another process could store an input before this one listens to the thread: with other
    # processes, the run's first step boundary looks for one; alone, nothing was announced
    boundary = ["SELECT agents_threadinput"] if layout != "alone" else []
    assert seen == [
        # accept: the thread, its lease (locked), the signal id unused (among inputs and messages, one
        # statement), the lease taken, the inputs a dead owner left, the input, the run
        "SELECT agents_thread", "SELECT agents_threadlease", "SELECT agents_threadinput",
        "UPDATE agents_threadlease", "SELECT agents_threadinput", "INSERT agents_threadinput", "INSERT agents_run",
        "SELECT agents_message",  # the history, in the wake's transaction
        *boundary,
        # the end: the lease (locked), the events, the thread, the messages, the run, no next input
        "SELECT agents_threadlease", "INSERT agents_threadevent", "UPDATE agents_thread", "INSERT agents_message",
        "UPDATE agents_run", "SELECT agents_threadinput", "UPDATE agents_threadlease",
    ]


async def test_a_send_that_wakes_a_new_thread():
    """A thread's first input creates its row, and its lease with it: no lease row and no earlier
    input or message can point at a row that did not exist, so none is looked for."""
    set_thread_runtime(runtime_for("alone"))
    agent = make_agent("bot")
    with statements() as seen:
        sent = await agent.send_message("first", resource_id="u1", thread_id="t-new")
        await drain_thread_runtime(get_thread_runtime())
    assert sent.action == "wake"
    assert seen == [
        # accept: the thread (missing), its row, its lease (taken), the input, the run; no history
        "SELECT agents_thread", "INSERT agents_thread", "INSERT agents_threadlease", "INSERT agents_threadinput",
        "INSERT agents_run",
        # the end, as on any thread
        "SELECT agents_threadlease", "INSERT agents_threadevent", "UPDATE agents_thread", "INSERT agents_message",
        "UPDATE agents_run", "SELECT agents_threadinput", "UPDATE agents_threadlease",
    ]


async def test_a_message_delivered_into_an_active_run():
    agent = make_agent("bot", gate=0)
    woken = await agent.send_message("first", resource_id="u1", thread_id="t1")
    assert woken.action == "wake"
    runtime = get_thread_runtime()
    run = next(iter(runtime.active.values()))

    def settled() -> bool:  # in its model call (past its step's drain), its first events written
        return (agent.model.calls == 1 and not run.pending and (run.flushing is None or run.flushing.done())
                and len([task for task in runtime.busy_with() if "run_tail" not in task]) == 1)

    while not settled():
        await asyncio.sleep(0.01)
    with statements() as seen:
        sent = await agent.send_message("second", resource_id="u1", thread_id="t1")
    agent.model.open()
    await drain_thread_runtime(get_thread_runtime())
    assert (sent.action, sent.run_id) == ("deliver", woken.run_id)
    # the thread, its lease (locked), the signal id unused, the pending count (the cap), the input
    assert seen == ["SELECT agents_thread", "SELECT agents_threadlease", "SELECT agents_threadinput",
                    "SELECT agents_threadinput", "INSERT agents_threadinput"]
