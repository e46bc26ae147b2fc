"""queue_message, abort_thread / subscription.abort(), and the visible queue (list / cancel)."""

import asyncio

import pytest

from agents.runtime.errors import SignalError
from agents.runtime.providers.echo import EchoModel
from agents.runtime.testing import ScriptedModel, hang_step
from tests.agents.thread_harness import (bounded, buffered, collect, ends_run, finish, history, inputs, make_agent, settle, starts,
                            texts_by_run, types, wait_for_chunk, wait_idle)

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

R, T = "user-1", "thread-1"


@pytest.fixture(autouse=True)
async def _drain():
    yield
    await settle()


async def real_echo(request):
    """A scripted step that answers as ``local/echo`` would."""
    return [event async for event in EchoModel().stream(request)]


# -- queue_message ---------------------------------------------------------------------------------

async def test_queue_when_idle_wakes():
    agent = make_agent()
    r = await agent.queue_message("queued", resource_id=R, thread_id=T)
    assert r.action == "wake" and r.output is not None and r.run_id == r.output.run_id
    assert (await bounded(r.output.get_full_output())).text == "echo: queued"


async def test_queue_when_active_runs_later_as_new_runs_in_order():
    agent = make_agent(gate=0)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    wake = await agent.send_message("first", resource_id=R, thread_id=T)
    q1 = await agent.queue_message("q1", resource_id=R, thread_id=T)
    q2 = await agent.queue_message({"contents": "q2", "attributes": {"n": 2}}, resource_id=R, thread_id=T)
    assert (q1.action, q2.action) == ("deliver", "deliver")
    assert q1.output is None and q2.output is None
    assert len({wake.run_id, q1.run_id, q2.run_id}) == 3
    rows = await inputs(T)
    assert [(row["kind"], row["status"], row["run_id"]) for row in rows[1:]] == [
        ("queue", "pending", q1.run_id), ("queue", "pending", q2.run_id)]
    first = await finish(agent, wake.output)
    # the active run does not take queued messages
    assert [s.text for s in first.steps] == ["echo: first"]
    chunks = await collect(sub, n=3)
    assert starts(chunks) == [wake.run_id, q1.run_id, q2.run_id]
    assert texts_by_run(chunks) == {wake.run_id: "echo: first", q1.run_id: "echo: q1",
                                    q2.run_id: 'echo: <user n="2">q2</user>'}
    # each run ends (finish) before the next starts
    order = [(c["type"], c["runId"]) for c in chunks if c["type"] in ("start", "finish")]
    assert order == [("start", wake.run_id), ("finish", wake.run_id), ("start", q1.run_id), ("finish", q1.run_id),
                     ("start", q2.run_id), ("finish", q2.run_id)]
    assert [c["seq"] for c in chunks] == list(range(1, len(chunks) + 1))
    rows = await inputs(T)
    assert [(row["status"], row["consumed_by"]) for row in rows[1:]] == [("consumed", q1.run_id),
                                                                        ("consumed", q2.run_id)]
    await wait_idle(R, T)


async def test_deliver_after_queue_keeps_order():
    """A message delivered after a queued one waits for the queued run (inputs keep their order)."""
    agent = make_agent(gate=0)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    wake = await agent.send_message("first", resource_id=R, thread_id=T)
    q = await agent.queue_message("queued", resource_id=R, thread_id=T)
    first = await finish(agent, wake.output)
    chunks = await collect(sub, n=2)
    assert starts(chunks) == [wake.run_id, q.run_id]
    assert len(first.steps) == 1


async def test_queue_stream_options_apply_to_the_queued_run():
    from agents.runtime import create_tool

    tool = create_tool(id="t", execute=lambda input: {"ok": True})
    agent = make_agent(gate=0, tools={"t": tool})
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    wake = await agent.send_message("first", resource_id=R, thread_id=T)
    q = await agent.queue_message("/tool t {}", resource_id=R, thread_id=T,
                                  if_idle={"stream_options": {"max_steps": 1}})
    await finish(agent, wake.output)
    chunks = await collect(sub, n=2)
    finishes = [c for c in chunks if c["type"] == "finish"]
    assert [f["runId"] for f in finishes] == [wake.run_id, q.run_id]
    assert finishes[1]["payload"]["stepResult"]["reason"] == "tool-calls"
    assert [c["type"] for c in chunks if c["runId"] == q.run_id].count("step-start") == 1


