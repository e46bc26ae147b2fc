"""send_message / send_signal: the decision table (DESIGN §4), targets, attributes per branch,
stream options of a wake, and delivery into an active run."""

import asyncio
from datetime import datetime

import pytest

from agents.runtime import create_tool
from agents.runtime.errors import ModelError, SignalError
from agents.runtime.output import AgentOutput
from agents.runtime.signal import signal_wire
from agents.runtime.testing import ScriptedModel, text_step
from tests.agents.thread_harness import (bounded, buffered, collect, counts, db, finish, finish_of, history, inputs, make_agent,
                            settle, starts, texts_by_run, types, user_contents, wait_for_chunk, wait_idle)

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

R, T = "user-1", "thread-1"


@pytest.fixture(autouse=True)
async def _drain():
    yield
    await settle()


SENDERS = {
    # name: (send(agent, **options), signal type, tag, what the model sees, echo chunk type)
    "message": (lambda agent, **kw: agent.send_message("hello", **kw),
                "user", "user", "hello", "data-user-message"),
    "signal": (lambda agent, **kw: agent.send_signal({"type": "notification", "contents": "hello"}, **kw),
               "notification", "notification", "<notification>hello</notification>", "data-signal"),
}


def check_signal(signal: dict, kind: str, tag: str) -> None:
    assert {"id", "type", "tagName", "createdAt", "acceptedAt"} <= set(signal)
    assert (signal["type"], signal["tagName"]) == (kind, tag)
    assert isinstance(signal["id"], str) and signal["id"]
    created = datetime.fromisoformat(signal["createdAt"])
    accepted = datetime.fromisoformat(signal["acceptedAt"])
    assert created.tzinfo is not None and accepted.tzinfo is not None
    assert accepted >= created


async def start_slow_run(agent, text: str = "first"):
    """Wake the thread with an input the echo model answers slowly and wait until its first model
    step has started (inputs sent before that are answered by the first step); returns the wake."""
    watch = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message(text, resource_id=R, thread_id=T)
    assert r.action == "wake"
    await wait_for_chunk(watch, lambda c: c["type"] == "step-start")
    watch.unsubscribe()
    return r


# -- idle ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sender", SENDERS)
async def test_idle_wake(sender):
    send, kind, tag, seen, echo_type = SENDERS[sender]
    agent = make_agent()
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await send(agent, resource_id=R, thread_id=T)
    assert r.action == "wake" and r.accepted is True and r.skipped is False
    assert isinstance(r.output, AgentOutput) and r.run_id == r.output.run_id
    check_signal(r.signal, kind, tag)
    assert r.signal["contents"] == "hello"
    result = await bounded(r.output.get_full_output())
    assert result.run_id == r.run_id and result.finish_reason == "stop" and len(result.steps) == 1
    assert result.text == f"echo: {seen}"
    chunks = await collect(sub)
    assert types(chunks) == ["start", echo_type, "step-start", "text-start", "text-delta",
                             "text-end", "step-finish", "finish"]
    assert {c["runId"] for c in chunks} == {r.run_id}
    # the wake's own output carries the input echo as the subscription does (and no seq)
    assert [c async for c in r.output.full_stream] == [{k: v for k, v in c.items() if k != "seq"} for c in chunks]
    echo = chunks[1]
    assert echo["transient"] is True and echo["data"]["id"] == r.signal["id"]
    assert echo["data"]["acceptedAt"] == r.signal["acceptedAt"]
    assert await inputs(T) == [{"input_id": r.signal["id"], "kind": "deliver", "status": "consumed",
                                "run_id": r.run_id, "consumed_by": r.run_id, "agent_id": "bot"}]
    stored = await history(T)
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", seen), ("assistant", [{"type": "text", "text": f"echo: {seen}"}])]
    assert stored[0]["id"] == r.signal["id"] and stored[0]["type"] == "signal"
    await wait_idle(R, T)


