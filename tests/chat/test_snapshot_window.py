"""Long threads on the chat page: the snapshot carries the newest messages (what fits one websocket
message), the page reads older ones over HTTP (``GET /chat/api/messages``), and a chunk too large
for one websocket message is cut to fit instead of closing the socket again and again."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from agents.models import Message
from agents.runtime.chunks import chunk, snapshot_chunk
from agents.store import messages_save
from chat.frames import CUT_STRING_CHARS, chunk_fitted
from chat.snapshot import snapshot_chunk_window, thread_snapshot_build
from tests.agents.thread_harness import GatedEcho, wait_idle
from tests.chat import site
from tests.chat.wsclient import frames_until, open_socket, run_ended, send

User = get_user_model()


def say(i: int, text: str | None = None) -> dict:
    return {"id": f"m{i:04d}", "role": "user" if i % 2 else "assistant",
            "content": text if text is not None else f"message {i}"}


def fill(resource: str, thread: str, count: int, *, start: int = 1, text: str | None = None) -> list[str]:
    """``count`` messages in the thread (ids m0001…, oldest first); returns their ids."""
    messages = [say(i, text) for i in range(start, start + count)]
    messages_save(resource_id=resource, thread_id=thread, messages=messages)
    return [m["id"] for m in messages]


def ids(messages: list[dict]) -> list[str]:
    return [m["id"] for m in messages]


# -- the snapshot ------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_the_snapshot_carries_the_newest_messages_and_says_when_older_ones_are_left_out(settings):
    settings.MASTRA_CHAT_SNAPSHOT_MESSAGES = 100
    every = fill("alice", "long", 250)
    snapshot = thread_snapshot_build(resource_id="alice", thread_id="long")
    assert ids(snapshot["messages"]) == every[-100:]
    assert snapshot["hasEarlier"] is True
    fill("alice", "short", 100)
    snapshot = thread_snapshot_build(resource_id="alice", thread_id="short")
    assert (len(snapshot["messages"]), snapshot["hasEarlier"]) == (100, False)
    assert thread_snapshot_build(resource_id="alice", thread_id="none")["hasEarlier"] is False


@pytest.mark.django_db
def test_the_snapshot_fits_one_websocket_message_and_keeps_the_newest(settings):
    settings.MASTRA_CHAT_SNAPSHOT_MESSAGES = 100
    settings.DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE = 20_000
    # about 2,000 characters of JSON each: the text in a part, and again as Mastra's ``content.content``
    every = fill("alice", "wide", 60, text="x" * 900)
    snapshot = thread_snapshot_build(resource_id="alice", thread_id="wide")
    assert len(json.dumps(snapshot)) <= 20_000
    kept = ids(snapshot["messages"])
    assert 8 <= len(kept) < 60 and kept == every[-len(kept):] and snapshot["hasEarlier"] is True
    # a newest message larger than a websocket message: none in the snapshot, all over HTTP
    fill("alice", "wide", 1, start=61, text="y" * 30_000)
    snapshot = thread_snapshot_build(resource_id="alice", thread_id="wide")
    assert (snapshot["messages"], snapshot["hasEarlier"]) == ([], True)


@pytest.mark.django_db
def test_a_thread_snapshot_chunk_is_windowed_for_the_page(settings):
    settings.MASTRA_CHAT_SNAPSHOT_MESSAGES = 3
    messages = [{"id": f"m{i}", "role": "user", "content": {"format": 2, "parts": []}} for i in range(5)]
    whole = snapshot_chunk(thread_id="t", resource_id="alice", messages=messages, seq=7)
    page = snapshot_chunk_window(whole)
    assert ids(page["data"]["messages"]) == ["m2", "m3", "m4"]
    assert (page["data"]["hasEarlier"], page["seq"], page["type"]) == (True, 7, "data-thread-snapshot")
    assert len(whole["data"]["messages"]) == 5  # the chunk other subscribers get is not changed
    assert snapshot_chunk_window({**whole, "data": {**whole["data"], "messages": messages[:3]}})["data"]["hasEarlier"] is False


# -- the page's earlier messages ---------------------------------------------------------------------
@pytest.mark.django_db
def test_the_page_walks_back_to_the_first_message_a_window_at_a_time(client, settings):
    settings.MASTRA_CHAT_SNAPSHOT_MESSAGES = 40
    alice = User.objects.create_user("alice", password="alice-secret-1")
    every = fill("alice", "long", 100)
    client.force_login(alice)
    before = thread_snapshot_build(resource_id="alice", thread_id="long")["messages"][0]["id"]
    read = []
    while True:
        page = client.get("/chat/api/messages", {"threadId": "long", "before": before}).json()
        read = ids(page["messages"]) + read
        if not page["hasEarlier"]:
            break
        before = page["messages"][0]["id"]
    assert read == every[:-40]
    assert len(client.get("/chat/api/messages", {"threadId": "long", "before": "m0001"}).json()["messages"]) == 0
    newest = client.get("/chat/api/messages", {"threadId": "long"}).json()
    assert (ids(newest["messages"]), newest["hasEarlier"]) == (every[-40:], True)
    page = client.get("/chat/api/messages", {"threadId": "long", "before": "m0001"}).json()
    assert page == {"messages": [], "hasEarlier": False}


@pytest.mark.django_db
def test_a_message_larger_than_a_websocket_message_is_read_over_http(client, settings):
    settings.DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE = 20_000
    alice = User.objects.create_user("alice", password="alice-secret-1")
    fill("alice", "wide", 2)
    fill("alice", "wide", 1, start=3, text="y" * 30_000)
    client.force_login(alice)
    page = client.get("/chat/api/messages", {"threadId": "wide"}).json()
    assert (ids(page["messages"]), page["hasEarlier"]) == (["m0003"], True)
    assert page["messages"][0]["content"]["parts"][0]["text"] == "y" * 30_000
    page = client.get("/chat/api/messages", {"threadId": "wide", "before": "m0003"}).json()
    assert (ids(page["messages"]), page["hasEarlier"]) == (["m0001", "m0002"], False)


@pytest.mark.django_db
def test_earlier_messages_are_the_callers_own_and_bad_cursors_are_refused(client):
    alice = User.objects.create_user("alice", password="alice-secret-1")
    User.objects.create_user("bob", password="bob-secret-1")
    olga = User.objects.create_user("olga", password="olga-secret-1", is_staff=True)
    fill("bob", "t1", 3)
    assert client.get("/chat/api/messages", {"threadId": "t1"}).status_code == 401
    client.force_login(alice)
    assert client.get("/chat/api/messages", {"threadId": "t1"}).json() == {"messages": [], "hasEarlier": False}
    response = client.get("/chat/api/messages", {"threadId": "t1", "before": "m0003"})  # bob's message id
    assert (response.status_code, response.json()["code"]) == (404, "message_not_found")
    response = client.get("/chat/api/messages", {"threadId": "t1", "resourceId": "bob"})
    assert (response.status_code, response.json()["code"]) == (403, "resource_forbidden")
    response = client.get("/chat/api/messages", {"threadId": ""})
    assert (response.status_code, response.json()["code"]) == (400, "invalid_id")
    assert client.post("/chat/api/messages", {"threadId": "t1"}).status_code == 405
    client.force_login(olga)
    page = client.get("/chat/api/messages", {"threadId": "t1", "resourceId": "bob", "before": "m0003"}).json()
    assert ids(page["messages"]) == ["m0001", "m0002"]


# -- chunks too large for one websocket message ------------------------------------------------------
def test_a_chunk_over_the_limit_is_cut_to_fit_and_says_so():
    small = chunk("text-delta", "run-1", {"id": "t", "text": "hello"})
    text = json.dumps(small)
    assert chunk_fitted(small, text, 1000) is text
    big = {**chunk("text-delta", "run-1", {"id": "t", "text": "z" * 200_000}), "seq": 9}
    fitted = json.loads(chunk_fitted(big, json.dumps(big), 100_000))
    assert (fitted["type"], fitted["runId"], fitted["seq"], fitted["payload"]["id"]) == ("text-delta", "run-1", 9, "t")
    assert fitted["payload"]["text"].startswith("z" * CUT_STRING_CHARS + "… [")
    assert fitted["cut"] == len(json.dumps(big))
    many = {**chunk("tool-result", "run-1", {"toolCallId": "c", "result": ["w" * 60_000] * 40}), "seq": 10}
    fitted = chunk_fitted(many, json.dumps(many), 100_000)
    assert len(fitted) <= 100_000
    assert json.loads(fitted)["payload"] == {} and json.loads(fitted)["seq"] == 10


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_chunk_over_the_limit_reaches_the_page_cut_and_the_socket_stays_open(chat_site, alice, settings):
    settings.DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE = 50_000
    comm = await open_socket(alice)
    assert (await comm.receive_json_from())["type"] == "snapshot"
    await send(comm, {"type": "send-message", "message": "q" * 80_000})
    frames = await frames_until(comm, run_ended)
    assert frames[-1]["type"] == "finish"
    echo = next(f for f in frames if f["type"] == "data-user-message")
    assert echo["cut"] > 80_000 and len(json.dumps(echo)) <= 50_000
    deltas = "".join(f["payload"]["text"] for f in frames if f["type"] == "text-delta")
    assert "more characters not shown here]" in deltas
    assert [f["seq"] for f in frames if "seq" in f] == list(range(1, len([f for f in frames if "seq" in f]) + 1))
    await send(comm, {"type": "ping"})
    assert (await comm.receive_json_from())["type"] == "pong"
    await comm.disconnect()
    stored = await sync_to_async(lambda: [m.to_dict() for m in Message.objects.filter(resource_id="alice")])()
    assert "q" * 80_000 in json.dumps(stored)  # stored whole: only the frames were cut


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_large_queued_inputs_are_shown_cut_in_the_queue_and_the_snapshot(chat_site, alice, settings):
    settings.DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE = 100_000
    chat_site(model=GatedEcho(after=2))
    comm = await open_socket(alice)
    await comm.receive_json_from()
    await send(comm, {"type": "send-message", "message": "first"})
    await frames_until(comm, "text-delta")
    for letter in "abc":
        await send(comm, {"type": "queue-message", "message": letter * 70_000})
        queue = (await frames_until(comm, "queue"))[-1]
    assert len(queue["queued"]) == 3 and len(json.dumps(queue)) <= 100_000
    assert [q["contents"][:3] for q in queue["queued"]] == ["aaa", "bbb", "ccc"]
    late = await open_socket(alice)
    snapshot = await late.receive_json_from()
    assert snapshot["type"] == "snapshot" and len(json.dumps(snapshot)) <= 100_000
    assert [q["contents"].endswith("more characters not shown here]") for q in snapshot["queued"]] == [True] * 3
    await late.disconnect()
    site.mastra.get_agent("chat-bot").model.open()
    await frames_until(comm, run_ended)
    await wait_idle("alice", "t1")
    await comm.disconnect()
