"""Thread routes over HTTP: send-message, queue-message, signals, state signals, notifications, the
subscription (SSE bytes, keep-alive, resume), abort and the queue, per persona."""

import asyncio
import json

import pytest

from tests.agents.api.conftest import Api, body, sse_chunks

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


LONG = "\n".join(f"line {n}" for n in range(40))


def ends_run(chunk: dict) -> bool:
    return chunk["type"] == "abort" or (chunk["type"] == "finish" and chunk["payload"]["stepResult"]["reason"]
                                        not in ("tool-calls", "suspended"))


async def subscribe(api: Api, thread_id: str, agent: str = "echo", **extra):
    response = await api.post(f"/api/agents/{agent}/threads/subscribe", {"threadId": thread_id, **extra.pop("body", {})},
                              **extra)
    assert response.status_code == 200, response.content
    first = await asyncio.wait_for(response.streaming_content.__anext__(), 5)
    assert first == b": connected\n\n"
    return response


async def test_send_message_wakes_the_thread_and_the_subscription_streams_it(alice: Api):
    stream = await subscribe(alice, "t1")
    response = await alice.post("/api/agents/echo/send-message", {"message": "hi there", "threadId": "t1"})
    assert response.status_code == 200
    accepted = body(response)
    assert accepted["accepted"] is True and accepted["action"] == "wake"
    assert accepted["signal"]["type"] == "user" and accepted["signal"]["contents"] == "hi there"
    # the keys Mastra's server answers (but its internal __isCreatedSignal): no empty attributes or
    # metadata, which the caller did not give
    assert set(accepted["signal"]) == {"id", "type", "tagName", "contents", "createdAt", "acceptedAt"}
    raw, chunks = await sse_chunks(stream, until=ends_run)
    assert [c["type"] for c in chunks][:2] == ["start", "data-user-message"]
    assert [c["seq"] for c in chunks] == list(range(1, len(chunks) + 1))
    assert all(c["runId"] == accepted["runId"] for c in chunks)
    echo = chunks[1]
    assert echo["transient"] is True and echo["data"]["id"] == accepted["signal"]["id"]
    text = "".join(c["payload"]["text"] for c in chunks if c["type"] == "text-delta")
    assert text == "echo: hi there"
    # each event is one data line and a blank line; no id: or event: lines, no [DONE]
    events = raw.split(b"\n\n")[:-1]
    assert all(e.startswith(b"data: {") and b"\n" not in e for e in events)
    assert b"[DONE]" not in raw


async def test_a_woken_runs_answer_is_stored_as_mastras_with_its_text_and_model(alice: Api):
    stream = await subscribe(alice, "t-stored")
    accepted = body(await alice.post("/api/agents/echo/send-message", {"message": "hi", "threadId": "t-stored"}))
    await sse_chunks(stream, until=ends_run)  # the run's end is stored before its finish is sent
    page = body(await alice.get("/api/memory/threads/t-stored/messages?agentId=echo"))
    [answer] = [m for m in page["messages"] if m["role"] == "assistant"]
    assert answer["content"] == {"format": 2, "parts": [{"type": "text", "text": "echo: hi"}], "content": "echo: hi",
                                 "metadata": {"runId": accepted["runId"], "agentId": "echo", "modelId": "echo",
                                              "provider": "local"}}


async def test_a_subscriber_that_asks_for_an_event_stream_gets_one(alice: Api):
    stream = await subscribe(alice, "t1", headers={"Accept": "text/event-stream"})
    assert stream["Content-Type"] == "text/event-stream"
    await alice.post("/api/agents/echo/send-message", {"message": "hi", "threadId": "t1"})
    _, chunks = await sse_chunks(stream, until=ends_run)
    assert "".join(c["payload"]["text"] for c in chunks if c["type"] == "text-delta") == "echo: hi"


async def test_the_subscription_stays_open_across_runs(alice: Api):
    stream = await subscribe(alice, "t1")
    await alice.post("/api/agents/echo/send-message", {"message": "one", "threadId": "t1"})
    _, first = await sse_chunks(stream, until=ends_run)
    await alice.post("/api/agents/echo/send-message", {"message": "two", "threadId": "t1"})
    _, second = await sse_chunks(stream, until=ends_run)
    assert second[0]["seq"] == first[-1]["seq"] + 1
    assert first[0]["runId"] != second[0]["runId"]


async def test_keep_alive_after_silence(alice: Api, settings):
    settings.MASTRA_API_KEEPALIVE_S = 0.05
    stream = await subscribe(alice, "t1")
    piece = await asyncio.wait_for(stream.streaming_content.__anext__(), 5)
    assert piece == b": keep-alive\n\n"
    await alice.post("/api/agents/echo/send-message", {"message": "after", "threadId": "t1"})
    _, chunks = await sse_chunks(stream, until=ends_run)
    assert chunks[0]["type"] == "start"