@pytest.mark.parametrize("sender", SENDERS)
async def test_idle_persist(sender):
    send, kind, tag, seen, echo_type = SENDERS[sender]
    agent = make_agent()
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await send(agent, resource_id=R, thread_id=T, if_idle={"behavior": "persist"})
    assert r.action == "persist" and r.run_id is None and r.output is None
    check_signal(r.signal, kind, tag)
    # stored before the call returned; no input waits for a run
    stored = await history(T)
    assert [(m["id"], m["role"], m["content"]) for m in stored] == [(r.signal["id"], "user", seen)]
    assert await inputs(T) == []
    # subscribers see a short synthetic run: start, echo, finish
    chunks = await collect(sub)
    assert types(chunks) == ["start", echo_type, "finish"]
    assert [c["seq"] for c in chunks] == [1, 2, 3]
    run_ids = {c["runId"] for c in chunks}
    assert len(run_ids) == 1 and None not in run_ids
    assert chunks[1]["data"]["id"] == r.signal["id"] and chunks[1]["transient"] is True
    assert chunks[2]["payload"]["stepResult"]["reason"] == "stop"
    assert sub.active_run_id() is None
    await wait_idle(R, T)
    # the model sees it in the next run
    r2 = await agent.send_message("next", resource_id=R, thread_id=T)
    assert r2.action == "wake"
    assert (await bounded(r2.output.get_full_output())).text == f"echo: {seen}\necho: next"


@pytest.mark.parametrize("sender", SENDERS)
async def test_idle_discard(sender):
    send, kind, tag, _seen, _echo = SENDERS[sender]
    agent = make_agent()
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await send(agent, resource_id=R, thread_id=T, if_idle={"behavior": "discard"})
    assert r.action == "discard" and r.run_id is None and r.output is None
    check_signal(r.signal, kind, tag)
    c = await counts()
    assert (c["inputs"], c["messages"], c["events"]) == (0, 0, 0)
    await asyncio.sleep(0.05)
    assert buffered(sub) == []


# -- active ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("sender", SENDERS)
async def test_active_deliver(sender):
    send, kind, tag, seen, echo_type = SENDERS[sender]
    agent = make_agent(gate=0)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    wake = await start_slow_run(agent)
    r = await send(agent, resource_id=R, thread_id=T)
    assert r.action == "deliver" and r.run_id == wake.run_id and r.output is None
    check_signal(r.signal, kind, tag)
    rows = await inputs(T)
    assert rows[1] == {"input_id": r.signal["id"], "kind": "deliver", "status": "pending", "run_id": wake.run_id,
                       "consumed_by": None, "agent_id": "bot"}
    result = await finish(agent, wake.output)
    assert [s.text for s in result.steps] == ["echo: first", f"echo: {seen}"]
    assert result.run_id == wake.run_id and result.finish_reason == "stop"
    chunks = await collect(sub)
    assert [c["runId"] for c in chunks if c["type"] == "start"] == [wake.run_id]
    echoes = [c for c in chunks if c["type"] == echo_type and c["data"]["id"] == r.signal["id"]]
    assert len(echoes) == 1 and echoes[0]["runId"] == wake.run_id
    rows = await inputs(T)
    assert rows[1]["status"] == "consumed" and rows[1]["consumed_by"] == wake.run_id
    stored = await history(T)
    assert user_contents(stored) == ["first", seen]
    assert stored[2]["id"] == r.signal["id"]


@pytest.mark.parametrize("sender", SENDERS)
async def test_active_persist(sender):
    send, kind, tag, seen, echo_type = SENDERS[sender]
    agent = make_agent(gate=0)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    wake = await start_slow_run(agent)
    r = await send(agent, resource_id=R, thread_id=T, if_active={"behavior": "persist"})
    assert r.action == "persist" and r.run_id is None and r.output is None
    check_signal(r.signal, kind, tag)
    # stored before the call returned, as an input the owner writes into the history in order
    assert [row["kind"] for row in await inputs(T)] == ["deliver", "echo"]
    assert await history(T) == []
    result = await finish(agent, wake.output)
    # the active run does not take it: no extra step
    assert [s.text for s in result.steps] == ["echo: first"]
    chunks = await collect(sub)
    echoes = [c for c in chunks if c["type"] == echo_type and c["data"]["id"] == r.signal["id"]]
    assert len(echoes) == 1 and echoes[0]["transient"] is True
    assert all(row["status"] == "consumed" for row in await inputs(T))
    # after the run's own messages, where it arrived
    assert user_contents(await history(T)) == ["first", seen]
    assert (await history(T))[-1]["id"] == r.signal["id"]


@pytest.mark.parametrize("sender", SENDERS)
async def test_active_discard(sender):
    send, kind, tag, _seen, echo_type = SENDERS[sender]
    agent = make_agent(gate=0)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    wake = await start_slow_run(agent)
    before = await counts()
    r = await send(agent, resource_id=R, thread_id=T, if_active={"behavior": "discard"})
    assert r.action == "discard" and r.run_id is None and r.output is None
    check_signal(r.signal, kind, tag)
    after = await counts()
    assert (after["inputs"], after["messages"]) == (before["inputs"], before["messages"])
    result = await finish(agent, wake.output)
    assert [s.text for s in result.steps] == ["echo: first"]
    chunks = await collect(sub)
    assert [c for c in chunks if c["type"].startswith("data-") and c["data"]["id"] == r.signal["id"]] == []
    assert user_contents(await history(T)) == ["first"]


