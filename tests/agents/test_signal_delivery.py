"""Delivery rules that depend on the signal or the call, as Mastra has them: a ``transient``
signal is streamed and never stored; ``queue_message`` always wakes an idle thread."""

import asyncio

import pytest

from agents.runtime.errors import SignalError
from tests.agents.thread_harness import (bounded, buffered, collect, counts, finish, history, make_agent, settle, types,
                            user_contents, wait_for_chunk)

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

R, T = "user-1", "thread-1"
REMINDER = {"type": "reactive", "contents": "temp", "transient": True}


@pytest.fixture(autouse=True)
async def _drain():
    yield
    await settle()


async def test_a_transient_signal_wakes_is_echoed_and_is_not_stored():
    agent = make_agent()
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_signal(REMINDER, resource_id=R, thread_id=T)
    assert r.action == "wake" and r.signal["transient"] is True
    result = await bounded(r.output.get_full_output())
    assert result.text == "echo: <system-reminder>temp</system-reminder>"
    chunks = await collect(sub)
    assert types(chunks)[:3] == ["start", "data-signal", "step-start"]
    echo = chunks[1]
    assert echo["transient"] is True and echo["data"]["transient"] is True and echo["data"]["id"] == r.signal["id"]
    stored = await history(T)
    assert [m["role"] for m in stored] == ["assistant"]
    assert r.signal["id"] not in [m["id"] for m in stored]


async def test_a_transient_signal_delivered_into_a_run_reaches_the_model_and_is_not_stored():
    agent = make_agent(gate=0)
    watch = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    wake = await agent.send_message("first", resource_id=R, thread_id=T)
    await wait_for_chunk(watch, lambda c: c["type"] == "step-start")
    r = await agent.send_signal(REMINDER, resource_id=R, thread_id=T)
    assert r.action == "deliver" and r.run_id == wake.run_id
    result = await finish(agent, wake.output)
    assert [s.text for s in result.steps] == ["echo: first", "echo: <system-reminder>temp</system-reminder>"]
    chunks = await collect(watch)
    assert [c["data"]["transient"] for c in chunks if c["type"] == "data-signal"] == [True]
    assert user_contents(await history(T)) == ["first"]


@pytest.mark.parametrize("branch", ["if_idle", "if_active"])
async def test_a_transient_signal_is_discarded_where_it_would_be_persisted(branch):
    agent = make_agent(gate=0)
    watch = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    wake = None
    if branch == "if_active":
        wake = await agent.send_message("first", resource_id=R, thread_id=T)
        await wait_for_chunk(watch, lambda c: c["type"] == "step-start")
    before = await counts()
    r = await agent.send_signal(REMINDER, resource_id=R, thread_id=T, **{branch: {"behavior": "persist"}})
    assert r.action == "discard" and r.run_id is None and r.output is None
    after = await counts()
    assert (after["inputs"], after["messages"]) == (before["inputs"], before["messages"])
    if wake is not None:
        result = await finish(agent, wake.output)
        assert [s.text for s in result.steps] == ["echo: first"]
        assert user_contents(await history(T)) == ["first"]
        chunks = await collect(watch)
    else:  # an idle discard publishes nothing
        await asyncio.sleep(0.05)
        chunks = buffered(watch)
        assert chunks == [] and (await counts())["events"] == 0
    assert [c for c in chunks if c["type"].startswith("data-") and c["data"]["id"] == r.signal["id"]] == []


@pytest.mark.parametrize("behavior", ["persist", "discard"])
async def test_queue_message_always_wakes_an_idle_thread(behavior):
    agent = make_agent()
    r = await agent.queue_message("queued", resource_id=R, thread_id=T, if_idle={"behavior": behavior})
    assert r.action == "wake"
    result = await bounded(r.output.get_full_output())
    assert result.text == "echo: queued"
    assert user_contents(await history(T)) == ["queued"]


async def test_queue_message_needs_a_thread():
    agent = make_agent()
    with pytest.raises(SignalError) as info:
        await agent.queue_message("queued", run_id="some-run")
    assert (info.value.code, str(info.value)) == ("missing_target",
                                                  "resourceId and threadId are required to queue a message")
    assert await counts() == {"inputs": 0, "messages": 0, "events": 0, "leases": 0}


async def test_persisting_into_an_active_run_needs_a_thread():
    agent = make_agent()
    with pytest.raises(SignalError) as info:
        await agent.send_message("note", run_id="some-run", if_active={"behavior": "persist"})
    assert (info.value.code, str(info.value)) == ("missing_target",
                                                  "resourceId and threadId are required to persist an active signal")
    assert await counts() == {"inputs": 0, "messages": 0, "events": 0, "leases": 0}