async def test_chunks_a_subscriber_has_not_read_yet_go_out_in_one_write_each_its_own_event(alice: Api):
    slow = await subscribe(alice, "t1")  # does not read while the run goes on
    reader = await subscribe(alice, "t1")
    await alice.post("/api/agents/echo/send-message", {"message": "one", "threadId": "t1"})
    _, chunks = await sse_chunks(reader, until=ends_run)  # the run is over: every chunk waits for slow
    piece = await asyncio.wait_for(slow.streaming_content.__anext__(), 5)
    assert piece.split(b"\n\n")[:-1] == [b"data: " + json.dumps(c, separators=(",", ":")).encode() for c in chunks]


async def test_resume_after_last_seq_in_the_body_or_the_header(alice: Api):
    stream = await subscribe(alice, "t1")
    await alice.post("/api/agents/echo/send-message", {"message": "one", "threadId": "t1"})
    _, chunks = await sse_chunks(stream, until=ends_run)
    resumed = await subscribe(alice, "t1", body={"lastSeq": 3})
    _, replay = await sse_chunks(resumed, until=ends_run)
    assert replay == chunks[3:]
    by_header = await subscribe(alice, "t1", headers={"Last-Event-ID": "5"})
    _, replay = await sse_chunks(by_header, until=ends_run)
    assert replay == chunks[5:]


async def test_a_signal_id_says_nothing_about_another_users_threads(alice: Api, bob: Api):
    signal = {"type": "reactive", "contents": "note", "id": "sig-1"}
    persist = {"threadId": "t1", "ifIdle": {"behavior": "persist"}}
    first = await alice.post("/api/agents/echo/signals", {"signal": signal, **persist})
    assert first.status_code == 200
    again = await alice.post("/api/agents/echo/signals", {"signal": signal, **persist})
    assert (again.status_code, body(again)["code"]) == (409, "duplicate_signal_id")  # in alice's own thread
    for thread_id in ("t1", "t2"):  # bob's t1 (same id as alice's) and another thread: both free
        theirs = await bob.post("/api/agents/echo/signals", {"signal": signal, **persist, "threadId": thread_id})
        assert theirs.status_code == 200 and body(theirs)["signal"]["id"] == "sig-1"


async def test_subscribe_isolation(alice: Api, bob: Api, ops: Api):
    await alice.post("/api/agents/echo/send-message", {"message": "mine", "threadId": "t1"})
    other = await bob.post("/api/agents/echo/threads/subscribe", {"threadId": "t1", "lastSeq": 0})
    assert other.status_code == 200  # bob's own t1: empty, as any free id
    named = await bob.post("/api/agents/echo/threads/subscribe", {"threadId": "t2", "resourceId": "alice"})
    assert named.status_code == 403 and body(named)["code"] == "resource_forbidden"
    staff = await subscribe(ops, "t1", body={"lastSeq": 0, "resourceId": "alice"})
    _, chunks = await sse_chunks(staff, until=ends_run)
    assert chunks[0]["type"] == "start"


@pytest.mark.parametrize("payload, status, code", [
    ({"threadId": "t1"}, 400, "missing_message"),
    ({"message": "x"}, 400, "missing_target"),
    ({"message": 5, "threadId": "t1"}, 400, "invalid_message"),
    ({"message": "x", "threadId": "t1", "ifIdle": {"behavior": "explode"}}, 400, "invalid_behavior"),
    ({"message": "x", "threadId": 7}, 400, "invalid_field"),
    ({"message": "x", "threadId": "t\x01"}, 400, "invalid_id"),
    ({"message": "x", "threadId": "t\x00"}, 400, "invalid_text"),  # no body may hold a NUL
])
async def test_bad_sends_are_400_and_store_nothing(alice: Api, payload, status, code):
    from agents.models import ThreadInput

    response = await alice.post("/api/agents/echo/send-message", payload)
    assert response.status_code == status, response.content
    assert body(response)["code"] == code
    assert await ThreadInput.objects.acount() == 0


async def test_a_thread_feature_of_an_agent_without_memory_is_400(alice: Api):
    response = await alice.post("/api/agents/plain/send-message", {"message": "x", "threadId": "t1"})
    assert response.status_code == 400 and body(response)["code"] == "agent_config_error"


async def test_signals_and_queue_message_answer_as_mastra(alice: Api):
    stream = await subscribe(alice, "t1")
    signal = body(await alice.post("/api/agents/echo/signals", {
        "signal": {"type": "system-reminder", "contents": "remember"}, "threadId": "t1"}))
    assert signal["accepted"] is True and signal["action"] == "wake"
    assert signal["signal"]["type"] == "reactive" and signal["signal"]["tagName"] == "system-reminder"
    given = body(await alice.post("/api/agents/echo/signals", {
        "signal": {"type": "reactive", "contents": "x", "attributes": {"k": "v"}, "metadata": {"m": 1},
                   "transient": True}, "threadId": "t1", "ifIdle": {"behavior": "discard"}}))
    assert {k: given["signal"][k] for k in ("attributes", "metadata", "transient")} == {
        "attributes": {"k": "v"}, "metadata": {"m": 1}, "transient": True}
    _, chunks = await sse_chunks(stream, until=ends_run)
    assert chunks[1]["type"] == "data-signal" and chunks[1]["data"]["contents"] == "remember"
    queued = body(await alice.post("/api/agents/echo/queue-message", {"message": "later", "threadId": "t1"}))
    assert queued["accepted"] is True and queued["action"] == "wake"