async def test_another_agents_input_is_accepted_behind_the_running_run():
    """Mastra: another agent's running run does not block; the input runs under a new run id
    once that run ends, as the sender's own idle wake (its ``if_idle`` applies)."""
    agent, other = make_agent(gate=0), make_agent("other")
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    wake = await start_slow_run(agent)
    r = await other.send_message("hi", resource_id=R, thread_id=T, if_idle={"attributes": {"from": "other"}},
                                 if_active={"attributes": {"active": True}})
    assert (r.action, r.output, r.reason) == ("deliver", None, None)
    assert r.run_id not in (None, wake.run_id)
    assert r.to_dict() == {"accepted": True, "action": "deliver", "runId": r.run_id, "signal": signal_wire(r.signal)}
    assert r.signal["attributes"] == {"from": "other"}
    assert [(i["kind"], i["status"], i["run_id"], i["agent_id"]) for i in await inputs(T)][1:] == [
        ("queue", "pending", r.run_id, "other")]
    first = await finish(agent, wake.output)
    assert [s.text for s in first.steps] == ["echo: first"]
    chunks = await collect(sub, n=2)
    assert starts(chunks) == [wake.run_id, r.run_id]
    assert texts_by_run(chunks)[r.run_id] == 'echo: <user from="other">hi</user>'
    await wait_idle(R, T)
    assert user_contents(await history(T)) == ["first", '<user from="other">hi</user>']


async def test_another_agents_persist_and_discard_while_running():
    agent, other = make_agent(gate=0), make_agent("other")
    wake = await start_slow_run(agent)
    before = await counts()
    d = await other.send_message("x", resource_id=R, thread_id=T, if_idle={"behavior": "discard"})
    assert (d.action, d.run_id) == ("discard", None)
    after = await counts()
    assert (after["inputs"], after["messages"]) == (before["inputs"], before["messages"])
    # persist is not a run: another agent may still store into the thread's history
    p = await other.send_message("note", resource_id=R, thread_id=T, if_idle={"behavior": "persist"})
    assert (p.action, p.run_id) == ("persist", None)
    await finish(agent, wake.output)
    await wait_idle(R, T)
    assert user_contents(await history(T)) == ["first", "note"]


# -- attributes per branch -------------------------------------------------------------------------

BRANCHES = dict(if_active={"attributes": {"delivery": "while-active"}},
                if_idle={"attributes": {"delivery": "new-message"}})


async def test_attributes_idle_branch():
    agent = make_agent()
    r = await agent.send_message({"contents": "Also cover the edge cases.", "attributes": {"source": "chat"}},
                                 resource_id=R, thread_id=T, **BRANCHES)
    assert r.signal["attributes"] == {"source": "chat", "delivery": "new-message"}
    result = await bounded(r.output.get_full_output())
    assert result.text == 'echo: <user source="chat" delivery="new-message">Also cover the edge cases.</user>'


async def test_attributes_active_branch():
    agent = make_agent(gate=0)
    wake = await start_slow_run(agent)
    r = await agent.send_message({"contents": "Also cover the edge cases.", "attributes": {"source": "chat"}},
                                 resource_id=R, thread_id=T, **BRANCHES)
    assert r.action == "deliver"
    assert r.signal["attributes"] == {"source": "chat", "delivery": "while-active"}
    result = await finish(agent, wake.output)
    assert result.text == 'echo: <user source="chat" delivery="while-active">Also cover the edge cases.</user>'


async def test_branch_attributes_override_and_make_plain_message_xml():
    agent = make_agent()
    r = await agent.send_message({"contents": "hi", "attributes": {"a": "own", "b": "own"}}, resource_id=R,
                                 thread_id=T, if_idle={"attributes": {"b": "idle", "c": True, "d": None}},
                                 if_active={"attributes": {"b": "active"}})
    assert (await bounded(r.output.get_full_output())).text == 'echo: <user a="own" b="idle" c="true">hi</user>'
    # a plain string message becomes XML when only its branch has attributes
    r2 = await agent.send_message("plain", resource_id=R, thread_id=T, if_idle={"attributes": {"n": 1}})
    assert (await bounded(r2.output.get_full_output())).text == 'echo: <user n="1">plain</user>'


