"""Memory threads and messages over HTTP, with the envelopes ``@mastra/client-js`` reads; the
notification inbox; per persona."""

import asyncio

import pytest

from tests.agents.api.conftest import Api, body

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def test_create_get_update_delete_a_thread(alice: Api):
    created = await alice.post("/api/memory/threads?agentId=echo", {"threadId": "t1", "title": "First",
                                                                   "metadata": {"k": 1}})
    assert created.status_code == 200
    thread = body(created)
    assert (thread["id"], thread["resourceId"], thread["title"], thread["metadata"]) == ("t1", "alice", "First", {"k": 1})
    assert body(await alice.get("/api/memory/threads/t1", agentId="echo"))["title"] == "First"
    updated = body(await alice.patch("/api/memory/threads/t1?agentId=echo", {"title": "Renamed"}))
    assert updated["title"] == "Renamed" and updated["metadata"] == {"k": 1}
    deleted = await alice.delete("/api/memory/threads/t1?agentId=echo")
    assert body(deleted) == {"result": "Thread deleted"}
    gone = await alice.get("/api/memory/threads/t1")
    assert gone.status_code == 404 and body(gone)["code"] == "thread_not_found"


async def test_a_new_thread_gets_an_id(alice: Api):
    thread = body(await alice.post("/api/memory/threads", {"title": "untitled"}))
    assert len(thread["id"]) == 36 and thread["resourceId"] == "alice"


async def test_thread_pages_have_mastras_envelope(alice: Api, bob: Api, ops: Api):
    for n in range(3):
        await alice.post("/api/memory/threads", {"threadId": f"a{n}"})
    await bob.post("/api/memory/threads", {"threadId": "b0"})
    page = body(await alice.get("/api/memory/threads", agentId="echo", perPage="2"))
    assert set(page) == {"threads", "total", "page", "perPage", "hasMore"}
    assert (page["total"], page["page"], page["perPage"], page["hasMore"]) == (3, 0, 2, True)
    assert [t["id"] for t in page["threads"]] == ["a2", "a1"]
    last = body(await alice.get("/api/memory/threads", perPage="2", page="1"))
    assert [t["id"] for t in last["threads"]] == ["a0"] and last["hasMore"] is False
    assert body(await bob.get("/api/memory/threads"))["total"] == 1
    assert body(await ops.get("/api/memory/threads"))["total"] == 4
    assert body(await ops.get("/api/memory/threads", resourceId="bob"))["total"] == 1
    forbidden = await bob.get("/api/memory/threads", resourceId="alice")
    assert forbidden.status_code == 403 and body(forbidden)["code"] == "resource_forbidden"
    unknown = await alice.get("/api/memory/threads", agentId="nope")
    assert unknown.status_code == 404 and body(unknown)["code"] == "agent_not_found"
    bad = await alice.get("/api/memory/threads", perPage="lots")
    assert bad.status_code == 400 and body(bad)["code"] == "invalid_field"


async def test_another_users_thread_answers_as_a_free_id_and_its_id_is_free_to_take(alice: Api, bob: Api):
    await alice.post("/api/memory/threads", {"threadId": "t1"})
    for path in ("t1", "never-used"):  # alice's t1 and an id nobody uses answer alike
        for response in (await bob.get(f"/api/memory/threads/{path}"),
                         await bob.get(f"/api/memory/threads/{path}/messages"),
                         await bob.patch(f"/api/memory/threads/{path}", {"title": "mine"}),
                         await bob.delete(f"/api/memory/threads/{path}")):
            assert (response.status_code, body(response)) == (404, {
                "error": f"thread {path!r} not found", "code": "thread_not_found",
                "message": f"thread {path!r} not found"})
    created = await bob.post("/api/memory/threads", {"threadId": "t1", "title": "bob's"})
    assert created.status_code in (200, 201) and body(created)["resourceId"] == "bob"
    assert body(await bob.get("/api/memory/threads/t1"))["title"] == "bob's"
    assert body(await alice.get("/api/memory/threads/t1"))["title"] == ""


async def test_messages_pages_are_mastras_newest_first_without_system_reminders_unless_asked(alice: Api):
    await alice.post("/api/agents/echo/generate", {"messages": "one", "memory": {"thread": "t1"}})
    await alice.post("/api/agents/echo/signals", {"signal": {"type": "system-reminder", "contents": "note"},
                                                  "threadId": "t1", "ifIdle": {"behavior": "persist"}})
    page = body(await alice.get("/api/memory/threads/t1/messages", agentId="echo"))
    assert set(page) == {"messages", "total", "page", "perPage", "hasMore", "uiMessages"}
    assert [m["role"] for m in page["messages"]] == ["user", "assistant"]
    assert (page["total"], page["perPage"], page["hasMore"]) == (2, 40, False)
    assert page["messages"][0]["threadId"] == "t1" and page["messages"][0]["resourceId"] == "alice"
    everything = body(await alice.get("/api/memory/threads/t1/messages", includeSystemReminders="true"))
    assert everything["total"] == 3
    reminder = everything["messages"][2]
    assert (reminder["role"], reminder["type"]) == ("signal", "system-reminder")
    assert reminder["content"]["parts"] == [{"type": "text", "text": "note"}]  # the contents, not the XML
    assert reminder["content"]["metadata"]["signal"]["type"] == "reactive"
    # page 0 is the newest page, as Mastra's: the assistant's answer, then the user's message
    newest = body(await alice.get("/api/memory/threads/t1/messages", perPage="1"))
    assert [m["role"] for m in newest["messages"]] == ["assistant"] and newest["hasMore"] is True
    second = body(await alice.get("/api/memory/threads/t1/messages", perPage="1", page="1"))
    assert [m["role"] for m in second["messages"]] == ["user"] and second["hasMore"] is False


