"""send_state_signal (dedupe, tracking, versions, XML) and processors: reactive signals from
process_input_step and state channels owned by compute_state_signal (DESIGN §4)."""

from datetime import datetime

import pytest

from agents.memory import Memory
from agents.models import Thread
from agents.runtime.errors import SignalError
from tests.agents.thread_harness import (bounded, collect, counts, db, finish, history, make_agent, settle, types,
                            wait_for_chunk, wait_idle)

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

R, T = "user-1", "thread-1"


@pytest.fixture(autouse=True)
async def _drain():
    yield
    await settle()


async def tracking() -> dict:
    return await db(lambda: (Thread.objects.get(thread_id=T).metadata or {}).get("mastra", {}).get("stateSignals"))


async def create_thread(thread_id: str = T, metadata: dict | None = None) -> None:
    await db(lambda: Thread.objects.create(thread_id=thread_id, resource_id=R, metadata=metadata or {}))


def browser(cache_key: str = "k1", mode: str = "snapshot", contents: str = "3 tabs", **extra) -> dict:
    return {"id": "browser", "cache_key": cache_key, "mode": mode, "contents": contents, **extra}


PERSIST = {"if_idle": {"behavior": "persist"}}
OPEN_COM = "Browser is open. Active tab URL: https://example.com. 3 open tabs."
OPEN_ORG = "Browser is open. Active tab URL: https://example.org. 1 open tab."


# -- send_state_signal -----------------------------------------------------------------------------

async def test_the_browser_scenario_matches_mastra():
    """Mastra 1.71's scenario 7 (behaviour.out.txt): XML, echoes, skip and the thread's tracking."""
    agent = make_agent()
    first = {"id": "browser", "cacheKey": "browser:https://example.com:3-tabs", "contents": OPEN_COM,
             "attributes": {"tabs": 3}, "value": {"activeUrl": "https://example.com", "tabCount": 3, "open": True}}
    with pytest.raises(SignalError) as info:
        await agent.send_state_signal(first, resource_id=R, thread_id="T7")
    assert (str(info.value), info.value.code) == ("sendStateSignal could not load thread T7", "thread_not_found")
    assert await counts() == {"inputs": 0, "messages": 0, "events": 0, "leases": 0}

    await create_thread("T7")
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id="T7")
    r1 = await agent.send_state_signal(first, resource_id=R, thread_id="T7")
    assert (r1.action, r1.skipped, r1.reason) == ("wake", False, None)
    assert (r1.signal["type"], r1.signal["tagName"], r1.signal["attributes"]) == ("state", "state", {"tabs": 3})
    assert r1.signal["id"] != "browser"
    assert (await bounded(r1.output.get_full_output())).text == f'echo: <state tabs="3">{OPEN_COM}</state>'
    await wait_idle(R, "T7")
    r2 = await agent.send_state_signal(first, resource_id=R, thread_id="T7")
    assert (r2.skipped, r2.reason, r2.action, r2.signal) == (True, "unchanged", None, None)
    third = {"id": "browser", "cacheKey": "browser:https://example.org:1-tab", "contents": OPEN_ORG,
             "attributes": {"tabs": 1}, "value": {"activeUrl": "https://example.org", "tabCount": 1, "open": True}}
    r3 = await agent.send_state_signal(third, resource_id=R, thread_id="T7")
    assert (await bounded(r3.output.get_full_output())).text == f'echo: <state tabs="1">{OPEN_ORG}</state>'
    await wait_idle(R, "T7")
    r4 = await agent.send_state_signal({"id": "browser", "cacheKey": "browser:delta:scroll", "mode": "delta",
                                        "contents": "Scrolled to bottom.", "delta": {"scrollY": 1200}},
                                       resource_id=R, thread_id="T7")
    assert r4.signal["attributes"] == {}
    assert (await bounded(r4.output.get_full_output())).text == "echo: <state>Scrolled to bottom.</state>"
    await wait_idle(R, "T7")

    chunks = await collect(sub, n=3)
    echoes = [c["data"] for c in chunks if c["type"] == "data-signal"]
    assert [e["id"] for e in echoes] == [r1.signal["id"], r3.signal["id"], r4.signal["id"]]
    assert [(e.get("attributes"), e["metadata"]) for e in echoes] == [
        ({"tabs": 3}, {"state": {"id": "browser", "cacheKey": "browser:https://example.com:3-tabs",
                                 "mode": "snapshot", "threadId": "T7", "version": 1},
                       "value": {"activeUrl": "https://example.com", "tabCount": 3, "open": True}}),
        ({"tabs": 1}, {"state": {"id": "browser", "cacheKey": "browser:https://example.org:1-tab",
                                 "mode": "snapshot", "threadId": "T7", "version": 2},
                       "value": {"activeUrl": "https://example.org", "tabCount": 1, "open": True}}),
        (None, {"state": {"id": "browser", "cacheKey": "browser:delta:scroll", "mode": "delta", "threadId": "T7",
                          "version": 3},
                "delta": {"scrollY": 1200}}),
    ]
    metadata = await db(lambda: Thread.objects.get(thread_id="T7").metadata)
    updated_at = metadata["mastra"]["stateSignals"]["browser"].pop("updatedAt")
    assert datetime.fromisoformat(updated_at).tzinfo is not None
    assert metadata == {"mastra": {"stateSignals": {"browser": {
        "currentCacheKey": "browser:delta:scroll", "currentMode": "delta", "version": 3,
        "lastSignalId": r4.signal["id"], "lastSnapshotSignalId": r3.signal["id"],
        "activeCopies": [{"id": r4.signal["id"], "cacheKey": "browser:delta:scroll", "mode": "delta",
                          "version": 3}]}}}}