async def test_signal_branch_attributes():
    agent = make_agent(gate=0)
    watch = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    idle = await agent.send_signal({"type": "notification", "contents": "ci", "attributes": {"src": "gh"}},
                                   resource_id=R, thread_id=T, **BRANCHES)
    await wait_for_chunk(watch, lambda c: c["type"] == "step-start")
    await agent.send_signal({"type": "notification", "contents": "ci2", "attributes": {"src": "gh"}},
                            resource_id=R, thread_id=T, **BRANCHES)
    result = await finish(agent, idle.output)
    assert [s.text for s in result.steps] == [
        'echo: <notification src="gh" delivery="new-message">ci</notification>',
        'echo: <notification src="gh" delivery="while-active">ci2</notification>']


# -- if_idle.stream_options ------------------------------------------------------------------------

async def test_stream_options_max_steps():
    seen = []
    tool = create_tool(id="t", execute=lambda input: seen.append(input) or {"ok": True})
    agent = make_agent(tools={"t": tool})
    r = await agent.send_message("/tool t {}", resource_id=R, thread_id=T,
                                 if_idle={"stream_options": {"max_steps": 1}})
    result = await bounded(r.output.get_full_output())
    assert len(result.steps) == 1 and result.finish_reason == "tool-calls" and seen == [{}]
    await wait_idle(R, T)
    # without it the default max_steps lets the run answer
    r2 = await agent.send_message("/tool t {}", resource_id=R, thread_id=T)
    result2 = await bounded(r2.output.get_full_output())
    assert len(result2.steps) == 2 and result2.finish_reason == "stop"


async def test_stream_options_camel_case_model_settings():
    agent = make_agent()
    r = await agent.send_message("one two three", resource_id=R, thread_id=T,
                                 if_idle={"streamOptions": {"modelSettings": {"max_output_tokens": 2}}})
    result = await bounded(r.output.get_full_output())
    assert result.finish_reason == "length" and result.text == "echo: one"


async def test_a_wake_whose_structuring_model_fails_ends_its_run_and_frees_the_thread():
    from agents.models import Run
    from agents.runtime.errors import ModelError

    told = []

    class Told:
        def error(self, line):
            told.append(line)

        warning = info = error

    structurer = ScriptedModel([ModelError("structuring model down", code="rate_limited", status=429)])
    agent = make_agent()
    r = await agent.send_message("hello", resource_id=R, thread_id=T, if_idle={"stream_options": {
        "structured_output": {"schema": {"type": "object"}, "model": structurer, "logger": Told()}}})
    result = await bounded(r.output.get_full_output())
    assert (result.finish_reason, result.error.code) == ("error", "rate_limited")
    assert told == [f"run {r.run_id}: structuring failed: structuring model down"]
    await wait_idle(R, T)
    run = await Run.objects.aget(pk=r.run_id)
    assert run.status == "failed"
    # the thread takes the next input as ever
    again = await agent.send_message("again", resource_id=R, thread_id=T)
    assert again.action == "wake"
    assert (await bounded(again.output.get_full_output())).text == "echo: again"


async def test_a_run_whose_output_processor_fails_ends_and_frees_the_thread():
    from agents.models import Run

    class Broken:
        id = "broken"

        def process_output_stream(self, *, chunk):
            raise RuntimeError("broken processor")

    agent = make_agent(output_processors=[Broken()])
    watch = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("hello", resource_id=R, thread_id=T)
    result = await bounded(r.output.get_full_output())
    assert (result.finish_reason, result.error.code) == ("error", "processor_error")
    # subscribers see the run's end, as the run made it
    seen = await collect(watch, "finish")
    assert [c["type"] for c in seen if c["type"] in ("error", "finish")] == ["error", "finish"]
    watch.unsubscribe()
    await wait_idle(R, T)
    assert (await Run.objects.aget(pk=r.run_id)).status == "failed"
    agent.output_processors = []  # mended: the thread takes the next input as ever
    again = await agent.send_message("again", resource_id=R, thread_id=T)
    assert again.action == "wake"
    answer = await bounded(again.output.get_full_output())
    assert (answer.finish_reason, answer.text.splitlines()[-1]) == ("stop", "echo: again")