# -- abort -----------------------------------------------------------------------------------------

async def test_abort_thread_when_idle_returns_false():
    agent = make_agent()
    assert await agent.abort_thread(resource_id=R, thread_id=T) is False
    r = await agent.send_message("x", resource_id=R, thread_id=T)
    await bounded(r.output.get_full_output())
    await wait_idle(R, T)
    assert await agent.abort_thread(resource_id=R, thread_id=T) is False
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    assert await sub.abort() is False


@pytest.mark.parametrize("how", ["abort_thread", "subscription"])
async def test_abort_active_run(how):
    model = ScriptedModel([hang_step()])
    agent = make_agent(model=model)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    other = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("hang", resource_id=R, thread_id=T)
    await wait_for_chunk(sub, lambda c: c["type"] == "step-start")
    if how == "abort_thread":
        assert await agent.abort_thread(resource_id=R, thread_id=T) is True
    else:
        assert await sub.abort() is True
    result = await bounded(r.output.get_full_output())
    assert result.finish_reason == "abort"
    got = await collect(other, "abort")
    # the thread stream of an aborted run ends at its abort chunk (Mastra: ..., text-delta, abort)
    assert types(got) == ["start", "data-user-message", "step-start", "abort"]
    assert got[-1] == {"type": "abort", "runId": r.run_id, "from": "AGENT", "payload": {"reason": "aborted"},
                       "seq": 4}
    rest = await collect(sub, "abort")
    assert types(rest) == ["abort"]
    assert sub.active_run_id() is None and other.active_run_id() is None
    await wait_idle(R, T)
    await settle()
    assert buffered(sub) == [] and buffered(other) == []  # nothing after the abort
    # the run's own output still ends with finish (reason abort), as Mastra's
    assert [c["type"] for c in r.output.chunks][-2:] == ["abort", "finish"]
    assert await agent.abort_thread(resource_id=R, thread_id=T) is False


async def test_inputs_behind_an_aborted_run_run_next():
    model = ScriptedModel([hang_step(), real_echo, real_echo])
    agent = make_agent(model=model)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("hang", resource_id=R, thread_id=T)
    head = await wait_for_chunk(sub, lambda c: c["type"] == "step-start")
    delivered = await agent.send_message("delivered", resource_id=R, thread_id=T)
    queued = await agent.queue_message("queued", resource_id=R, thread_id=T)
    assert delivered.action == "deliver" and delivered.run_id == r.run_id
    assert queued.action == "deliver"
    assert await agent.abort_thread(resource_id=R, thread_id=T) is True
    assert (await bounded(r.output.get_full_output())).finish_reason == "abort"
    chunks = head + await collect(sub, ends_run, n=3)
    runs = starts(chunks)
    assert len(runs) == 3 and runs[0] == r.run_id and runs[2] == queued.run_id
    texts = texts_by_run(chunks)
    # the aborted run never answered, so the echo model answers every input since its last answer
    assert texts[runs[1]] == "echo: hang\necho: delivered"
    assert texts[runs[2]] == "echo: queued"
    assert model.calls == 3
    assert all(row["status"] == "consumed" for row in await inputs(T))
    await wait_idle(R, T)


async def test_abort_of_one_thread_leaves_others_running():
    agent, other = make_agent(gate=0), make_agent("bot-b")
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id="A")
    a = await agent.send_message("a\nb\nc", resource_id=R, thread_id="A")
    b = await other.send_message("a\nb\nc", resource_id=R, thread_id="B")
    await wait_for_chunk(sub, lambda c: c["type"] == "step-start")
    assert await agent.abort_thread(resource_id=R, thread_id="A") is True
    assert (await bounded(a.output.get_full_output())).finish_reason == "abort"
    assert (await bounded(b.output.get_full_output())).finish_reason == "stop"


# -- list / cancel ---------------------------------------------------------------------------------