async def test_a_callers_own_id_attribute_is_kept_and_value_sits_in_the_metadata():
    await create_thread()
    agent = make_agent()
    r = await agent.send_state_signal(browser(value={"tabs": 3}, attributes={"id": "mine",
                                                                             "url": "https://e.com/?a&b"}),
                                      resource_id=R, thread_id=T)
    result = await bounded(r.output.get_full_output())
    assert result.text == 'echo: <state id="mine" url="https://e.com/?a&amp;b">3 tabs</state>'
    stored = (await history(T))[0]
    assert stored["content"] == '<state id="mine" url="https://e.com/?a&amp;b">3 tabs</state>'
    assert stored["metadata"]["signal"]["metadata"] == {
        "state": {"id": "browser", "cacheKey": "k1", "mode": "snapshot", "threadId": T, "version": 1},
        "value": {"tabs": 3}}


async def test_tracking_keeps_the_threads_other_metadata():
    await create_thread(metadata={"topic": "x", "mastra": {"other": 1, "stateSignals": {"editor": {"version": 4}}}})
    agent = make_agent()
    r = await agent.send_state_signal(browser(), resource_id=R, thread_id=T, **PERSIST)
    metadata = await db(lambda: Thread.objects.get(thread_id=T).metadata)
    assert metadata["topic"] == "x" and metadata["mastra"]["other"] == 1
    assert sorted(metadata["mastra"]["stateSignals"]) == ["browser", "editor"]
    assert metadata["mastra"]["stateSignals"]["editor"] == {"version": 4}
    assert metadata["mastra"]["stateSignals"]["browser"]["lastSignalId"] == r.signal["id"]


async def test_unchanged_state_is_skipped_and_nothing_is_stored():
    await create_thread()
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
    assert [m["content"] for m in await history(T)] == ["<state>3 tabs</state>"]