async def check_ended_as_failed(agent, run_id: str, code: str, message: str) -> None:
    """The thread's run ``run_id`` (its input "hello") was ended by the runtime: recorded failed with
    ``code`` and ``message``, its input kept with the error entry, and the thread free for the next
    input."""
    from agents.models import Message, Run

    await wait_idle(R, T)
    run = await Run.objects.aget(pk=run_id)
    assert (run.status, run.error_code, run.error) == ("failed", code, message)
    # the input is not lost, and the thread says why its run failed
    stored = [m.to_dict() for m in await db(lambda: list(Message.objects.filter(thread__thread_id=T).order_by("id")))]
    assert [m["content"]["parts"] for m in stored] == [[{"type": "text", "text": "hello"}], []]
    assert stored[1]["content"]["metadata"]["error"] == {"code": code, "message": message}
    again = await agent.send_message("again", resource_id=R, thread_id=T)
    assert again.action == "wake"
    assert (await bounded(again.output.get_full_output())).finish_reason == "stop"


async def test_a_run_that_raises_is_ended_by_the_runtime_with_its_input_kept_and_the_thread_free():
    def raising(chunk):  # on every chunk: the run cannot even send its error
        raise RuntimeError("the caller's on_chunk failed")

    agent = make_agent()
    watch = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("hello", resource_id=R, thread_id=T, if_idle={"stream_options": {"on_chunk": raising}})
    with pytest.raises(RuntimeError, match="on_chunk failed"):  # the caller's own callback: raised to the caller
        await bounded(r.output.get_full_output())
    seen = await collect(watch, "finish")
    watch.unsubscribe()
    # the run's own ``error`` reached the thread before its callback raised again: one ``error``, then
    # the ``finish`` the runtime sent in the run's place
    assert [c["type"] for c in seen].count("error") == 1
    assert seen[-2]["payload"] == {"error": {"message": "the caller's on_chunk failed", "code": "error"}}
    assert seen[-1]["payload"]["stepResult"] == {"reason": "error"}
    await check_ended_as_failed(agent, r.run_id, "error", "the caller's on_chunk failed")


@pytest.mark.parametrize("fails_on", ["error", "finish"])
async def test_a_run_that_raises_after_its_error_is_ended_with_that_one_error(fails_on):
    """The model fails, the run sends its ``error``, then the caller's ``on_chunk`` raises (on that
    ``error``, or on the ``finish`` after it): the runtime ends the run without a second ``error``,
    and the run is recorded failed of the model's error, as its subscribers saw it."""

    def raising(chunk):
        if chunk["type"] == fails_on:
            raise RuntimeError("the caller's on_chunk failed")

    agent = make_agent(model=ScriptedModel([ModelError("model down", code="rate_limited", status=429),
                                            text_step("echo: again")]))
    watch = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("hello", resource_id=R, thread_id=T, if_idle={"stream_options": {"on_chunk": raising}})
    with pytest.raises(RuntimeError, match="on_chunk failed"):
        await bounded(r.output.get_full_output())
    seen = await collect(watch, "finish")
    watch.unsubscribe()
    ends = [(c["type"], c["payload"]) for c in seen if c["type"] in ("error", "finish")]
    assert ends == [("error", {"error": {"message": "model down", "code": "rate_limited", "status": 429}}),
                    ("finish", {"stepResult": {"reason": "error"}, "output": {"usage": {}},
                                "metadata": {"request": {}, "response": {}}})]
    await check_ended_as_failed(agent, r.run_id, "rate_limited", "model down")


async def test_stream_options_not_used_by_deliver():
    agent = make_agent(gate=0)
    wake = await start_slow_run(agent)
    r = await agent.send_message("more", resource_id=R, thread_id=T, if_idle={"stream_options": {"max_steps": 1}})
    assert r.action == "deliver"
    result = await finish(agent, wake.output)
    assert [s.text for s in result.steps] == ["echo: first", "echo: more"]


# -- message forms ---------------------------------------------------------------------------------

async def test_message_forms():
    model = ScriptedModel([text_step("a"), text_step("b"), text_step("c")])
    agent = make_agent(model=model)
    r1 = await agent.send_message("str form", resource_id=R, thread_id=T)
    await bounded(r1.output.get_full_output())
    image = {"type": "image", "image": "https://example.com/cat.png", "mimeType": "image/png"}
    r2 = await agent.send_message(["line one", {"type": "text", "text": "line two"}, image], resource_id=R,
                                  thread_id=T)
    await bounded(r2.output.get_full_output())
    r3 = await agent.send_message({"contents": "dict form", "attributes": {"name": "Ann"}, "metadata": {"ui": 1},
                                   "provider_options": {"anthropic": {"cacheControl": {"type": "ephemeral"}}}},
                                  resource_id=R, thread_id=T)
    await bounded(r3.output.get_full_output())
    assert model.requests[0].messages[-1]["content"] == "str form"
    assert model.requests[1].messages[-1]["content"] == [{"type": "text", "text": "line one"},
                                                         {"type": "text", "text": "line two"}, image]
    last = model.requests[2].messages[-1]
    assert last["content"] == '<user name="Ann">dict form</user>'
    assert last["providerOptions"] == {"anthropic": {"cacheControl": {"type": "ephemeral"}}}
    assert r3.signal["metadata"] == {"ui": 1} and r3.signal["attributes"] == {"name": "Ann"}
    stored = await history(T)
    assert stored[-2]["metadata"]["signal"]["metadata"] == {"ui": 1}


