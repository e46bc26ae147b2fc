"""send_state_signal (dedupe, tracking, versions, XML) and processors: reactive signals from
process_input_step and state channels owned by compute_state_signal (DESIGN §4)."""

from datetime import datetime

import pytest

from agents.memory import Memory
from agents.models import Thread
from agents.runtime.errors import SignalError
from thread_harness import (bounded, collect, counts, db, finish, history, make_agent, settle, types,
                            wait_for_chunk, wait_idle)

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

R, T = "user-1", "thread-1"


@pytest.fixture(autouse=True)
async def _drain():
    yield
    await settle()


async def tracking() -> dict:
    return await db(lambda: (Thread.objects.get(pk=T).metadata or {}).get("stateSignals"))


def browser(cache_key: str = "k1", mode: str = "snapshot", contents: str = "3 tabs", **extra) -> dict:
    return {"id": "browser", "cache_key": cache_key, "mode": mode, "contents": contents, **extra}


PERSIST = {"if_idle": {"behavior": "persist"}}


# -- send_state_signal -----------------------------------------------------------------------------

async def test_first_state_signal_wakes_with_exact_xml_and_tracking():
    agent = make_agent()
    r = await agent.send_state_signal(browser(value={"tabs": 3}, attributes={"url": "https://e.com/?a&b"}),
                                      resource_id=R, thread_id=T)
    assert r.action == "wake" and r.skipped is False and r.reason is None
    assert (r.signal["type"], r.signal["tagName"]) == ("state", "state")
    result = await bounded(r.output.get_full_output())
    assert result.text == 'echo: <state id="browser" mode="snapshot" url="https://e.com/?a&amp;b">3 tabs</state>'
    track = await tracking()
    assert set(track) == {"browser"}
    entry = track["browser"]
    assert {k: entry[k] for k in ("cacheKey", "mode", "signalId", "version")} == {
        "cacheKey": "k1", "mode": "snapshot", "signalId": r.signal["id"], "version": 1}
    assert datetime.fromisoformat(entry["updatedAt"]).tzinfo is not None
    stored = (await history(T))[0]
    assert stored["metadata"]["signal"]["metadata"]["state"] == {
        "id": "browser", "cacheKey": "k1", "mode": "snapshot", "value": {"tabs": 3}, "delta": None}


async def test_unchanged_state_is_skipped_and_nothing_is_stored():
    agent = make_agent()
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    first = await agent.send_state_signal(browser(), resource_id=R, thread_id=T, **PERSIST)
    assert first.action == "persist"
    await collect(sub)
    before = await counts()
    for same in (browser(), browser(contents="other text, same key"), {"id": "browser", "cacheKey": "k1",
                                                                      "contents": "camel"}):
        r = await agent.send_state_signal(same, resource_id=R, thread_id=T, **PERSIST)
        assert (r.skipped, r.reason, r.action, r.run_id, r.signal, r.output, r.accepted) == \
            (True, "unchanged", None, None, None, None, False)
        assert r.to_dict() == {"accepted": False, "action": None, "runId": None, "signal": None,
                               "skipped": True, "reason": "unchanged"}
    # the default behaviors skip too (no wake for an unchanged state)
    r = await agent.send_state_signal(browser(), resource_id=R, thread_id=T)
    assert r.skipped is True and r.output is None
    assert await counts() == before
    assert (await tracking())["browser"]["version"] == 1
    assert [m["content"] for m in await history(T)] == ['<state id="browser" mode="snapshot">3 tabs</state>']


async def test_other_mode_or_key_is_accepted_and_bumps_the_version():
    agent = make_agent()
    steps = [
        (browser("k1", "snapshot"), "persist", 1),
        (browser("k1", "delta", "tab closed"), "persist", 2),
        (browser("k1", "delta", "tab closed"), None, 2),  # unchanged
        (browser("k2", "delta", "tab opened"), "persist", 3),
        (browser("k1", "delta", "tab closed"), "persist", 4),  # k1 is no longer current
        (browser("k2", "snapshot", "2 tabs"), "persist", 5),
    ]
    accepted = []
    for state, action, version in steps:
        r = await agent.send_state_signal(state, resource_id=R, thread_id=T, **PERSIST)
        assert r.action == action and r.skipped is (action is None)
        entry = (await tracking())["browser"]
        assert entry["version"] == version
        if action:
            accepted.append(r.signal["id"])
            assert (entry["signalId"], entry["cacheKey"], entry["mode"]) == (
                r.signal["id"], state["cache_key"], state["mode"])
    assert [m["content"] for m in await history(T)] == [
        '<state id="browser" mode="snapshot">3 tabs</state>',
        '<state id="browser" mode="delta">tab closed</state>',
        '<state id="browser" mode="delta">tab opened</state>',
        '<state id="browser" mode="delta">tab closed</state>',
        '<state id="browser" mode="snapshot">2 tabs</state>']
    assert [m["id"] for m in await history(T)] == accepted


