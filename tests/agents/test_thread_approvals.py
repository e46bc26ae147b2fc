"""A thread run suspended on a tool approval holds the thread (DESIGN §4): same-agent inputs are
delivered into it and drained after the resume, other agents are blocked, abort releases it."""

import pytest

from agents.models import ThreadLease
from agents.runtime import ToolApprovalError, create_tool
from agents.runtime.signal import signal_wire
from tests.agents.thread_harness import (bounded, collect, counts, db, history, inputs, make_agent, settle, starts,
                            texts_by_run, types, wait_for_chunk, wait_idle)

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

R, T = "user-1", "thread-1"


@pytest.fixture(autouse=True)
async def _drain():
    yield
    await settle()


def approval_agent(id: str = "bot", executed: list | None = None):
    done = executed if executed is not None else []

    def execute(input):
        done.append(input)
        return {"deleted": input.get("path")}

    tool = create_tool(id="delete", execute=execute, require_approval=True)
    return make_agent(id, tools={"delete": tool}), done


async def suspend(agent, sub):
    r = await agent.send_message('/tool delete {"path": "/tmp/x"}', resource_id=R, thread_id=T)
    result = await bounded(r.output.get_full_output())
    assert result.finish_reason == "suspended"
    chunks = await collect(sub)
    approval = [c for c in chunks if c["type"] == "tool-call-approval"]
    assert len(approval) == 1
    assert chunks[-1]["payload"]["stepResult"]["reason"] == "suspended"
    return r, approval[0]["payload"]["toolCallId"], chunks


async def lease() -> ThreadLease:
    return await db(lambda: ThreadLease.objects.get(thread__resource_id=R, thread__thread_id=T))


async def test_suspension_holds_the_thread():
    agent, executed = approval_agent()
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r, call_id, chunks = await suspend(agent, sub)
    held = await lease()
    assert (held.status, held.owner_run_id, held.expires_at) == ("suspended", r.run_id, None)
    # a finish with reason suspended is not the end of the run for subscribers
    assert sub.active_run_id() == r.run_id
    late = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    assert late.active_run_id() == r.run_id
    assert types(chunks).count("start") == 1 and executed == []


async def test_same_agent_input_is_delivered_and_drained_after_approval():
    agent, executed = approval_agent()
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r, call_id, _ = await suspend(agent, sub)
    d = await agent.send_message("also this", resource_id=R, thread_id=T)
    assert d.action == "deliver" and d.run_id == r.run_id and d.output is None
    s = await agent.send_signal({"type": "notification", "contents": "ci"}, resource_id=R, thread_id=T)
    assert s.action == "deliver" and s.run_id == r.run_id
    by_run = await agent.send_message("by run id", run_id=r.run_id)
    assert by_run.action == "deliver" and by_run.run_id == r.run_id
    assert [row["status"] for row in await inputs(T)] == ["consumed", "pending", "pending", "pending"]
    output = await agent.approve_tool_call(run_id=r.run_id, tool_call_id=call_id)
    result = await bounded(output.get_full_output())
    assert executed == [{"path": "/tmp/x"}]
    assert result.finish_reason == "stop" and result.run_id == r.run_id
    assert result.text == ('echo: tool delete returned {"deleted": "/tmp/x"}\necho: also this\n'
                           'echo: <notification>ci</notification>\necho: by run id')
    resumed = await collect(sub)
    assert starts(resumed) == [r.run_id] and resumed[0]["payload"] == {"resumed": True}
    kinds = types(resumed)
    assert kinds.index("tool-result") < kinds.index("data-user-message") < kinds.index("data-signal") \
        < kinds.index("step-start")
    assert [c["data"]["id"] for c in resumed if c["type"] in ("data-user-message", "data-signal")] == [
        d.signal["id"], s.signal["id"], by_run.signal["id"]]
    assert all(row["status"] == "consumed" and row["consumed_by"] == r.run_id for row in await inputs(T))
    await wait_idle(R, T)
    roles = [m["role"] for m in await history(T)]
    assert roles == ["user", "assistant", "tool", "user", "user", "user", "assistant"]


async def test_decline_also_drains_waiting_inputs():
    agent, executed = approval_agent()
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r, call_id, _ = await suspend(agent, sub)
    await agent.send_message("after decline", resource_id=R, thread_id=T)
    output = await agent.decline_tool_call(run_id=r.run_id, tool_call_id=call_id)
    result = await bounded(output.get_full_output())
    assert executed == []
    assert result.text == ('echo: tool delete failed "Tool call was not approved by the user"\n'
                           'echo: after decline')
    await wait_idle(R, T)


