"""Agents over HTTP: list, details, generate and stream, as Mastra's server answers them; auth per
persona and the error bodies of bad input."""

import json

import pytest

from tests.agents.api.conftest import Api, body, sse_chunks

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def test_anonymous_gets_401_with_an_error_body(anonymous: Api):
    response = await anonymous.get("/api/agents")
    assert response.status_code == 401
    assert body(response) == {"error": "Authentication credentials were not provided.", "code": "not_authenticated",
                              "message": "Authentication credentials were not provided."}
    assert response["WWW-Authenticate"] == 'Token realm="api"'


async def test_a_wrong_token_is_401(transactional_db):
    response = await Api("not-a-token").get("/api/agents")
    assert response.status_code == 401
    assert body(response)["code"] == "authentication_failed"


async def test_a_bearer_token_works_as_a_token(alice: Api):
    bearer = Api(alice.headers["Authorization"].split()[1], scheme="Bearer")
    response = await bearer.get("/api/agents")
    assert response.status_code == 200


async def test_session_auth_for_the_browser(alice: Api):
    from django.test import AsyncClient

    client = AsyncClient()
    await client.alogin(username="alice", password="pw")
    response = await client.get("/api/agents")
    assert response.status_code == 200


async def test_the_list_is_keyed_by_agent_id_with_tools_as_mastra_encodes_them(alice: Api):
    response = await alice.get("/api/agents")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    agents = body(response)
    assert list(agents) == ["echo", "slow", "plain"]
    echo = agents["echo"]
    assert echo["id"] == "echo" and echo["name"] == "Echo" and echo["description"] == "Echoes what it receives."
    assert echo["instructions"] == "Echo the user."
    assert echo["provider"] == "local" and echo["modelId"] == "echo" and echo["supportsMemory"] is True
    # the keys Mastra's server sends (GET /api/agents of real-server.mjs)
    assert set(echo) == {"id", "name", "description", "instructions", "tools", "agents", "workflows", "skills",
                          "workspaceTools", "browserTools", "hasBrowser", "inputProcessors", "outputProcessors",
                          "provider", "modelId", "modelVersion", "supportsMemory", "defaultOptions",
                          "defaultGenerateOptionsLegacy", "defaultStreamOptionsLegacy", "source", "hasDraft"}
    assert agents["plain"]["supportsMemory"] is False
    add = echo["tools"]["add"]
    assert add["id"] == "add" and add["description"] == "Add two numbers and return their sum."
    assert json.loads(add["inputSchema"]) == {"json": {
        "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"], "additionalProperties": False}}
    assert json.loads(add["outputSchema"])["json"]["required"] == ["sum"]
    assert add["requireApproval"] is False and echo["tools"]["delete"]["requireApproval"] is True


async def test_details_have_no_id_as_mastra(alice: Api):
    response = await alice.get("/api/agents/echo")
    assert response.status_code == 200
    details = body(response)
    assert "id" not in details and "hasDraft" not in details
    assert details["name"] == "Echo" and set(details["tools"]) == {"add", "delete"}


async def test_an_unknown_agent_is_404(alice: Api):
    for response in (await alice.get("/api/agents/nope"),
                     await alice.post("/api/agents/nope/generate", {"messages": "hi"})):
        assert response.status_code == 404
        assert body(response) == {"error": "no agent with id 'nope'", "code": "agent_not_found",
                                  "message": "no agent with id 'nope'"}


async def test_generate_answers_mastras_fields(alice: Api):
    response = await alice.post("/api/agents/echo/generate", {"messages": "hello"})
    assert response.status_code == 200
    result = body(response)
    assert result["text"] == "echo: hello"
    assert [m["role"] for m in result["response"]["messages"]] == ["assistant"]
    assert result["finishReason"] == "stop"
    assert set(result["usage"]) >= {"inputTokens", "outputTokens", "totalTokens"}
    assert isinstance(result["runId"], str) and len(result["steps"]) == 1
    assert result["toolCalls"] == [] and result["toolResults"] == []
    # the keys Mastra's server sends for the same call (POST /api/agents/echo/generate of
    # real-server.mjs), with this runtime's trace ids (Mastra's too when it traces) and without its
    # totalUsage's and response's model metadata (docs/api.md); nothing it leaves out is sent as null
    assert set(result) == {"files", "finishReason", "messages", "reasoning", "rememberedMessages", "request",
                           "response", "runId", "sources", "steps", "text", "toolCalls", "toolResults", "totalUsage",
                           "usage", "usedFallbackValue", "warnings", "traceId", "spanId"}
    assert set(result["steps"][0]) == {
        "content", "dynamicToolCalls", "dynamicToolResults", "files", "finishReason", "reasoning", "reasoningText",
        "request", "response", "sources", "staticToolCalls", "staticToolResults", "stepType", "text", "toolCalls",
        "toolResults", "usage", "warnings", "stepNumber", "isContinued", "model", "attempts"}
    assert result["request"] == {} and result["steps"][0]["request"] == {}
    assert set(result["response"]) == {"id", "timestamp", "modelId", "messages", "uiMessages", "dbMessages"}