# -- targets and bad input -------------------------------------------------------------------------

async def test_run_id_target_delivers_into_that_run():
    agent = make_agent(gate=0)
    wake = await start_slow_run(agent)
    r = await agent.send_message("by run id", run_id=wake.run_id)
    assert r.action == "deliver" and r.run_id == wake.run_id
    s = await agent.send_signal({"type": "reactive", "contents": "rem"}, run_id=wake.run_id)
    assert s.action == "deliver" and s.run_id == wake.run_id
    result = await finish(agent, wake.output)
    assert [st.text for st in result.steps] == ["echo: first",
                                                "echo: by run id\necho: <system-reminder>rem</system-reminder>"]
    rows = await inputs(T)
    assert [(row["kind"], row["consumed_by"]) for row in rows] == [("deliver", wake.run_id)] * 3


async def test_run_id_of_finished_run_and_unknown_run():
    agent = make_agent()
    wake = await agent.send_message("x", resource_id=R, thread_id=T)
    await finish(agent, wake.output)
    await wait_idle(R, T)
    before = await counts()
    for run_id in ("no-such-run", wake.run_id):
        with pytest.raises(SignalError) as info:
            await agent.send_message("y", run_id=run_id)
        assert info.value.code == "unknown_run"
        with pytest.raises(SignalError) as info:
            await agent.send_signal({"type": "notification", "contents": "y"}, run_id=run_id)
        assert info.value.code == "unknown_run"
    assert await counts() == before
    # with a thread target the run id does not matter: the idle thread wakes
    r = await agent.send_message("z", run_id="no-such-run", resource_id=R, thread_id=T)
    assert r.action == "wake"
    await bounded(r.output.get_full_output())


@pytest.mark.parametrize("target,code", [
    ({}, "missing_target"),
    ({"resource_id": R}, "missing_target"),
    ({"thread_id": T}, "missing_target"),
    ({"resource_id": "", "thread_id": T}, "missing_target"),
    ({"resource_id": R, "thread_id": 5}, "missing_target"),
    ({"resource_id": R, "thread_id": T, "if_active": {"behavior": "wake"}}, "invalid_behavior"),
    ({"resource_id": R, "thread_id": T, "if_idle": {"behavior": "deliver"}}, "invalid_behavior"),
    ({"resource_id": R, "thread_id": T, "if_idle": {"behavior": "queue"}}, "invalid_behavior"),
    ({"resource_id": R, "thread_id": T, "if_idle": {"attributes": {"bad name": 1}}}, "invalid_attribute_name"),
    ({"resource_id": R, "thread_id": T, "if_active": {"attributes": {"a": [1]}}}, "invalid_attribute_value"),
    ({"resource_id": R, "thread_id": T, "if_active": {"stream_options": {}}}, "invalid_options"),
    ({"resource_id": R, "thread_id": T, "if_idle": {"stream_options": 3}}, "invalid_stream_options"),
    ({"resource_id": R, "thread_id": T, "if_idle": "wake"}, "invalid_options"),
    ({"run_id": 5}, "invalid_target"),
])
async def test_bad_targets_and_behaviors_store_nothing(target, code):
    agent = make_agent()
    for call in (lambda: agent.send_message("x", **target),
                 lambda: agent.queue_message("x", **target),
                 lambda: agent.send_signal({"type": "notification", "contents": "x"}, **target)):
        with pytest.raises(SignalError) as info:
            await call()
        assert info.value.code == code
    assert await counts() == {"inputs": 0, "messages": 0, "events": 0, "leases": 0}


@pytest.mark.parametrize("signal,code", [
    ({"type": "system", "contents": "x"}, "invalid_signal_type"),
    ({"type": "notification", "tag_name": "bad tag", "contents": "x"}, "invalid_tag_name"),
    ({"type": "notification", "contents": "x", "attributes": {"1a": "v"}}, "invalid_attribute_name"),
    ({"type": "notification", "contents": "x", "attributes": {"a": {"b": 1}}}, "invalid_attribute_value"),
    ({"type": "notification", "contents": "x" * (1024 * 1024 + 1)}, "signal_too_large"),
])
async def test_bad_signal_stores_nothing(signal, code):
    agent = make_agent()
    with pytest.raises(SignalError) as info:
        await agent.send_signal(signal, resource_id=R, thread_id=T)
    assert info.value.code == code
    assert await counts() == {"inputs": 0, "messages": 0, "events": 0, "leases": 0}