async def test_queue_while_suspended_runs_after_the_resumed_run():
    agent, _ = approval_agent()
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r, call_id, _ = await suspend(agent, sub)
    q = await agent.queue_message("queued", resource_id=R, thread_id=T)
    assert q.action == "deliver" and q.run_id != r.run_id
    output = await agent.approve_tool_call(run_id=r.run_id, tool_call_id=call_id)
    await bounded(output.get_full_output())
    chunks = await collect(sub, n=2)
    assert starts(chunks) == [r.run_id, q.run_id]
    assert texts_by_run(chunks)[q.run_id] == "echo: queued"
    await wait_idle(R, T)


async def test_other_agents_wake_is_blocked_while_suspended():
    agent, _ = approval_agent()
    other = make_agent("other")
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r, call_id, _ = await suspend(agent, sub)
    before = await counts()
    for call in (lambda: other.send_message("hi", resource_id=R, thread_id=T),
                 lambda: other.queue_message("hi", resource_id=R, thread_id=T),
                 lambda: other.send_signal({"type": "notification", "contents": "n"}, resource_id=R, thread_id=T)):
        b = await call()
        assert (b.action, b.reason, b.run_id, b.output) == ("blocked", "thread-blocked", r.run_id, None)
        assert b.to_dict() == {"accepted": True, "action": "blocked", "runId": r.run_id,
                               "signal": signal_wire(b.signal), "reason": "thread-blocked"}
    after = await counts()
    assert (after["inputs"], after["messages"]) == (before["inputs"], before["messages"])
    # the thread is idle for the other agent: its if_idle applies (a discard is still a discard)
    assert (await other.send_message("x", resource_id=R, thread_id=T,
                                     if_idle={"behavior": "discard"})).action == "discard"
    held = await lease()
    assert (held.status, held.owner_run_id) == ("suspended", r.run_id)
    output = await agent.approve_tool_call(run_id=r.run_id, tool_call_id=call_id)
    await bounded(output.get_full_output())
    await wait_idle(R, T)
    # once released, the other agent may wake the thread
    w = await other.send_message("now", resource_id=R, thread_id=T)
    assert w.action == "wake"
    await bounded(w.output.get_full_output())


async def test_abort_of_a_suspended_thread_releases_it():
    agent, executed = approval_agent()
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r, call_id, _ = await suspend(agent, sub)
    assert await agent.abort_thread(resource_id=R, thread_id=T) is True
    got = await collect(sub, "abort")
    assert got == [{"type": "abort", "runId": r.run_id, "from": "AGENT", "payload": {"reason": "aborted"},
                    "seq": got[0]["seq"]}]
    assert sub.active_run_id() is None
    released = await lease()
    assert (released.status, released.owner_run_id) == ("idle", None)
    assert await agent.abort_thread(resource_id=R, thread_id=T) is False
    with pytest.raises(ToolApprovalError):
        await agent.approve_tool_call(run_id=r.run_id, tool_call_id=call_id)
    assert executed == []
    w = await agent.send_message("fresh", resource_id=R, thread_id=T)
    assert w.action == "wake"
    await bounded(w.output.get_full_output())


async def test_subscription_abort_of_a_suspended_thread():
    agent, _ = approval_agent()
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r, _call, _ = await suspend(agent, sub)
    assert await sub.abort() is True
    await collect(sub, "abort")
    await wait_idle(R, T)


async def test_inputs_waiting_on_an_aborted_suspended_run_run_next():
    agent, executed = approval_agent()
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r, call_id, _ = await suspend(agent, sub)
    d = await agent.send_message("waiting", resource_id=R, thread_id=T)
    assert d.action == "deliver" and d.run_id == r.run_id
    assert await agent.abort_thread(resource_id=R, thread_id=T) is True
    chunks = await collect(sub, n=1)
    assert types(chunks)[0] == "abort"
    runs = starts(chunks)
    assert len(runs) == 1 and runs[0] != r.run_id
    # the suspended run's assistant tool call is in the history; its answer never came
    assert texts_by_run(chunks)[runs[0]] == "echo: waiting"
    assert executed == []
    await wait_idle(R, T)
    assert all(row["status"] == "consumed" for row in await inputs(T))