async def test_messages_have_the_shapes_mastra_clients_read(alice: Api):
    """``content.parts`` as ``@mastra/client-js`` and Mastra's Studio read them: a signal is a
    ``signal`` message of its contents with ``content.metadata.signal``; a tool call and its result
    are one ``tool-invocation`` part of the assistant message."""
    await alice.post("/api/agents/echo/send-message", {"message": {"contents": "Hello <there>",
                                                                   "attributes": {"name": "Ada", "n": 2}},
                                                       "threadId": "t1"})
    for _ in range(250):  # the woken run answers in the background
        if body(await alice.get("/api/memory/threads/t1/messages"))["total"] == 2:
            break
        await asyncio.sleep(0.02)
    await alice.post("/api/agents/echo/generate", {"messages": '/tool add {"a": 2, "b": 3}',
                                                   "memory": {"thread": "t1"}})
    page = body(await alice.get("/api/memory/threads/t1/messages"))
    signal, answer, user, call, final = page["messages"]
    assert signal["role"] == "signal" and signal["type"] == "user"
    assert signal["content"]["format"] == 2
    assert signal["content"]["parts"] == [{"type": "text", "text": "Hello <there>"}]
    meta = signal["content"]["metadata"]["signal"]
    assert (meta["id"], meta["type"], meta["tagName"], meta["attributes"]) == (signal["id"], "user", "user",
                                                                                {"name": "Ada", "n": 2})
    assert list(meta["attributes"]) == ["name", "n"]
    assert set(meta) == {"id", "type", "tagName", "createdAt", "acceptedAt", "attributes"}
    assert answer["role"] == "assistant" and answer["content"]["parts"][0]["type"] == "text"
    assert answer["content"]["parts"][0]["text"].startswith("echo:")
    assert user["content"] == {"format": 2, "parts": [{"type": "text", "text": '/tool add {"a": 2, "b": 3}'}],
                               "content": '/tool add {"a": 2, "b": 3}'}
    assert call["content"]["parts"] == [{"type": "tool-invocation", "toolInvocation": {
        "state": "result", "toolCallId": call["content"]["parts"][0]["toolInvocation"]["toolCallId"],
        "toolName": "add", "args": {"a": 2, "b": 3}, "result": {"sum": 5}}}]
    assert final["role"] == "assistant" and final["content"]["parts"][0]["type"] == "text"


async def notify(api: Api, thread_id: str, **fields) -> dict:
    notification = {"source": "github", "kind": "ci-status", "priority": "low", "summary": "CI failed", **fields}
    response = await api.post("/api/agents/echo/notifications", {"notification": notification, "threadId": thread_id})
    assert response.status_code == 200, response.content
    return body(response)


async def test_the_inbox_lists_a_users_records_with_filters(alice: Api, bob: Api, ops: Api):
    await notify(alice, "t1")
    await notify(alice, "t2", source="slack", kind="mention", summary="ping")
    await notify(bob, "b1")
    listing = body(await alice.get("/api/notifications"))
    assert listing["total"] == 2 and [n["summary"] for n in listing["notifications"]] == ["ping", "CI failed"]
    record = listing["notifications"][0]
    assert record["resourceId"] == "alice" and record["threadId"] == "t2" and record["status"] == "pending"
    assert record["createdAt"].endswith("Z")
    assert body(await alice.get("/api/notifications", source="github"))["total"] == 1
    assert body(await alice.get("/api/notifications", threadId="t1"))["total"] == 1
    assert body(await alice.get("/api/notifications", priority="high"))["total"] == 0
    assert body(await ops.get("/api/notifications"))["total"] == 3
    assert (await bob.get("/api/notifications", threadId="t1")).status_code == 404
    bad = await alice.get("/api/notifications", status="lost")
    assert bad.status_code == 400 and body(bad)["code"] == "invalid_field"


async def test_filing_a_record(alice: Api, bob: Api):
    result = await notify(alice, "t1")
    record_id = result["record"]["id"]
    assert (await bob.patch(f"/api/notifications/{record_id}", {"status": "seen"})).status_code == 404
    seen = await alice.patch(f"/api/notifications/{record_id}", {"status": "seen"})
    assert seen.status_code == 200 and body(seen)["status"] == "seen" and body(seen)["seenAt"]
    archived = body(await alice.patch(f"/api/notifications/{record_id}", {"status": "archived"}))
    assert archived["status"] == "archived"
    bad = await alice.patch(f"/api/notifications/{record_id}", {"status": "pending"})
    assert bad.status_code == 400 and body(bad)["code"] == "invalid_field"
    missing = await alice.patch("/api/notifications/ntf_missing", {"status": "seen"})
    assert missing.status_code == 404 and body(missing)["code"] == "notification_not_found"


async def test_send_routes_are_throttled_per_user(alice: Api, bob: Api, monkeypatch):
    from rest_framework.throttling import ScopedRateThrottle

    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"agent-send": "2/min"})
    codes = [(await alice.post("/api/agents/echo/send-message",
                               {"message": "x", "threadId": "t1", "ifIdle": {"behavior": "persist"}})).status_code
             for _ in range(3)]
    assert codes == [200, 200, 429]
    limited = await alice.post("/api/agents/echo/signals", {"signal": {"type": "user", "contents": "x"},
                                                            "threadId": "t1"})
    assert limited.status_code == 429 and body(limited)["code"] == "throttled"
    assert int(limited["Retry-After"]) > 0
    assert (await alice.get("/api/agents")).status_code == 200  # reads are not limited
    assert (await bob.post("/api/agents/echo/send-message",
                           {"message": "x", "threadId": "b1", "ifIdle": {"behavior": "persist"}})).status_code == 200