async def test_bad_input_to_an_active_thread_stores_nothing():
    agent = make_agent(gate=0)
    wake = await start_slow_run(agent)
    before = await counts()
    with pytest.raises(SignalError):
        await agent.send_message({"contents": "x", "attributes": {"a b": 1}}, resource_id=R, thread_id=T)
    with pytest.raises(SignalError):
        await agent.send_message("x", resource_id=R, thread_id=T, if_active={"behavior": "nope"})
    after = await counts()
    assert (after["inputs"], after["messages"]) == (before["inputs"], before["messages"])
    assert len((await finish(agent, wake.output)).steps) == 1


async def test_another_resources_thread_of_the_same_id_is_another_thread():
    agent = make_agent()
    r = await agent.send_message("mine", resource_id=R, thread_id=T)
    await bounded(r.output.get_full_output())
    theirs = await agent.send_message("theirs", resource_id="intruder", thread_id=T)
    assert theirs.action == "wake"
    full = await bounded(theirs.output.get_full_output())
    assert "mine" not in full.text  # the intruder's run sees none of R's thread


async def test_no_memory_is_a_config_error():
    from agents.runtime import Agent
    from agents.runtime.errors import AgentConfigError

    agent = Agent(id="nomem", instructions="x", model="local/echo")
    for call in (lambda: agent.send_message("x", resource_id=R, thread_id=T),
                 lambda: agent.subscribe_to_thread(resource_id=R, thread_id=T),
                 lambda: agent.abort_thread(resource_id=R, thread_id=T)):
        with pytest.raises(AgentConfigError):
            await call()


# -- delivery into an active run -------------------------------------------------------------------

async def test_delivered_after_the_current_model_step_never_mid_call():
    agent = make_agent(gate=2)  # the model call holds after its first text delta
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    wake = await agent.send_message("l1\nl2\nl3", resource_id=R, thread_id=T)
    seen = await wait_for_chunk(sub, lambda c: c["type"] == "text-delta")
    late = await agent.send_message("late", resource_id=R, thread_id=T)
    assert late.action == "deliver" and late.run_id == wake.run_id
    agent.model.open()
    chunks = seen + await collect(sub)
    assert types(chunks) == [
        "start", "data-user-message", "step-start", "text-start",
        "text-delta", "text-delta", "text-delta", "text-end", "data-user-message", "step-finish",
        "step-start", "text-start", "text-delta", "text-end", "step-finish", "finish"]
    assert chunks[8]["data"]["id"] == late.signal["id"] and chunks[8]["transient"] is True
    # the step that took the input in ends as Mastra's signal drain ends it
    assert chunks[9]["payload"]["stepResult"] == {"reason": "other", "isContinued": True}
    assert chunks[14]["payload"]["stepResult"] == {"reason": "stop", "isContinued": False}
    result = await finish(agent, wake.output)
    assert [s.text for s in result.steps] == ["echo: l1\necho: l2\necho: l3", "echo: late"]
    assert [s.finish_reason for s in result.steps] == ["other", "stop"]
    assert [c["seq"] for c in chunks] == list(range(1, 17))
    # the wake's own output carries the same chunks as the subscription, echoes included
    assert [c async for c in wake.output.full_stream] == [{k: v for k, v in c.items() if k != "seq"} for c in chunks]


async def test_delivered_after_the_steps_tool_calls():
    started, release = asyncio.Event(), asyncio.Event()

    async def slow(input):
        started.set()
        await asyncio.wait_for(release.wait(), 5)
        return {"ok": True}

    agent = make_agent(tools={"slow": create_tool(id="slow", execute=slow)})
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    wake = await agent.send_message("/tool slow {}", resource_id=R, thread_id=T)
    await bounded(started.wait())
    late = await agent.send_message("late", resource_id=R, thread_id=T)
    assert late.action == "deliver"
    release.set()
    chunks = await collect(sub)
    assert types(chunks) == [
        "start", "data-user-message", "step-start", "tool-call", "tool-result",
        "data-user-message", "step-finish",
        "step-start", "text-start", "text-delta", "text-delta", "text-end", "step-finish",
        "finish"]
    assert chunks[5]["data"]["id"] == late.signal["id"]
    assert chunks[6]["payload"]["stepResult"] == {"reason": "other", "isContinued": True}
    result = await finish(agent, wake.output)
    assert result.steps[1].text == 'echo: tool slow returned {"ok": true}\necho: late'
    assert [m["role"] for m in await history(T)] == ["user", "assistant", "tool", "user", "assistant"]