async def test_state_signals_skip_an_unchanged_state(alice: Api):
    state = {"id": "browser", "cacheKey": "page-1", "mode": "snapshot", "contents": "on page 1"}
    missing = await alice.post("/api/agents/echo/state-signals", {"state": state, "threadId": "t1"})
    assert missing.status_code == 404 and body(missing)["code"] == "thread_not_found"
    assert (await alice.post("/api/memory/threads", {"threadId": "t1"})).status_code == 200
    first = body(await alice.post("/api/agents/echo/state-signals", {"state": state, "threadId": "t1"}))
    assert first["accepted"] is True and first["signal"]["type"] == "state"
    await asyncio.sleep(0)
    second = body(await alice.post("/api/agents/echo/state-signals", {"state": state, "threadId": "t1"}))
    assert second == {"accepted": False, "action": None, "runId": None, "signal": None, "skipped": True,
                      "reason": "unchanged"}


async def test_notifications_store_a_record_and_answer_the_decision(alice: Api, bob: Api):
    from inbox.models import NotificationRecord

    notification = {"source": "github", "kind": "ci-status", "priority": "high", "summary": "CI failed on main"}
    response = await alice.post("/api/agents/echo/notifications", {"notification": notification, "threadId": "t1"})
    assert response.status_code == 200, response.content
    result = body(response)
    assert result["decision"]["action"] == "deliver"
    record = await NotificationRecord.objects.aget()
    assert (record.resource_id, record.thread_id, record.summary) == ("alice", "alice\x1ft1", "CI failed on main")
    other = await bob.post("/api/agents/echo/notifications", {"notification": notification, "threadId": "t1"})
    assert other.status_code == 200  # bob's own t1
    assert sorted([r.thread_id async for r in NotificationRecord.objects.all()]) == ["alice\x1ft1", "bob\x1ft1"]
    bad = await alice.post("/api/agents/echo/notifications", {"notification": {"source": "x"}, "threadId": "t1"})
    assert bad.status_code == 400 and body(bad)["code"] == "missing_summary"


async def test_abort_stops_the_active_run(alice: Api, bob: Api):
    idle = body(await alice.post("/api/agents/slow/threads/abort", {"threadId": "t1"}))
    assert idle == {"aborted": False}
    stream = await subscribe(alice, "t1", agent="slow")
    await alice.post("/api/agents/slow/send-message", {"message": LONG, "threadId": "t1"})
    await sse_chunks(stream, until=lambda c: c["type"] == "text-delta")
    assert body(await bob.post("/api/agents/slow/threads/abort", {"threadId": "t1"})) == {"aborted": False}
    aborted = await alice.post("/api/agents/slow/threads/abort", {"threadId": "t1"})
    assert body(aborted) == {"aborted": True}
    _, chunks = await sse_chunks(stream, until=ends_run)
    assert chunks[-1]["type"] == "abort"


async def test_the_queue_lists_and_cancels_only_the_threads_own_inputs(alice: Api, bob: Api):
    stream = await subscribe(alice, "t1", agent="slow")
    # 40 lines at 40 ms each: the run stays active while the test queues, lists and cancels
    await alice.post("/api/agents/slow/send-message", {"message": LONG, "threadId": "t1"})
    await sse_chunks(stream, until=lambda c: c["type"] == "text-delta")
    first = body(await alice.post("/api/agents/slow/queue-message", {"message": "q1", "threadId": "t1"}))
    second = body(await alice.post("/api/agents/slow/queue-message", {"message": "q2", "threadId": "t1"}))
    assert first["action"] == second["action"] == "deliver"
    assert first["runId"] != second["runId"]  # each queued message runs as a run of its own
    queued = body(await alice.get("/api/agents/slow/threads/queue", threadId="t1"))["queued"]
    assert [q["signal"]["contents"] for q in queued] == ["q1", "q2"]
    assert body(await bob.get("/api/agents/slow/threads/queue", threadId="t1")) == {"queued": []}  # bob's own t1
    # bob's own thread cannot reach alice's inputs by id
    foreign = await bob.post("/api/agents/slow/threads/queue/cancel", {"threadId": "b1", "ids": [queued[0]["id"]]})
    assert body(foreign) == {"cancelled": 0}
    cancelled = await alice.post("/api/agents/slow/threads/queue/cancel", {"threadId": "t1", "ids": [queued[0]["id"]]})
    assert body(cancelled) == {"cancelled": 1}
    left = body(await alice.get("/api/agents/slow/threads/queue", threadId="t1"))["queued"]
    assert [q["signal"]["contents"] for q in left] == ["q2"]
    await alice.post("/api/agents/slow/threads/abort", {"threadId": "t1"})