async def test_generate_runs_the_tool_loop_with_chunk_shaped_calls_and_results(alice: Api):
    response = await alice.post("/api/agents/echo/generate",
                                {"messages": [{"role": "user", "content": '/tool add {"a": 2, "b": 5}'}],
                                 "maxSteps": 3})
    result = body(response)
    assert response.status_code == 200, result
    assert [c["type"] for c in result["toolCalls"]] == ["tool-call"]
    call = result["toolCalls"][0]
    assert call["from"] == "AGENT" and call["runId"] == result["runId"]
    assert call["payload"]["toolName"] == "add" and call["payload"]["args"] == {"a": 2, "b": 5}
    assert result["toolResults"][0]["payload"]["result"] == {"sum": 7}
    assert result["finishReason"] == "stop" and len(result["steps"]) == 2
    # the response as Mastra's: every answer of the run, and the same as UI and stored messages
    answer = result["response"]
    assert [m["role"] for m in answer["messages"]] == ["assistant", "tool", "assistant"]
    call_id = call["payload"]["toolCallId"]
    assert [m["parts"] for m in answer["uiMessages"]] == [
        [{"type": "tool-add", "toolCallId": call_id, "input": {"a": 2, "b": 5}, "output": {"sum": 7},
          "state": "output-available"}],
        [{"type": "text", "text": result["text"]}]]
    assert answer["dbMessages"] == result["messages"][1:]  # the input first, then the answers
    # the steps as Mastra's server answers them
    first, second = result["steps"]
    assert (first["stepType"], second["stepType"]) == ("initial", "tool-result")
    assert first["content"] == [
        {"type": "tool-call", "toolCallId": call_id, "toolName": "add", "input": {"a": 2, "b": 5}},
        {"type": "tool-result", "toolCallId": call_id, "toolName": "add", "input": {"a": 2, "b": 5},
         "output": {"type": "json", "value": {"sum": 7}}}]
    assert second["content"] == [{"type": "text", "text": result["text"]}]


async def test_generate_with_memory_fills_the_callers_resource(alice: Api):
    from agents.models import Thread

    response = await alice.post("/api/agents/echo/generate", {"messages": "one", "memory": {"thread": "t-a"}})
    assert response.status_code == 200
    thread = await Thread.objects.aget(thread_id="t-a")
    assert thread.resource_id == "alice"
    second = body(await alice.post("/api/agents/echo/generate",
                                   {"messages": "two", "memory": {"thread": {"id": "t-a"}, "resource": "alice"}}))
    assert second["text"] == "echo: two"
    from agents.models import Message

    roles = [m.role async for m in Message.objects.filter(thread__thread_id="t-a").order_by("id")]
    assert roles == ["user", "assistant", "user", "assistant"]


async def test_generate_answers_the_runs_messages_as_the_threads_messages_route_does(alice: Api):
    """``messages`` and ``rememberedMessages`` are Mastra's ``MastraDBMessage``: a client reads them as
    it reads ``GET /api/memory/threads/<id>/messages`` (the answers' stamps aside: the run's own
    answer names its model, as Mastra's do, and the stored one its agent and run too)."""
    await alice.post("/api/agents/echo/generate", {"messages": "one", "memory": {"thread": "t-a"}})
    result = body(await alice.post("/api/agents/echo/generate", {"messages": "two", "memory": {"thread": "t-a"}}))
    page = body(await alice.get("/api/memory/threads/t-a/messages?agentId=echo"))
    unstamped = [{**m, "content": {k: v for k, v in m["content"].items() if k != "metadata"}}
                 for m in page["messages"]]
    assert [m["content"]["parts"] for m in result["messages"]] == [
        [{"type": "text", "text": "one"}], [{"type": "text", "text": "echo: one"}],
        [{"type": "text", "text": "two"}], [{"type": "text", "text": "echo: two"}]]
    echo = {"modelId": "echo", "provider": "local"}
    assert page["messages"][3]["content"]["metadata"] == {"runId": result["runId"], "agentId": "echo", **echo}
    assert [m["content"].get("content") for m in page["messages"]] == ["one", "echo: one", "two", "echo: two"]
    answered_here = unstamped[3]
    assert result["messages"] == unstamped[:3] + [{**answered_here, "content": {**answered_here["content"],
                                                                                  "metadata": echo}}]
    assert result["rememberedMessages"] == unstamped[:2]
    assert {(m["threadId"], m["resourceId"]) for m in result["messages"]} == {("t-a", "alice")}


