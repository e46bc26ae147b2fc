"""Every JSON body the HTTP API sends is camelCase, as Mastra's server: one request per route that
answers JSON, each response walked key by key. User data keeps its own keys (tool arguments and
results, attributes, metadata, notification payloads, provider request bodies, JSON schemas), and a
dict keyed by ids (``GET /api/agents``, an agent's ``tools``) is keyed by those ids."""

from __future__ import annotations

import re

import pytest

from tests.agents.api.conftest import Api, body

pytestmark = [pytest.mark.asyncio]

CAMEL = re.compile(r"[a-z][a-zA-Z0-9]*")
#: keys whose values are data of the user, an SDK or a provider: their keys are theirs
OPAQUE = {"args", "result", "input", "output", "attributes", "metadata", "requestContext", "providerOptions",
          "providerMetadata", "body", "headers", "inputSchema", "outputSchema", "schema", "payloadSchema",
          "suspendPayload", "resumeSchema", "structuredOutput", "object"}
#: keys whose values are dicts keyed by ids
BY_ID = {"tools", "agents"}


def snake_keys(value, path: str = "$", *, record: bool = False) -> list[str]:
    """The paths of the keys of ``value`` that are not camelCase (see the module docstring)."""
    found = []
    if isinstance(value, list):
        for i, item in enumerate(value):
            found += snake_keys(item, f"{path}[{i}]", record=record)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not CAMEL.fullmatch(key):
                found.append(f"{path}.{key}")
            if key in OPAQUE or (record and key == "payload"):
                continue
            if key in BY_ID and isinstance(item, dict):
                for name, entry in item.items():
                    found += snake_keys(entry, f"{path}.{key}[{name}]")
                continue
            found += snake_keys(item, f"{path}.{key}", record=key in ("record", "records", "notifications"))
    return found


async def test_every_json_route_answers_in_camel_case(alice: Api, ops: Api):
    seen: dict[str, object] = {}

    def keep(name: str, response, status: int = 200):
        assert response.status_code == status, (name, response.content)
        seen[name] = body(response)
        return seen[name]

    agents = keep("GET /agents", await alice.get("/api/agents"))
    for agent_id, agent in agents.items():  # keyed by agent id
        assert snake_keys(agent, f"$[{agent_id}]") == [], agent_id
    seen.pop("GET /agents")
    keep("GET /agents/echo", await alice.get("/api/agents/echo"))
    keep("POST generate", await alice.post("/api/agents/echo/generate", {
        "messages": '/tool add {"a": 2, "b": 5}', "memory": {"thread": "t1", "resource": "alice"}}))
    keep("POST send-message", await alice.post("/api/agents/echo/send-message",
                                               {"message": "hi", "resourceId": "alice", "threadId": "t2"}))
    keep("POST queue-message", await alice.post("/api/agents/echo/queue-message",
                                                {"message": "later", "resourceId": "alice", "threadId": "t2"}))
    keep("POST signals", await alice.post("/api/agents/echo/signals", {
        "signal": {"type": "reactive", "contents": "note", "attributes": {"some_key": 1}},
        "resourceId": "alice", "threadId": "t2"}))
    keep("POST state-signals", await alice.post("/api/agents/echo/state-signals", {
        "state": {"id": "browser", "cacheKey": "k1", "mode": "snapshot", "contents": "x"},
        "resourceId": "alice", "threadId": "t2"}))
    notified = keep("POST notifications", await alice.post("/api/agents/echo/notifications", {
        "notification": {"source": "ci", "kind": "ci-status", "priority": "low", "summary": "Build failed",
                         "payload": {"build_url": "https://ci.example/1"}},
        "resourceId": "alice", "threadId": "t3"}))
    keep("GET threads/queue", await alice.get("/api/agents/echo/threads/queue", resourceId="alice", threadId="t2"))
    keep("POST threads/queue/cancel", await alice.post("/api/agents/echo/threads/queue/cancel",
                                                       {"resourceId": "alice", "threadId": "t2", "ids": ["nope"]}))
    keep("POST threads/abort", await alice.post("/api/agents/echo/threads/abort",
                                                {"resourceId": "alice", "threadId": "t9"}))
    keep("GET memory/threads", await alice.get("/api/memory/threads", resourceId="alice"))
    keep("GET memory/threads/t1", await alice.get("/api/memory/threads/t1", resourceId="alice"))
    keep("PATCH memory/threads/t1", await alice.patch("/api/memory/threads/t1?resourceId=alice",
                                                      {"title": "Sums", "metadata": {"a_b": 1}}))
    keep("GET memory/threads/t1/messages", await alice.get("/api/memory/threads/t1/messages", resourceId="alice"))
    keep("GET notifications", await alice.get("/api/notifications"))
    record_id = notified["record"]["id"]
    keep("PATCH notifications/<id>", await alice.client.patch(
        f"/api/notifications/{record_id}", '{"status": "seen"}', content_type="application/json",
        headers=alice.headers))
    keep("POST generate (declined approval)", await alice.post("/api/agents/echo/generate", {
        "messages": '/tool delete {"path": "/tmp/x"}', "requireToolApproval": True}))
    run_id = seen["POST generate (declined approval)"]["runId"]
    call_id = seen["POST generate (declined approval)"]["toolCalls"][0]["payload"]["toolCallId"]
    keep("POST decline-tool-call-generate", await alice.post("/api/agents/echo/decline-tool-call-generate",
                                                             {"runId": run_id, "toolCallId": call_id}))
    keep("error body", await alice.post("/api/agents/echo/generate", {}), status=400)

    wrong = {name: keys for name, data in seen.items()
             if (keys := snake_keys(data, record=name.startswith("PATCH notifications")))}
    assert wrong == {}
    assert "payload" in notified["record"] and "resourceId" in notified["record"]