async def test_state_channels_are_tracked_separately():
    agent = make_agent()
    await agent.send_state_signal(browser(), resource_id=R, thread_id=T, **PERSIST)
    r = await agent.send_state_signal({"id": "editor", "cache_key": "k1", "contents": "main.py"},
                                      resource_id=R, thread_id=T, **PERSIST)
    assert r.action == "persist"
    track = await tracking()
    assert sorted(track) == ["browser", "editor"]
    assert track["browser"]["version"] == track["editor"]["version"] == 1


async def test_state_signal_into_an_active_run_and_skip_while_active():
    agent = make_agent(gate=0)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    wake = await agent.send_message("first", resource_id=R, thread_id=T)
    await wait_for_chunk(sub, lambda c: c["type"] == "step-start")
    r = await agent.send_state_signal(browser(), resource_id=R, thread_id=T,
                                      if_active={"attributes": {"live": True}})
    assert r.action == "deliver" and r.run_id == wake.run_id
    again = await agent.send_state_signal(browser(), resource_id=R, thread_id=T)
    assert again.skipped is True
    result = await finish(agent, wake.output)
    assert [s.text for s in result.steps] == [
        "echo: first", 'echo: <state id="browser" mode="snapshot" live="true">3 tabs</state>']
    chunks = await collect(sub)
    echoes = [c for c in chunks if c["type"] == "data-signal"]
    assert len(echoes) == 1 and echoes[0]["data"]["type"] == "state" and echoes[0]["data"]["id"] == r.signal["id"]


async def test_discarded_state_is_not_tracked():
    agent = make_agent()
    r = await agent.send_state_signal(browser(), resource_id=R, thread_id=T, if_idle={"behavior": "discard"})
    assert r.action == "discard"
    assert await db(lambda: Thread.objects.filter(pk=T).exists()) is False
    r2 = await agent.send_state_signal(browser(), resource_id=R, thread_id=T, **PERSIST)
    assert r2.action == "persist" and (await tracking())["browser"]["version"] == 1


@pytest.mark.parametrize("state", [{"cache_key": "k"}, {"id": "b"}, {"id": "b", "cache_key": "k", "mode": "full"}])
async def test_invalid_state_signal_stores_nothing(state):
    agent = make_agent()
    with pytest.raises(SignalError) as info:
        await agent.send_state_signal(state, resource_id=R, thread_id=T)
    assert info.value.code == "invalid_state_signal"
    assert await counts() == {"inputs": 0, "messages": 0, "events": 0, "leases": 0}


# -- processors ------------------------------------------------------------------------------------

class Reminder:
    """Sends a reactive signal before the first model step."""

    id = "reminder"

    def __init__(self):
        self.sent = []

    async def process_input_step(self, *, messages, step_number, send_signal, **_):
        if step_number == 0:
            self.sent.append(await send_signal({"contents": "Read AGENTS.md first.",
                                                "attributes": {"type": "dynamic-agents-md", "path": "AGENTS.md"},
                                                "metadata": {"path": "AGENTS.md"}}))
        return None


async def test_processor_reactive_signal_is_seen_by_the_model():
    reminder = Reminder()
    agent = make_agent(input_processors=[reminder])
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    r = await agent.send_message("hello", resource_id=R, thread_id=T)
    result = await bounded(r.output.get_full_output())
    xml = '<system-reminder type="dynamic-agents-md" path="AGENTS.md">Read AGENTS.md first.</system-reminder>'
    assert result.text == f"echo: hello\necho: {xml}"
    [sent] = reminder.sent
    assert (sent["type"], sent["tagName"], sent["metadata"]) == ("reactive", "system-reminder", {"path": "AGENTS.md"})
    assert sent["acceptedAt"]
    chunks = await collect(sub)
    assert types(chunks)[:4] == ["start", "data-user-message", "data-signal", "step-start"]
    echo = chunks[2]
    assert echo["data"]["id"] == sent["id"] and echo["transient"] is True and echo["runId"] == r.run_id
    assert echo["data"]["tagName"] == "system-reminder"
    stored = await history(T)
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "hello"), ("user", xml), ("assistant", [{"type": "text", "text": f"echo: hello\necho: {xml}"}])]