async def test_several_inputs_stay_separate_messages_in_order():
    gate = asyncio.Event()

    async def first(request):  # the first model call waits until the three inputs are accepted
        await asyncio.wait_for(gate.wait(), 5)
        return text_step("0 1 2 3 ")

    model = ScriptedModel([first, text_step("done")])
    agent = make_agent(model=model)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    wake = await agent.send_message("start", resource_id=R, thread_id=T)
    head = await wait_for_chunk(sub, lambda c: c["type"] == "step-start")
    sent = [await agent.send_message(text, resource_id=R, thread_id=T) for text in ("a", "b", "c")]
    assert [s.action for s in sent] == ["deliver"] * 3 and {s.run_id for s in sent} == {wake.run_id}
    gate.set()
    result = await finish(agent, wake.output)
    assert model.calls == 2 and len(result.steps) == 2 and result.text == "done"
    second = model.requests[1].messages
    assert [(m["role"], m["content"]) for m in second[-3:]] == [("user", "a"), ("user", "b"), ("user", "c")]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user", "user", "user"]
    chunks = head + await collect(sub)
    echoes = [c for c in chunks if c["type"] == "data-user-message"]
    assert [e["data"]["contents"] for e in echoes] == ["start", "a", "b", "c"]
    step_starts = [i for i, c in enumerate(chunks) if c["type"] == "step-start"]
    echo_at = [i for i, c in enumerate(chunks) if c["type"] == "data-user-message"]
    assert echo_at[0] < step_starts[0] and step_starts[0] < echo_at[1] < echo_at[2] < echo_at[3] < step_starts[1]
    assert user_contents(await history(T)) == ["start", "a", "b", "c"]


async def test_wake_texts_by_run_helper_sanity():
    agent = make_agent()
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("x", resource_id=R, thread_id=T)
    chunks = await collect(sub)
    assert texts_by_run(chunks) == {r.run_id: "echo: x"}
    assert finish_of(chunks)["payload"]["stepResult"]["reason"] == "stop"


# -- a wake's memory: read with the wake, written with the run's end ----------------------------------

async def test_a_subscriber_that_sees_finish_finds_the_runs_messages_and_record_stored():
    from agents.models import Run

    agent = make_agent()
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("remember me", resource_id=R, thread_id=T)
    seen_at_finish = {}

    async def read():
        async for chunk in sub.stream:
            if chunk["type"] == "finish":
                # read at once, before the run's output is awaited: the end was one transaction
                seen_at_finish["history"] = [(m["role"], m["content"]) for m in await history(T)]
                seen_at_finish["run"] = await db(lambda: Run.objects.filter(id=r.run_id).values(
                    "status", "finish_reason", "steps", "thread__thread_id").first())
                return

    await bounded(read())
    assert seen_at_finish["history"] == [("user", "remember me"),
                                         ("assistant", [{"type": "text", "text": "echo: remember me"}])]
    assert seen_at_finish["run"] == {"status": "completed", "finish_reason": "stop", "steps": 1, "thread__thread_id": T}


async def test_a_wake_sees_the_last_messages_of_the_agents_memory():
    from agents.memory import Memory

    agent = make_agent(memory=Memory(last_messages=2))
    for text in ("one", "two", "three"):
        r = await agent.send_message(text, resource_id=R, thread_id=T)
        result = await bounded(r.output.get_full_output())
        await wait_idle(R, T)
    # the window holds the last two stored messages: "two" and its answer
    assert [(m["role"], m["content"]) for m in result.remembered_messages] == [
        ("user", "two"), ("assistant", [{"type": "text", "text": "echo: two"}])]
    assert result.text == "echo: three"
    assert len(await history(T)) == 6


async def test_a_wake_with_read_only_memory_stores_no_messages():
    from agents.memory import Memory
    from agents.models import Thread

    agent = make_agent(memory=Memory(read_only=True))
    r = await agent.send_message("hello", resource_id=R, thread_id=T)
    assert (await bounded(r.output.get_full_output())).text == "echo: hello"
    await wait_idle(R, T)
    assert await history(T) == []
    # the accepted input created the thread's row (its identity), read-only memory added nothing to it
    assert await db(lambda: list(Thread.objects.values_list("thread_id", "resource_id", "title", "metadata"))) == [
        (T, R, "", {})]