async def test_other_mode_or_key_is_accepted_and_bumps_the_version():
    await create_thread()
    agent = make_agent()
    steps = [
        (browser("k1", "snapshot"), "persist", 1),
        (browser("k1", "delta", "tab closed"), "persist", 2),
        (browser("k1", "delta", "tab closed"), None, 2),  # unchanged
        (browser("k2", "delta", "tab opened"), "persist", 3),
        (browser("k1", "delta", "tab closed"), "persist", 4),  # k1 is no longer current
        (browser("k2", "snapshot", "2 tabs"), "persist", 5),
    ]
    accepted, snapshot = [], None
    for state, action, version in steps:
        r = await agent.send_state_signal(state, resource_id=R, thread_id=T, **PERSIST)
        assert r.action == action and r.skipped is (action is None)
        entry = (await tracking())["browser"]
        assert entry["version"] == version
        if action:
            accepted.append(r.signal["id"])
            snapshot = r.signal["id"] if state["mode"] == "snapshot" else snapshot
            assert (entry["lastSignalId"], entry["currentCacheKey"], entry["currentMode"]) == (
                r.signal["id"], state["cache_key"], state["mode"])
            assert entry["lastSnapshotSignalId"] == snapshot
            assert entry["activeCopies"] == [{"id": r.signal["id"], "cacheKey": state["cache_key"],
                                              "mode": state["mode"], "version": version}]
    assert [m["content"] for m in await history(T)] == [
        "<state>3 tabs</state>", "<state>tab closed</state>", "<state>tab opened</state>",
        "<state>tab closed</state>", "<state>2 tabs</state>"]
    assert [m["id"] for m in await history(T)] == accepted


async def test_a_first_delta_has_no_snapshot_id():
    await create_thread()
    agent = make_agent()
    await agent.send_state_signal(browser(mode="delta"), resource_id=R, thread_id=T, **PERSIST)
    assert "lastSnapshotSignalId" not in (await tracking())["browser"]


async def test_state_channels_are_tracked_separately():
    await create_thread()
    agent = make_agent()
    await agent.send_state_signal(browser(), resource_id=R, thread_id=T, **PERSIST)
    r = await agent.send_state_signal({"id": "editor", "cache_key": "k1", "contents": "main.py"},
                                      resource_id=R, thread_id=T, **PERSIST)
    assert r.action == "persist"
    track = await tracking()
    assert sorted(track) == ["browser", "editor"]
    assert track["browser"]["version"] == track["editor"]["version"] == 1


async def test_state_signal_into_an_active_run_and_skip_while_active():
    await create_thread()
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
    assert [s.text for s in result.steps] == ["echo: first", 'echo: <state live="true">3 tabs</state>']
    chunks = await collect(sub)
    echoes = [c for c in chunks if c["type"] == "data-signal"]
    assert len(echoes) == 1 and echoes[0]["data"]["type"] == "state" and echoes[0]["data"]["id"] == r.signal["id"]


async def test_a_discarded_state_is_tracked_as_mastra_does():
    """Mastra records the state on the thread before it routes the signal: a discard bumps it too."""
    await create_thread()
    agent = make_agent()
    r = await agent.send_state_signal(browser(), resource_id=R, thread_id=T, if_idle={"behavior": "discard"})
    assert r.action == "discard"
    assert (await tracking())["browser"]["version"] == 1
    assert await history(T) == []
    r2 = await agent.send_state_signal(browser(), resource_id=R, thread_id=T, **PERSIST)
    assert r2.skipped is True