async def test_list_and_cancel_queued_inputs():
    model = ScriptedModel([hang_step(), real_echo, real_echo])
    agent = make_agent(model=model)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("hang", resource_id=R, thread_id=T)
    head = await wait_for_chunk(sub, lambda c: c["type"] == "step-start")
    q1 = await agent.queue_message("q1", resource_id=R, thread_id=T)
    q2 = await agent.queue_message("q2", resource_id=R, thread_id=T)
    d = await agent.send_message("d", resource_id=R, thread_id=T)
    p = await agent.send_message("p", resource_id=R, thread_id=T, if_active={"behavior": "persist"})
    assert p.action == "persist"
    listed = await agent.list_queued_inputs(resource_id=R, thread_id=T)
    assert [(i["id"], i["kind"], i["runId"], i["agentId"]) for i in listed] == [
        (q1.signal["id"], "queue", q1.run_id, "bot"), (q2.signal["id"], "queue", q2.run_id, "bot"),
        (d.signal["id"], "deliver", r.run_id, "bot")]
    assert [i["signal"]["contents"] for i in listed] == ["q1", "q2", "d"]
    assert all(isinstance(i["createdAt"], str) for i in listed)
    assert await agent.list_queued_inputs(resource_id=R, thread_id="other") == []
    # another resource's thread T is another thread: nothing waits there, nothing of R's is cancelled
    assert await agent.list_queued_inputs(resource_id="other", thread_id=T) == []
    assert await agent.cancel_queued_inputs([q1.signal["id"]], resource_id="other", thread_id=T) == 0
    assert await agent.cancel_queued_inputs([q1.signal["id"], d.signal["id"], "no-such-id"],
                                            resource_id=R, thread_id=T) == 2
    assert await agent.cancel_queued_inputs([q1.signal["id"]], resource_id=R, thread_id=T) == 0
    assert await agent.cancel_queued_inputs([], resource_id=R, thread_id=T) == 0
    listed = await agent.list_queued_inputs(resource_id=R, thread_id=T)
    assert [i["id"] for i in listed] == [q2.signal["id"]]
    assert await agent.abort_thread(resource_id=R, thread_id=T) is True
    chunks = head + await collect(sub, ends_run, n=2)
    runs = starts(chunks)
    assert runs == [r.run_id, q2.run_id]
    # the cancelled inputs never ran; "hang" (never answered) and the persisted "p" are echoed with
    # q2, in the order they were accepted
    assert texts_by_run(chunks)[q2.run_id].split("\n") == ["echo: hang", "echo: p", "echo: q2"]
    await wait_idle(R, T)
    assert model.calls == 2
    assert await agent.list_queued_inputs(resource_id=R, thread_id=T) == []
    statuses = {row["input_id"]: row["status"] for row in await inputs(T)}
    assert statuses[q1.signal["id"]] == statuses[d.signal["id"]] == "cancelled"
    assert statuses[q2.signal["id"]] == "consumed"
    # the history holds the accepted inputs in order, and neither cancelled one
    stored = await history(T)
    assert [(m["role"], m["content"]) for m in stored if m["role"] == "user"] == [
        ("user", "hang"), ("user", "p"), ("user", "q2")], stored


@pytest.mark.parametrize("ids", ["abc", None, [1, 2], ("a", 3)])
async def test_cancel_needs_a_list_of_ids(ids):
    agent = make_agent()
    with pytest.raises(SignalError) as info:
        await agent.cancel_queued_inputs(ids, resource_id=R, thread_id=T)
    assert info.value.code == "invalid_ids"


async def test_cancelled_delivery_is_not_drained_by_the_active_run():
    agent = make_agent(gate=0)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    wake = await agent.send_message("first", resource_id=R, thread_id=T)
    await wait_for_chunk(sub, lambda c: c["type"] == "step-start")
    d = await agent.send_message("never", resource_id=R, thread_id=T)
    assert await agent.cancel_queued_inputs([d.signal["id"]], resource_id=R, thread_id=T) == 1
    result = await finish(agent, wake.output)
    assert [s.text for s in result.steps] == ["echo: first"]
    await wait_idle(R, T)
