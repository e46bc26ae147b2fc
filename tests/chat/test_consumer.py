"""The chat websocket (DESIGN §5): close codes, the snapshot, streaming with seq, resume after
lastSeq, each client frame, isolation and error frames."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from django.utils import timezone

from agents.models import Message, Thread, ThreadInput
from tests.agents.thread_harness import GatedEcho, wait_idle
from tests.chat import site
from tests.chat.wsclient import close_code, frames_until, open_socket, run_ended, send

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

User = get_user_model()


@pytest.fixture
async def bob():
    return await sync_to_async(User.objects.create_user)("bob", password="x")


@pytest.fixture
async def staff():
    return await sync_to_async(User.objects.create_user)("olga", password="x", is_staff=True)


def seqs(frames: list[dict]) -> list[int]:
    return [f["seq"] for f in frames if "seq" in f]


def chunks(frames: list[dict]) -> list[dict]:
    return [f for f in frames if "seq" in f]


async def run_once(comm, text: str) -> list[dict]:
    await send(comm, {"type": "send-message", "message": text})
    return await frames_until(comm, run_ended)


# -- connecting ---------------------------------------------------------------------------------
async def test_an_anonymous_socket_is_closed_with_4401(chat_site):
    comm = await open_socket(None)
    assert comm.connected
    assert await close_code(comm) == 4401


@pytest.mark.parametrize("agent", ["nobody", "no-memory"])
async def test_an_unknown_agent_or_one_without_memory_is_closed_with_4404(chat_site, alice, agent):
    comm = await open_socket(alice, agent=agent)
    assert await close_code(comm) == 4404


@pytest.mark.parametrize("thread_id", ["github:acme/app", "acme/app#12", "a/b/c/", "slack:T1:C2:1700000000.0001"])
async def test_a_thread_id_with_slashes_colons_or_hashes_opens_and_streams(chat_site, alice, thread_id):
    """The page percent-encodes the thread id in the socket's URL (``encodeURIComponent``); the
    server decodes the path, and the route takes the id whole."""
    from urllib.parse import quote

    comm = await open_socket(alice, thread=quote(thread_id, safe=""))
    snapshot = await comm.receive_json_from()
    assert (snapshot["type"], snapshot["messages"]) == ("snapshot", [])
    frames = await run_once(comm, "hello")
    assert frames[-1]["type"] == "finish"
    await wait_idle("alice", thread_id)
    assert await sync_to_async(Thread.objects.filter(resource_id="alice", thread_id=thread_id).count)() == 1
    await comm.disconnect()


async def test_a_websocket_path_the_chat_does_not_serve_is_closed_with_4404(chat_site, alice, caplog):
    from channels.testing import WebsocketCommunicator

    from mastra_site.asgi import application

    comm = WebsocketCommunicator(application, "/ws/nothing/here/", headers=[(b"host", b"testserver"),
                                                                            (b"origin", b"http://testserver")])
    connected, _ = await comm.connect(timeout=5)
    assert connected and await close_code(comm) == 4404
    assert [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")] == []


async def test_another_users_thread_id_opens_the_callers_own_thread(chat_site, alice, bob):
    await sync_to_async(Thread.objects.create)(thread_id="alices", resource_id="alice")
    await sync_to_async(Message.objects.create)(message_id="m1", thread_id="alice\x1falices", resource_id="alice",
                                                role="user", content="alice's secret", created_at=timezone.now())
    comm = await open_socket(bob, thread="alices")
    snapshot = await comm.receive_json_from()
    assert (snapshot["type"], snapshot["messages"], snapshot["lastSeq"]) == ("snapshot", [], 0)  # bob's own, empty
    await comm.disconnect()
    naming = await open_socket(bob, thread="alices", query="resourceId=alice")
    assert await close_code(naming) == 4404  # a user may not name another resource


async def test_an_invalid_thread_id_is_closed_with_4404(chat_site, alice):
    comm = await open_socket(alice, thread="a" * 300)
    assert await close_code(comm) == 4404


async def test_staff_may_watch_any_thread(chat_site, alice, staff):
    await sync_to_async(Thread.objects.create)(thread_id="alices", resource_id="alice")
    comm = await open_socket(staff, thread="alices", query="resourceId=alice")
    assert (await comm.receive_json_from())["type"] == "snapshot"
    await comm.disconnect()


async def test_a_foreign_origin_is_refused(chat_site, alice):
    comm = await open_socket(alice, origin=b"http://evil.example")
    assert not comm.connected


async def test_a_new_thread_starts_with_an_empty_snapshot(chat_site, alice):
    comm = await open_socket(alice)
    assert await comm.receive_json_from() == {"type": "snapshot", "messages": [], "hasEarlier": False, "queued": [],
                                              "approvals": [], "activeRunId": None, "lastSeq": 0}
    assert await comm.receive_nothing()
    await comm.disconnect()


# -- streaming, snapshot, resume ----------------------------------------------------------------
async def test_a_message_streams_with_increasing_seq_and_lands_in_the_next_snapshot(chat_site, alice):
    comm = await open_socket(alice)
    await comm.receive_json_from()
    frames = await run_once(comm, "hello\nworld")
    accepted = frames[0] if frames[0]["type"] == "accepted" else next(f for f in frames if f["type"] == "accepted")
    assert accepted["action"] == "wake" and accepted["signal"]["type"] == "user"
    got = chunks(frames)
    assert seqs(got) == list(range(1, len(got) + 1))
    assert got[0]["type"] == "start" and got[-1]["type"] == "finish"
    assert {c["runId"] for c in got} == {accepted["runId"]}
    text = "".join(c["payload"]["text"] for c in got if c["type"] == "text-delta")
    assert text == "echo: hello\necho: world"
    echo = next(c for c in got if c["type"] == "data-user-message")
    assert echo["data"]["contents"] == "hello\nworld" and echo["data"]["id"] == accepted["signal"]["id"]
    await wait_idle("alice", "t1")
    await comm.disconnect()

    again = await open_socket(alice)
    snapshot = await again.receive_json_from()
    assert snapshot["lastSeq"] == len(got) and snapshot["activeRunId"] is None
    # the messages in Mastra's stored format, as the HTTP API serves them
    first, answer = snapshot["messages"]
    assert (first["role"], first["id"], first["type"]) == ("signal", accepted["signal"]["id"], "user")
    assert first["content"]["parts"] == [{"type": "text", "text": "hello\nworld"}]
    assert first["content"]["metadata"]["signal"]["id"] == accepted["signal"]["id"]
    assert answer["role"] == "assistant" and answer["content"]["format"] == 2
    assert [p["text"] for p in answer["content"]["parts"] if p["type"] == "text"] == ["echo: hello\necho: world"]
    assert await again.receive_nothing()  # nothing is replayed: it is all in the messages
    await again.disconnect()


async def test_resume_after_last_seq_gets_exactly_the_chunks_after_it(chat_site, alice):
    comm = await open_socket(alice)
    await comm.receive_json_from()
    got = chunks(await run_once(comm, "a\nb\nc"))
    await wait_idle("alice", "t1")
    await comm.disconnect()
    resumed = await open_socket(alice, query="lastSeq=3")
    snapshot = await resumed.receive_json_from()
    assert snapshot["type"] == "snapshot" and snapshot["lastSeq"] == 3
    rest = [await resumed.receive_json_from() for _ in range(len(got) - 3)]
    assert rest == got[3:]
    assert await resumed.receive_nothing()
    await resumed.disconnect()


@pytest.mark.parametrize("value", ["-4", "%C2%B2", "%B2", "1" * 5000])  # ² in UTF-8 and in latin-1
async def test_an_invalid_last_seq_is_an_error_frame_and_a_fresh_snapshot(chat_site, alice, value):
    comm = await open_socket(alice, query=f"lastSeq={value}")
    assert await comm.receive_json_from() == {"type": "error", "code": "invalid_last_seq",
                                              "message": "lastSeq must be a whole number from 0"}
    assert (await comm.receive_json_from())["type"] == "snapshot"
    await comm.disconnect()


async def test_joining_mid_run_replays_the_run_once_then_streams_live(chat_site, alice):
    chat_site(model=GatedEcho(after=2))
    first = await open_socket(alice)
    await first.receive_json_from()
    await send(first, {"type": "send-message", "message": "one\ntwo\nthree"})
    before = await frames_until(first, "text-delta")
    run_id = chunks(before)[0]["runId"]
    late = await open_socket(alice)
    snapshot = await late.receive_json_from()
    assert snapshot["activeRunId"] == run_id and snapshot["messages"] == [] and snapshot["lastSeq"] == 0
    site.mastra.get_agent("chat-bot").model.open()
    first_rest = await frames_until(first, run_ended)
    late_all = await frames_until(late, run_ended)
    assert chunks(late_all) == chunks(before) + chunks(first_rest)  # the whole run, each chunk once
    assert seqs(late_all) == list(range(1, len(late_all) + 1))
    await first.disconnect()
    await late.disconnect()


async def test_reconnecting_mid_run_with_last_seq_has_no_gap_and_no_duplicate(chat_site, alice):
    chat_site(model=GatedEcho(after=2))
    comm = await open_socket(alice)
    await comm.receive_json_from()
    await send(comm, {"type": "send-message", "message": "one\ntwo\nthree"})
    seen = chunks(await frames_until(comm, lambda f: f["type"] == "text-delta"))
    await comm.disconnect()
    again = await open_socket(alice, query=f"lastSeq={seen[-1]['seq']}")
    snapshot = await again.receive_json_from()
    assert snapshot["lastSeq"] == seen[-1]["seq"] and snapshot["activeRunId"] == seen[0]["runId"]
    site.mastra.get_agent("chat-bot").model.open()
    rest = chunks(await frames_until(again, run_ended))
    assert seqs(seen + rest) == list(range(1, len(seen) + len(rest) + 1))
    text = "".join(c["payload"]["text"] for c in seen + rest if c["type"] == "text-delta")
    assert text == "echo: one\necho: two\necho: three"
    await again.disconnect()


# -- client frames ------------------------------------------------------------------------------
async def test_ping_gets_pong(chat_site, alice):
    comm = await open_socket(alice)
    await comm.receive_json_from()
    await send(comm, {"type": "ping"})
    assert await comm.receive_json_from() == {"type": "pong"}
    await comm.disconnect()


async def test_send_message_with_attributes_reaches_the_model_as_xml(chat_site, alice):
    comm = await open_socket(alice)
    await comm.receive_json_from()
    await send(comm, {"type": "send-message", "message": "deploy?", "attributes": {"sender": "Ann", "platform": "slack"}})
    frames = await frames_until(comm, run_ended)
    echo = next(f for f in frames if f["type"] == "data-user-message")
    assert echo["data"]["attributes"] == {"sender": "Ann", "platform": "slack"}
    text = "".join(c["payload"]["text"] for c in frames if c["type"] == "text-delta")
    assert text == 'echo: <user sender="Ann" platform="slack">deploy?</user>'
    await comm.disconnect()


async def test_a_message_while_running_is_delivered_into_the_run(chat_site, alice):
    chat_site(model=GatedEcho(after=2))
    comm = await open_socket(alice)
    await comm.receive_json_from()
    await send(comm, {"type": "send-message", "message": "first"})
    started = await frames_until(comm, "text-delta")
    await send(comm, {"type": "send-message", "message": "second"})
    accepted = await frames_until(comm, "accepted")
    assert accepted[-1]["action"] == "deliver" and accepted[-1]["runId"] == chunks(started)[0]["runId"]
    site.mastra.get_agent("chat-bot").model.open()
    rest = await frames_until(comm, run_ended)
    assert [c["runId"] for c in chunks(rest) if c["type"] == "start"] == []
    await comm.disconnect()


async def test_queue_message_shows_in_the_queue_and_cancel_removes_it(chat_site, alice):
    chat_site(model=GatedEcho(after=2))
    comm = await open_socket(alice)
    await comm.receive_json_from()
    await send(comm, {"type": "send-message", "message": "first"})
    await frames_until(comm, "text-delta")
    await send(comm, {"type": "queue-message", "message": "later <b>please</b>"})
    frames = await frames_until(comm, "queue")
    accepted = next(f for f in frames if f["type"] == "accepted")
    queue = frames[-1]["queued"]
    assert [(q["id"], q["kind"], q["contents"]) for q in queue] == [
        (accepted["signal"]["id"], "queue", "later <b>please</b>")]
    # a late joiner sees the queue in its snapshot
    late = await open_socket(alice)
    assert [q["id"] for q in (await late.receive_json_from())["queued"]] == [accepted["signal"]["id"]]
    await late.disconnect()
    await send(comm, {"type": "cancel-queued", "signalId": accepted["signal"]["id"]})
    assert (await frames_until(comm, "queue"))[-1] == {"type": "queue", "queued": []}
    await send(comm, {"type": "cancel-queued", "signalId": accepted["signal"]["id"]})
    error = (await frames_until(comm, "error"))[-1]
    assert error["code"] == "queued_input_not_found"
    site.mastra.get_agent("chat-bot").model.open()
    await frames_until(comm, run_ended)
    await wait_idle("alice", "t1")
    statuses = await sync_to_async(lambda: list(ThreadInput.objects.order_by("id").values_list("status", flat=True)))()
    assert statuses == ["consumed", "cancelled"]
    await comm.disconnect()


async def test_abort_stops_the_run(chat_site, alice):
    chat_site(model=GatedEcho(after=2))
    comm = await open_socket(alice)
    await comm.receive_json_from()
    await send(comm, {"type": "send-message", "message": "long\nanswer"})
    await frames_until(comm, "text-delta")
    await send(comm, {"type": "abort"})
    frames = await frames_until(comm, "abort")
    assert {"type": "abort-requested", "aborted": True} in frames
    await wait_idle("alice", "t1")
    await send(comm, {"type": "abort"})
    assert (await frames_until(comm, "abort-requested"))[-1] == {"type": "abort-requested", "aborted": False}
    await comm.disconnect()


async def suspend_on_delete(comm) -> tuple[str, str]:
    await send(comm, {"type": "send-message", "message": '/tool delete-file {"path": "/tmp/x"}'})
    frames = await frames_until(comm, run_ended)
    approval = next(f for f in frames if f["type"] == "tool-call-approval")
    assert frames[-1]["payload"]["stepResult"]["reason"] == "suspended"
    return approval["runId"], approval["payload"]["toolCallId"]


async def test_approving_a_tool_call_runs_it_and_continues_the_run(chat_site, alice):
    comm = await open_socket(alice)
    await comm.receive_json_from()
    run_id, call_id = await suspend_on_delete(comm)
    late = await open_socket(alice)
    snapshot = await late.receive_json_from()
    assert snapshot["activeRunId"] == run_id
    assert snapshot["approvals"] == [{"runId": run_id, "agentId": "chat-bot", "toolCallId": call_id,
                                      "toolName": "delete-file", "args": {"path": "/tmp/x"}}]
    await late.disconnect()
    await send(comm, {"type": "tool-approval", "runId": run_id, "toolCallId": call_id, "approved": True})
    frames = await frames_until(comm, run_ended)
    result = next(f for f in frames if f["type"] == "tool-result")
    assert result["payload"]["result"] == {"deleted": "/tmp/x"}
    assert site.DELETED == [{"path": "/tmp/x"}]
    # deciding twice is stale
    await send(comm, {"type": "tool-approval", "runId": run_id, "toolCallId": call_id, "approved": True})
    assert (await frames_until(comm, "error"))[-1]["code"] == "approval_not_found"
    await comm.disconnect()


async def test_declining_a_tool_call_never_runs_it(chat_site, alice):
    comm = await open_socket(alice)
    await comm.receive_json_from()
    run_id, call_id = await suspend_on_delete(comm)
    await send(comm, {"type": "tool-approval", "runId": run_id, "toolCallId": call_id, "approved": False})
    frames = await frames_until(comm, run_ended)
    assert frames[-1]["type"] == "finish" and site.DELETED == []
    await comm.disconnect()


async def test_a_stale_tool_call_id_is_an_error_frame(chat_site, alice):
    comm = await open_socket(alice)
    await comm.receive_json_from()
    run_id, _ = await suspend_on_delete(comm)
    await send(comm, {"type": "tool-approval", "runId": run_id, "toolCallId": "other", "approved": True})
    assert (await frames_until(comm, "error"))[-1]["code"] == "approval_stale"
    await send(comm, {"type": "abort"})
    await frames_until(comm, "abort")
    await comm.disconnect()


# -- isolation ----------------------------------------------------------------------------------
async def test_another_users_run_and_queue_cannot_be_reached_from_ones_own_thread(chat_site, alice, bob):
    chat_site(model=GatedEcho(after=2))
    mine = await open_socket(alice)
    await mine.receive_json_from()
    await send(mine, {"type": "send-message", "message": "first"})
    started = await frames_until(mine, "text-delta")
    await send(mine, {"type": "queue-message", "message": "later"})
    queued = (await frames_until(mine, "queue"))[-1]["queued"][0]["id"]
    theirs = await open_socket(bob, thread="bobs")
    await theirs.receive_json_from()
    await send(theirs, {"type": "cancel-queued", "signalId": queued})
    assert (await frames_until(theirs, "error"))[-1]["code"] == "queued_input_not_found"
    await send(theirs, {"type": "tool-approval", "runId": chunks(started)[0]["runId"], "toolCallId": "c",
                        "approved": True})
    assert (await frames_until(theirs, "error"))[-1]["code"] == "approval_not_found"
    assert await theirs.receive_nothing()  # bob hears nothing of alice's thread
    site.mastra.get_agent("chat-bot").model.open()
    await frames_until(mine, lambda f: f["type"] == "finish" and f["runId"] != chunks(started)[0]["runId"])
    await theirs.disconnect()
    await mine.disconnect()


# -- bad frames ---------------------------------------------------------------------------------
BAD_FRAMES = [
    ("not json", "invalid_json", "the frame is not valid JSON: Expecting value: line 1 column 1 (char 0)"),
    ("[1, 2]", "invalid_frame", "a frame is a JSON object with a type"),
    ('{"type": "explode"}', "invalid_frame",
     "unknown frame type 'explode'; one of send-message, queue-message, abort, tool-approval, cancel-queued, ping"),
    ('{"type": "send-message"}', "invalid_frame", "send-message needs a non-empty string message"),
    ('{"type": "queue-message", "message": "  "}', "invalid_frame", "queue-message needs a non-empty string message"),
    ('{"type": "send-message", "message": "x", "attributes": [1]}', "invalid_frame", "attributes must be an object"),
    ('{"type": "send-message", "message": "x", "attributes": {"bad name": 1}}', "invalid_attribute_name", None),
    ('{"type": "tool-approval", "runId": "r", "toolCallId": "c", "approved": "yes"}', "invalid_frame",
     "tool-approval needs runId and toolCallId (strings) and approved (true or false)"),
    ('{"type": "cancel-queued"}', "invalid_frame", "cancel-queued needs a signalId (string)"),
]


@pytest.mark.parametrize("text,code,message", BAD_FRAMES)
async def test_a_bad_frame_gets_an_error_frame_and_the_socket_stays_open(chat_site, alice, text, code, message):
    comm = await open_socket(alice)
    await comm.receive_json_from()
    await comm.send_to(text_data=text)
    error = await comm.receive_json_from()
    assert error["type"] == "error" and error["code"] == code
    if message is not None:
        assert error["message"] == message
    await send(comm, {"type": "ping"})
    assert await comm.receive_json_from() == {"type": "pong"}
    await comm.disconnect()


#: frames no JSON route accepts either: the same codes as HTTP (docs/security.md, "Bad input")
UNSTORABLE_FRAMES = [
    ("[" * 100_000, "invalid_json"),
    ('{"type": "send-message", "message": "x", "attributes": ' + '{"a":' * 100 + "1" + "}" * 100 + "}",
     "invalid_json"),
    ('{"type": "send-message", "message": "a\\ud800b"}', "invalid_text"),
    ('{"type": "send-message", "message": "x", "attributes": {"k": "\\udfff"}}', "invalid_text"),
    ('{"type": "send-message", "message": "a\\u0000b"}', "invalid_text"),
    ('{"type": "queue-message", "message": "x", "attributes": {"k\\u0000": "v"}}', "invalid_text"),
    ('{"type": "tool-approval", "runId": "r\\u0000", "toolCallId": "c", "approved": true}', "invalid_text"),
    ('{"type": "cancel-queued", "signalId": "\\ud800"}', "invalid_text"),
    ('{"type": "send-message", "message": "x", "attributes": {"n": ' + "9" * 5000 + "}}", "invalid_json"),
    ('{"type": "send-message", "message": "x", "attributes": {"n": NaN}}', "invalid_json"),
    ('{"type": "send-message", "message": "x", "attributes": {"n": 1e999}}', "invalid_json"),
]


async def test_frames_nested_too_deep_or_with_unstorable_text_get_the_http_codes(chat_site, alice):
    comm = await open_socket(alice)
    await comm.receive_json_from()
    for text, code in UNSTORABLE_FRAMES:
        await comm.send_to(text_data=text)
        error = await comm.receive_json_from()
        assert (error["type"], error["code"]) == ("error", code), (text[:80], error)
    await send(comm, {"type": "ping"})
    assert await comm.receive_json_from() == {"type": "pong"}
    assert await comm.receive_nothing()
    await comm.disconnect()
    assert await sync_to_async(ThreadInput.objects.count)() == 0
    assert await sync_to_async(Thread.objects.count)() == 0


async def test_a_binary_frame_gets_an_error_frame(chat_site, alice):
    comm = await open_socket(alice)
    await comm.receive_json_from()
    await comm.send_to(bytes_data=b"\x00\x01")
    assert (await comm.receive_json_from())["code"] == "invalid_frame"
    await comm.disconnect()


async def test_an_oversize_message_gets_an_error_frame_and_stores_nothing(chat_site, alice, settings):
    from agents.runtime.limits import configure_limits, current_limits

    previous = current_limits().max_signal_bytes
    configure_limits(max_signal_bytes=2048)
    settings.MASTRA_CHAT_MAX_FRAME_BYTES = 4096
    try:
        comm = await open_socket(alice)
        await comm.receive_json_from()
        await send(comm, {"type": "send-message", "message": "x" * 3000})
        error = await comm.receive_json_from()
        assert error["type"] == "error" and error["code"] == "signal_too_large"
        await comm.send_to(text_data=json.dumps({"type": "send-message", "message": "y" * 5000}))
        assert await comm.receive_json_from() == {"type": "error", "code": "frame_too_large",
                                                  "message": "the frame is larger than 4096 bytes"}
        await send(comm, {"type": "ping"})
        assert await comm.receive_json_from() == {"type": "pong"}
        await comm.disconnect()
    finally:
        configure_limits(max_signal_bytes=previous)
    assert await sync_to_async(ThreadInput.objects.count)() == 0


# -- who may pick a model (docs/security.md) -----------------------------------------------------
@pytest.fixture
def capture(monkeypatch):
    """A local HTTP server that records every request; provider keys set, no base URL."""
    from tests.runtime.providers.wire import WireServer, isolate_env, json_reply

    isolate_env(monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai-key-000000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-anthropic-key-000000")
    with WireServer().reply(json_reply(400, {"error": {"message": "captured"}})) as server:
        yield server


@pytest.mark.parametrize("kind", ["send-message", "queue-message"])
@pytest.mark.parametrize("provider", ["openai/gpt-4o", "anthropic/claude-sonnet-4-5"])
async def test_a_frame_may_not_set_a_model_connection(chat_site, alice, capture, kind, provider):
    chat_site(caller_models=[provider])
    comm = await open_socket(alice)
    await comm.receive_json_from()
    await send(comm, {"type": kind, "message": "hi", "model": {"id": provider, "baseURL": capture.url}})
    assert await comm.receive_json_from() == {
        "type": "error", "code": "model_connection_forbidden", "frame": kind,
        "message": "model.baseURL: a request may not set a model connection (base URL, headers, keys); "
                   "name a model by its id, e.g. 'openai/gpt-4o'"}
    assert await comm.receive_nothing()
    await comm.disconnect()
    assert capture.requests == []
    assert await sync_to_async(ThreadInput.objects.count)() == 0


async def test_a_frame_may_name_only_a_model_the_agent_allows(chat_site, alice, capture):
    comm = await open_socket(alice)
    await comm.receive_json_from()
    await send(comm, {"type": "send-message", "message": "hi", "model": "openai/gpt-4o"})
    assert await comm.receive_json_from() == {
        "type": "error", "code": "model_forbidden", "frame": "send-message",
        "message": "model: agent 'chat-bot' does not let callers choose the model 'openai/gpt-4o'"}
    await send(comm, {"type": "send-message", "message": "hi", "model": {"id": "local/echo"}})
    assert (await comm.receive_json_from())["code"] == "invalid_model"
    assert await comm.receive_nothing()
    await comm.disconnect()
    assert capture.requests == []
    assert await sync_to_async(ThreadInput.objects.count)() == 0


async def test_a_frame_naming_an_allowed_model_runs_with_it(chat_site, alice, capture):
    chat_site(caller_models=["local/echo"])
    comm = await open_socket(alice)
    await comm.receive_json_from()
    await send(comm, {"type": "send-message", "message": "hi", "model": "local/echo"})
    frames = await frames_until(comm, run_ended)
    assert next(f for f in frames if f["type"] == "accepted")["action"] == "wake"
    assert "".join(f["payload"]["text"] for f in frames if f["type"] == "text-delta") == "echo: hi"
    await wait_idle("alice", "t1")
    await comm.disconnect()


async def test_staff_with_the_permission_may_pick_any_model_on_the_socket(chat_site, staff, capture):
    from django.contrib.auth.models import Permission

    permission = await sync_to_async(Permission.objects.get)(codename="choose_any_model")
    await sync_to_async(staff.user_permissions.add)(permission)
    comm = await open_socket(staff)
    await comm.receive_json_from()
    await send(comm, {"type": "send-message", "message": "hi", "model": "local/echo"})
    frames = await frames_until(comm, run_ended)
    assert frames[-1]["type"] == "finish"
    await wait_idle("olga", "t1")
    await comm.disconnect()


async def test_an_approval_continues_the_run_with_its_own_agent_after_switching_agents(chat_site, alice):
    comm = await open_socket(alice)
    await comm.receive_json_from()
    run_id, call_id = await suspend_on_delete(comm)
    await comm.disconnect()
    other = await open_socket(alice, agent="helper")  # the same thread, watched through another agent
    snapshot = await other.receive_json_from()
    assert [a["toolCallId"] for a in snapshot["approvals"]] == [call_id]
    replayed = await frames_until(other, run_ended)  # the suspended run from its start
    assert replayed[-1]["payload"]["stepResult"]["reason"] == "suspended"
    await send(other, {"type": "tool-approval", "runId": run_id, "toolCallId": call_id, "approved": True})
    frames = await frames_until(other, run_ended)
    assert next(f for f in frames if f["type"] == "tool-result")["payload"]["result"] == {"deleted": "/tmp/x"}
    assert frames[-1]["type"] == "finish" and frames[-1]["payload"]["stepResult"]["reason"] == "stop"
    assert site.DELETED == [{"path": "/tmp/x"}]
    await other.disconnect()