@pytest.mark.parametrize("state, message", [
    ({"cache_key": "k"}, "state signal id is required"),
    ({"id": "b"}, "state signal cacheKey is required"),
    ({"id": "b", "cache_key": "k", "mode": "full"}, "mode must be 'snapshot' or 'delta'"),
    ({"id": "b", "cache_key": "k", "transient": True}, "state signals cannot be transient"),
])
async def test_invalid_state_signal_stores_nothing(state, message):
    await create_thread()
    agent = make_agent()
    with pytest.raises(SignalError) as info:
        await agent.send_state_signal(state, resource_id=R, thread_id=T)
    assert (str(info.value), info.value.code) == (message, "invalid_state_signal")
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
    return signal["metadata"]["state"]["mode"], signal["contents"]


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
    assert r1.text == 'echo: one\necho: <state>tabs: 1</state>'
    args = processor.calls[0]
    assert args["state_id"] == "browser" and args["step_number"] == 0
    assert (args["last_snapshot"], args["deltas_since_snapshot"], args["active_state_signals"],
            args["context_window"]) == (None, [], [], {"has_snapshot": False})

    # run 2: the snapshot is in the window (last 3 messages: one, snapshot, answer)
    r2 = await run(agent, "two")
    assert r2.text == 'echo: two\necho: <state>tabs: 2</state>'
    args = processor.calls[1]
    assert summary(args["last_snapshot"]) == ("snapshot", "tabs: 1")
    assert args["last_snapshot"]["metadata"]["value"] == {"tabs": 1}
    assert args["deltas_since_snapshot"] == []
    assert [summary(s) for s in args["active_state_signals"]] == [("snapshot", "tabs: 1")]
    assert args["context_window"] == {"has_snapshot": True}

    # run 3: the window (two, delta, answer) lost the snapshot: it comes from the history
    r3 = await run(agent, "three")
    assert r3.text == 'echo: three\necho: <state>tabs: 3</state>'
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
                           'echo: <state>after tool</state>')


def states_in(messages: list[dict]) -> list[dict]:
    return [m["metadata"]["signal"] for m in messages if (m.get("metadata") or {}).get("signal", {}).get("type") == "state"]


async def test_state_computed_in_a_run_is_tracked_on_the_thread_as_mastra_does():
    processor = BrowserState([
        {"mode": "snapshot", "cache_key": "s1", "contents": "tabs: 1"},
        {"mode": "delta", "cache_key": "d1", "contents": "tabs: 2"},
        {"mode": "delta", "cache_key": "d1", "contents": "tabs: 2"},  # current, its copy in the window: skipped
    ])
    agent = make_agent(input_processors=[processor], memory=Memory(last_messages=10))
    await run(agent, "one")
    await run(agent, "two")
    r3 = await run(agent, "three")
    assert r3.text == "echo: three"
    snapshot, delta = states_in(await history(T))
    assert [(s["metadata"]["state"]["cacheKey"], s["metadata"]["state"]["version"], s["metadata"]["state"]["threadId"])
            for s in (snapshot, delta)] == [("s1", 1, T), ("d1", 2, T)]
    entry = (await tracking())["browser"]
    assert datetime.fromisoformat(entry.pop("updatedAt"))
    assert entry == {"currentCacheKey": "d1", "currentMode": "delta", "version": 2, "lastSignalId": delta["id"],
                     "lastSnapshotSignalId": snapshot["id"],
                     "activeCopies": [{"id": delta["id"], "cacheKey": "d1", "mode": "delta", "version": 2}]}


async def test_a_current_state_whose_copy_left_the_window_is_sent_again_with_its_version():
    processor = BrowserState([
        {"mode": "snapshot", "cache_key": "s1", "contents": "tabs: 1"},
        {"mode": "snapshot", "cache_key": "s1", "contents": "tabs: 1"},
    ])
    agent = make_agent(input_processors=[processor], memory=Memory(last_messages=1))  # the window: one message
    await run(agent, "one")
    r2 = await run(agent, "two")
    assert r2.text == "echo: two\necho: <state>tabs: 1</state>"
    first, second = states_in(await history(T))
    assert first["id"] != second["id"]
    assert [s["metadata"]["state"]["version"] for s in (first, second)] == [1, 1]
    entry = (await tracking())["browser"]
    assert (entry["version"], entry["lastSignalId"], entry["lastSnapshotSignalId"]) == (1, second["id"], second["id"])