async def test_processor_reactive_signal_with_a_custom_tag_outside_threads():
    class Tagged:
        async def process_input_step(self, *, step_number, send_signal, **_):
            if step_number == 0:
                await send_signal({"contents": "x < y", "tag_name": "policy"})

    agent = make_agent(input_processors=[Tagged()])
    result = await bounded(agent.generate("hi"))
    assert result.text == "echo: hi\necho: <policy>x &lt; y</policy>"


class BrowserState:
    """Owns the ``browser`` state channel; answers from a plan, records what it was given."""

    id = "browser-state"
    state_id = "browser"

    def __init__(self, plan):
        self.plan = list(plan)
        self.calls = []

    def compute_state_signal(self, args):
        self.calls.append(args)
        return self.plan.pop(0) if self.plan else None


def summary(signal: dict) -> tuple:
    return signal["attributes"]["mode"], signal["contents"]


async def run(agent, text):
    r = await agent.send_message(text, resource_id=R, thread_id=T)
    result = await bounded(r.output.get_full_output())
    await wait_idle(R, T)
    return result


async def test_state_processor_gets_snapshot_deltas_and_context_window():
    processor = BrowserState([
        {"mode": "snapshot", "cache_key": "s1", "contents": "tabs: 1", "value": {"tabs": 1}},
        {"mode": "delta", "cache_key": "d1", "contents": "tabs: 2", "delta": {"tabs": 2}},
        {"mode": "delta", "cache_key": "d2", "contents": "tabs: 3", "delta": {"tabs": 3}},
        {"mode": "delta", "cache_key": "d2", "contents": "unchanged"},  # same key and mode: skipped
    ])
    agent = make_agent(input_processors=[processor], memory=Memory(last_messages=3))

    # run 1: nothing known yet
    r1 = await run(agent, "one")
    assert r1.text == 'echo: one\necho: <state id="browser" mode="snapshot">tabs: 1</state>'
    args = processor.calls[0]
    assert args["state_id"] == "browser" and args["step_number"] == 0
    assert (args["last_snapshot"], args["deltas_since_snapshot"], args["active_state_signals"],
            args["context_window"]) == (None, [], [], {"has_snapshot": False})

    # run 2: the snapshot is in the window (last 3 messages: one, snapshot, answer)
    r2 = await run(agent, "two")
    assert r2.text == 'echo: two\necho: <state id="browser" mode="delta">tabs: 2</state>'
    args = processor.calls[1]
    assert summary(args["last_snapshot"]) == ("snapshot", "tabs: 1")
    assert args["last_snapshot"]["metadata"]["state"]["value"] == {"tabs": 1}
    assert args["deltas_since_snapshot"] == []
    assert [summary(s) for s in args["active_state_signals"]] == [("snapshot", "tabs: 1")]
    assert args["context_window"] == {"has_snapshot": True}

    # run 3: the window (two, delta, answer) lost the snapshot: it comes from the history
    r3 = await run(agent, "three")
    assert r3.text == 'echo: three\necho: <state id="browser" mode="delta">tabs: 3</state>'
    args = processor.calls[2]
    assert summary(args["last_snapshot"]) == ("snapshot", "tabs: 1")
    assert [summary(s) for s in args["deltas_since_snapshot"]] == [("delta", "tabs: 2")]
    assert [summary(s) for s in args["active_state_signals"]] == [("delta", "tabs: 2")]
    assert args["context_window"] == {"has_snapshot": False}

    # run 4: an update with the current cache key and mode is not sent again
    r4 = await run(agent, "four")
    assert r4.text == "echo: four"
    args = processor.calls[3]
    assert [summary(s) for s in args["deltas_since_snapshot"]] == [("delta", "tabs: 2"), ("delta", "tabs: 3")]
    assert len(processor.calls) == 4


async def test_state_processor_is_asked_once_per_model_step():
    from agents.runtime import create_tool

    processor = BrowserState([None, {"mode": "snapshot", "cache_key": "s", "contents": "after tool"}])
    tool = create_tool(id="t", execute=lambda input: {"ok": True})
    agent = make_agent(input_processors=[processor], tools={"t": tool})
    result = await run(agent, "/tool t {}")
    assert [c["step_number"] for c in processor.calls] == [0, 1]
    assert result.text == ('echo: tool t returned {"ok": true}\n'
                           'echo: <state id="browser" mode="snapshot">after tool</state>')