async def test_memory_isolation_per_persona(alice: Api, bob: Api, ops: Api):
    assert (await alice.post("/api/agents/echo/generate", {"messages": "x", "memory": {"thread": "t-a"}})).status_code == 200
    other = await bob.post("/api/agents/echo/generate", {"messages": "x", "memory": {"thread": "t-a"}})
    assert other.status_code == 200 and body(other)["text"] == "echo: x"  # bob's own t-a, none of alice's history
    named = await bob.post("/api/agents/echo/generate", {"messages": "x", "memory": {"thread": "t-b", "resource": "alice"}})
    assert named.status_code == 403 and body(named)["code"] == "resource_forbidden"
    staff = await ops.post("/api/agents/echo/generate", {"messages": "x", "memory": {"thread": "t-a", "resource": "alice"}})
    assert staff.status_code == 200
    from agents.models import Thread

    assert sorted([(t.resource_id, t.thread_id) async for t in Thread.objects.all()]) == [
        ("alice", "t-a"), ("bob", "t-a")]


async def test_stream_is_sse_of_chunks_ending_with_done(alice: Api):
    response = await alice.post("/api/agents/echo/stream", {"messages": "a\nb"})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    assert response["Cache-Control"] == "no-cache"
    raw, chunks = await sse_chunks(response)
    assert raw.endswith(b"data: [DONE]\n\n")
    blocks = raw.split(b"\n\n")[:-1]
    assert all(b.startswith(b"data: ") and b"\n" not in b for b in blocks)
    assert [c["type"] for c in chunks][0] == "start" and chunks[-1]["type"] == "finish"
    assert all(c["from"] == "AGENT" and c["runId"] == chunks[0]["runId"] for c in chunks)
    text = "".join(c["payload"]["text"] for c in chunks if c["type"] == "text-delta")
    assert text == "echo: a\necho: b"
    assert chunks[-1]["payload"]["stepResult"]["reason"] == "stop"
    assert set(chunks[-1]["payload"]["output"]["usage"]) >= {"inputTokens", "outputTokens", "totalTokens"}


@pytest.mark.parametrize("accept", ["text/event-stream", "text/event-stream, */*;q=0.1", "application/xml"])
async def test_stream_answers_whatever_the_accept_header_asks(alice: Api, accept):
    """An SSE client asks for ``text/event-stream`` (fetch-event-source, EventSource-like helpers):
    the stream is what it gets, as from Mastra's server, never a 406."""
    response = await alice.post("/api/agents/echo/stream", {"messages": "hi"}, headers={"Accept": accept})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    raw, chunks = await sse_chunks(response)
    assert chunks[-1]["type"] == "finish" and raw.endswith(b"data: [DONE]\n\n")


@pytest.mark.parametrize("accept", ["image/png", "text/event-stream", "application/xml"])
async def test_json_routes_answer_json_whatever_the_accept_header_asks(alice: Api, accept):
    response = await alice.client.get("/api/agents", headers={**alice.headers, "Accept": accept})
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert "echo" in body(response)
    generated = await alice.post("/api/agents/echo/generate", {"messages": "hi"}, headers={"Accept": accept})
    assert generated.status_code == 200 and body(generated)["text"] == "echo: hi"


@pytest.mark.parametrize("path", ["/api/agents", "/api/agents/echo", "/api/memory/threads",
                                  "/api/notifications", "/api/schedules"])
async def test_a_format_parameter_is_a_query_parameter_like_any_other(alice: Api, path):
    """``?format=`` is not DRF's renderer choice here: the routes answer as without it (before, an
    unknown one was a 500 on every GET route)."""
    plain = await alice.get(path)
    for value in ("xyz", "json", "api"):
        response = await alice.get(path, format=value)
        assert response.status_code == plain.status_code == 200, response.content
        assert response["Content-Type"] == "application/json"


@pytest.mark.parametrize("raw, code", [
    (b"{bad", "invalid_json"),
    (b"[1, 2]", "invalid_body"),
    (b'{"messages": 5}', "invalid_messages"),
    (b'{"nothing": 1}', "invalid_messages"),
    (b'{"messages": "x", "maxSteps": "many"}', "agent_config_error"),
    (b'{"messages": "x", "memory": "t1"}', "invalid_field"),
    (b'{"messages": "x", "noSuchOption": 1}', "agent_config_error"),
])
async def test_bad_bodies_are_400_with_a_code(alice: Api, raw, code):
    response = await alice.post("/api/agents/echo/generate", raw=raw)
    assert response.status_code == 400, response.content
    error = body(response)
    assert error["code"] == code and error["error"] == error["message"]


async def test_a_body_past_the_limit_is_413(alice: Api, settings):
    settings.MASTRA_API_MAX_BODY = 2048
    response = await alice.post("/api/agents/echo/generate", {"messages": "x" * 4096})
    assert response.status_code == 413
    assert body(response)["code"] == "body_too_large"
