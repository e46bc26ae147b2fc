"""OpenAIChatModel against a local server speaking the Chat Completions SSE format.

The real ``openai`` SDK makes every request; only the server is fake. Each test asserts the
exact body the SDK sent and the model events that came back.
"""

from __future__ import annotations

import asyncio
import gc
import json
import time

import pytest

from agents.runtime.abort import AbortController
from agents.runtime.errors import MissingCredentialsError, ModelError
from agents.runtime.providers.base import ModelRequest
from agents.runtime.providers.openai import OpenAIChatModel
from agents.runtime.providers.sdk import close_loop_clients
from tests.runtime.providers.wire import (Reply, WireServer, collect, free_port, isolate_env, json_reply,
                                          of_type, openai_chunk, openai_sse, openai_text_reply,
                                          openai_tool_call_delta)


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    isolate_env(monkeypatch)


@pytest.fixture
def server():
    with WireServer() as srv:
        yield srv


def model_for(server: WireServer, model_id: str = "gpt-test", **kwargs) -> OpenAIChatModel:
    kwargs.setdefault("api_key", "sk-test")
    return OpenAIChatModel(model_id, base_url=server.url + "/v1", **kwargs)


def hello(**kwargs) -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": "Hello"}], **kwargs)


@pytest.mark.asyncio
async def test_text_streams_as_deltas_between_metadata_and_finish(server):
    server.reply(openai_text_reply(["Hel", "lo", " world"]))
    events = await collect(model_for(server), hello())

    assert [e["type"] for e in events] == ["request", "response-metadata", "text-delta", "text-delta",
                                           "text-delta", "finish"]
    assert "".join(e["text"] for e in of_type(events, "text-delta")) == "Hello world"
    meta = events[1]
    assert meta["id"] == "chatcmpl-1"
    assert meta["model_id"] == "gpt-test"
    assert meta["timestamp"] == "2023-11-14T22:13:20+00:00"
    assert meta["headers"]["x-request-id"] == "req_openai_1"
    assert meta["headers"]["openai-processing-ms"] == "42"
    assert events[-1] == {"type": "finish", "finish_reason": "stop", "provider_metadata": {},
                          "usage": {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}}
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body == events[0]["body"]
    assert request.body == {"model": "gpt-test", "messages": [{"role": "user", "content": "Hello"}],
                            "stream": True, "stream_options": {"include_usage": True}}


@pytest.mark.asyncio
async def test_request_translates_messages_tools_settings_and_options(server):
    server.reply(openai_text_reply(["ok"]))
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [
            {"type": "text", "text": "Look:"},
            {"type": "image", "image": "https://example.test/cat.png"},
            {"type": "image", "image": b"\x89PNG", "mimeType": "image/png"},
            {"type": "file", "data": b"%PDF-1", "mimeType": "application/pdf", "filename": "a.pdf"},
        ]},
        {"role": "assistant", "content": [
            {"type": "reasoning", "text": "hidden"},
            {"type": "text", "text": "Checking."},
            {"type": "tool-call", "toolCallId": "call_a", "toolName": "weather", "args": {"city": "Oslo"}},
            {"type": "tool-call", "toolCallId": "call_b", "toolName": "clock", "args": '{"tz":"UTC"}'},
        ]},
        {"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "call_a", "toolName": "weather", "result": {"temp": 3}},
            {"type": "tool-result", "toolCallId": "call_b", "toolName": "clock", "result": "12:00"},
        ]},
    ]
    tools = [{"name": "weather", "description": "Weather by city",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    request = ModelRequest(
        messages=messages, tools=tools, tool_choice={"type": "tool", "tool_name": "weather"},
        settings={"temperature": 0.2, "max_output_tokens": 99, "top_p": 0.9, "presence_penalty": 0.1,
                  "frequency_penalty": 0.3, "stop_sequences": ["END"], "seed": 7, "top_k": 40,
                  "max_retries": 0, "headers": {"x-call": "42"}},
        provider_options={"openai": {"reasoningEffort": "low", "user": "u1"}, "anthropic": {"ignored": True}},
        response_format={"type": "json", "schema": {"type": "object"}, "name": "answer"},
    )
    events = await collect(model_for(server, headers={"x-team": "core"}), request)

    [sent] = server.requests
    assert (sent.headers["x-team"], sent.headers["x-call"]) == ("core", "42")  # model and per-call headers
    assert sent.body == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [
                {"type": "text", "text": "Look:"},
                {"type": "image_url", "image_url": {"url": "https://example.test/cat.png"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
                {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0x", "filename": "a.pdf"}},
            ]},
            {"role": "assistant", "content": "Checking.", "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}},
                {"id": "call_b", "type": "function", "function": {"name": "clock", "arguments": '{"tz":"UTC"}'}},
            ]},
            {"role": "tool", "tool_call_id": "call_a", "content": '{"temp": 3}'},
            {"role": "tool", "tool_call_id": "call_b", "content": "12:00"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.2, "top_p": 0.9, "presence_penalty": 0.1, "frequency_penalty": 0.3,
        "seed": 7, "stop": ["END"], "max_tokens": 99,
        "tools": [{"type": "function", "function": {
            "name": "weather", "description": "Weather by city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
        "tool_choice": {"type": "function", "function": {"name": "weather"}},
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "answer", "schema": {"type": "object"}, "strict": False}},
        "reasoning_effort": "low", "user": "u1",
    }
    assert [e["type"] for e in events[:2]] == ["request", "warning"]
    assert "top_k" in events[1]["message"]


@pytest.mark.asyncio
@pytest.mark.parametrize("choice, wire", [
    ("auto", "auto"), ("none", "none"), ("required", "required"),
    ({"type": "tool", "tool_name": "f"}, {"type": "function", "function": {"name": "f"}}),
])
async def test_tool_choice_mapping(server, choice, wire):
    server.reply(openai_text_reply(["ok"]))
    await collect(model_for(server), hello(tools=[{"name": "f", "description": "", "parameters": {}}],
                                           tool_choice=choice))
    assert server.bodies[0]["tool_choice"] == wire


@pytest.mark.asyncio
async def test_reasoning_models_get_max_completion_tokens(server):
    server.reply(openai_text_reply(["ok"]))
    await collect(model_for(server, "o3-mini"), hello(settings={"max_output_tokens": 50}))
    assert server.bodies[0]["max_completion_tokens"] == 50
    assert "max_tokens" not in server.bodies[0]


@pytest.mark.asyncio
async def test_parallel_tool_calls_are_accumulated_from_fragments(server):
    server.reply(openai_sse([
        openai_chunk({"role": "assistant", "content": "Let me check."}),
        openai_chunk(openai_tool_call_delta(0, id="call_1", name="weather", arguments="")),
        openai_chunk(openai_tool_call_delta(0, arguments='{"ci')),
        openai_chunk(openai_tool_call_delta(1, id="call_2", name="clock", arguments='{"tz"')),
        openai_chunk(openai_tool_call_delta(0, arguments='ty": "Oslo"}')),
        openai_chunk(openai_tool_call_delta(1, arguments=': "UTC"}')),
        openai_chunk({}, finish_reason="tool_calls"),
        openai_chunk(choices=False, usage={"prompt_tokens": 20, "completion_tokens": 12, "total_tokens": 32}),
    ]))
    events = await collect(model_for(server), hello())

    assert [e["type"] for e in events] == ["request", "response-metadata", "text-delta", "tool-call",
                                           "tool-call", "finish"]
    assert of_type(events, "tool-call") == [
        {"type": "tool-call", "tool_call_id": "call_1", "tool_name": "weather", "args_text": '{"city": "Oslo"}'},
        {"type": "tool-call", "tool_call_id": "call_2", "tool_name": "clock", "args_text": '{"tz": "UTC"}'},
    ]
    assert events[-1]["finish_reason"] == "tool-calls"
    assert events[-1]["usage"] == {"input_tokens": 20, "output_tokens": 12, "total_tokens": 32}


@pytest.mark.asyncio
async def test_tool_call_without_arguments_gets_an_empty_object_and_stop_becomes_tool_calls(server):
    # Gemini's and Ollama's compatibility layers finish tool-calling turns with "stop".
    server.reply(openai_sse([
        openai_chunk(openai_tool_call_delta(0, id="call_x", name="now")),
        openai_chunk({}, finish_reason="stop"),
    ]))
    events = await collect(model_for(server), hello())
    assert of_type(events, "tool-call") == [{"type": "tool-call", "tool_call_id": "call_x", "tool_name": "now",
                                             "args_text": "{}"}]
    assert events[-1]["finish_reason"] == "tool-calls"


@pytest.mark.asyncio
@pytest.mark.parametrize("wire, expected", [
    ("stop", "stop"), ("length", "length"), ("tool_calls", "tool-calls"), ("function_call", "tool-calls"),
    ("content_filter", "content-filter"), ("something_new", "other"),
])
async def test_finish_reasons(server, wire, expected):
    server.reply(openai_text_reply(["x"], finish_reason=wire))
    events = await collect(model_for(server), hello())
    assert events[-1]["finish_reason"] == expected


@pytest.mark.asyncio
async def test_usage_details_map_to_reasoning_and_cached_tokens(server):
    server.reply(openai_text_reply(["x"], usage={
        "prompt_tokens": 100, "completion_tokens": 40, "total_tokens": 140,
        "completion_tokens_details": {"reasoning_tokens": 30},
        "prompt_tokens_details": {"cached_tokens": 64}}))
    events = await collect(model_for(server), hello())
    assert events[-1]["usage"] == {"input_tokens": 100, "output_tokens": 40, "total_tokens": 140,
                                   "reasoning_tokens": 30, "cached_input_tokens": 64}


@pytest.mark.asyncio
async def test_reasoning_fields_of_compatible_servers_become_reasoning_deltas(server):
    server.reply(openai_sse([
        openai_chunk({"role": "assistant", "reasoning_content": "think "}),
        openai_chunk({"reasoning": "more"}),
        openai_chunk({"content": "answer"}),
        openai_chunk({}, finish_reason="stop"),
    ]))
    events = await collect(model_for(server), hello())
    assert [(e["type"], e.get("text")) for e in events[2:-1]] == [
        ("reasoning-delta", "think "), ("reasoning-delta", "more"), ("text-delta", "answer")]
    assert events[-1]["usage"] is None  # no usage chunk: unknown (the step reads zeros, the ledger "unknown")


@pytest.mark.asyncio
async def test_include_raw_yields_every_chunk(server):
    server.reply(openai_text_reply(["a", "b"]))
    events = await collect(model_for(server), hello(include_raw=True))
    raws = of_type(events, "raw")
    assert len(raws) == 5  # role chunk, two content chunks, finish chunk, usage chunk
    assert raws[1]["raw_value"]["choices"][0]["delta"] == {"content": "a"}


@pytest.mark.asyncio
async def test_rate_limit_is_retried_by_the_sdk(server):
    server.reply(json_reply(429, {"error": {"message": "slow down", "type": "rate_limit"}},
                            headers={"retry-after-ms": "1"}),
                 openai_text_reply(["ok"]))
    events = await collect(model_for(server), hello())
    assert len(server.requests) == 2
    assert of_type(events, "text-delta") == [{"type": "text-delta", "text": "ok"}]


@pytest.mark.asyncio
@pytest.mark.parametrize("max_retries", [0, 1, 3])
async def test_server_errors_raise_model_error_after_the_configured_retries(server, max_retries):
    server.reply(json_reply(500, {"error": {"message": "upstream exploded", "type": "server_error"}},
                            headers={"retry-after-ms": "1"}))
    with pytest.raises(ModelError) as info:
        await collect(model_for(server), hello(settings={"max_retries": max_retries}))
    assert len(server.requests) == max_retries + 1
    error = info.value
    assert error.code == "provider_http_error"
    assert error.status == 500
    assert error.retryable is True
    assert "openai" in error.message and "500" in error.message and "upstream exploded" in error.message


@pytest.mark.asyncio
async def test_default_max_retries_is_two(server):
    server.reply(json_reply(503, {"error": {"message": "busy"}}, headers={"retry-after-ms": "1"}))
    with pytest.raises(ModelError):
        await collect(model_for(server), hello())
    assert len(server.requests) == 3


@pytest.mark.asyncio
async def test_unauthorized_is_not_retried(server):
    server.reply(json_reply(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                            "code": "invalid_api_key"}}))
    with pytest.raises(ModelError) as info:
        await collect(model_for(server), hello())
    assert len(server.requests) == 1
    assert info.value.status == 401
    assert info.value.retryable is False
    assert info.value.message == ("openai API error (HTTP 401) for model 'gpt-test': Incorrect API key provided")


@pytest.mark.asyncio
async def test_connection_failure_is_a_connection_error():
    model = OpenAIChatModel("gpt-test", api_key="sk-test", base_url=f"http://127.0.0.1:{free_port()}/v1")
    with pytest.raises(ModelError) as info:
        await collect(model, hello(settings={"max_retries": 0}))
    assert info.value.code == "provider_connection_error"
    assert info.value.status is None
    # a refused connection is no timeout, whichever transport the SDK uses
    assert info.value.message.startswith(f"openai connection to {model.base_url} failed: ")


@pytest.mark.asyncio
async def test_malformed_chunk_is_a_stream_error(server):
    server.reply(Reply(events=[b"data: {not json\n\n"]))
    with pytest.raises(ModelError) as info:
        await collect(model_for(server), hello())
    assert info.value.code == "provider_stream_error"


@pytest.mark.asyncio
@pytest.mark.parametrize("data", [b"[1, 2]", b'"text"', b"42"])
async def test_a_chunk_that_is_not_an_object_is_a_stream_error(server, data):
    server.reply(Reply(events=[b"data: " + json.dumps(openai_chunk({"content": "par"})).encode() + b"\n\n",
                               b"data: " + data + b"\n\n"]))
    with pytest.raises(ModelError) as info:
        await collect(model_for(server), hello())
    assert info.value.code == "provider_stream_error"
    assert "not a JSON object" in info.value.message


@pytest.mark.asyncio
async def test_odd_fields_of_a_compatible_server_are_passed_over(server):
    # choices, deltas and tool-call fragments of the wrong shape, a null usage: nothing to read
    server.reply(openai_sse([
        {"id": "c", "model": "m", "created": 1700000000, "choices": ["odd", {"index": 0, "delta": "odd"}]},
        openai_chunk({"content": "ok", "tool_calls": ["odd", {"index": 0, "function": "odd"}]}),
        openai_chunk(finish_reason="stop", usage=None),
    ]))
    events = await collect(model_for(server), hello())
    assert [e["type"] for e in events] == ["request", "response-metadata", "text-delta", "tool-call", "finish"]
    assert events[-1]["usage"] is None


@pytest.mark.asyncio
async def test_error_object_inside_the_stream_is_a_stream_error(server):
    server.reply(openai_sse([openai_chunk({"content": "par"}), {"error": {"message": "model overloaded"}}]))
    with pytest.raises(ModelError) as info:
        await collect(model_for(server), hello())
    assert info.value.code == "provider_stream_error"
    assert "model overloaded" in info.value.message


def test_missing_key_names_the_variable():
    model = OpenAIChatModel("gpt-4o")
    with pytest.raises(MissingCredentialsError) as info:
        model.validate_credentials()
    assert info.value.variables == ["OPENAI_API_KEY"]
    assert "OPENAI_API_KEY" in info.value.message


@pytest.mark.asyncio
async def test_stream_without_key_fails_before_any_request():
    with pytest.raises(MissingCredentialsError):
        await collect(OpenAIChatModel("gpt-4o"), hello())


@pytest.mark.asyncio
async def test_key_and_base_url_come_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    server.reply(openai_text_reply(["ok"]))
    model = OpenAIChatModel("gpt-test")
    model.validate_credentials()
    await collect(model, hello())
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"


@pytest.mark.asyncio
async def test_custom_server_needs_no_key(server):
    server.reply(openai_text_reply(["ok"]))
    model = OpenAIChatModel("llama3", base_url=server.url + "/v1")
    model.validate_credentials()
    await collect(model, hello())
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"


@pytest.mark.asyncio
async def test_client_is_built_once_and_reused(server):
    server.reply(openai_text_reply(["ok"]))
    model = model_for(server)
    await collect(model, hello(), close=False)
    first = model.client()
    await collect(model, hello(), close=False)
    assert model.client() is first
    assert len(server.requests) == 2
    await model.aclose()
    assert model.client() is not first
    await model.aclose()


@pytest.mark.asyncio
async def test_calls_in_flight_spread_over_clients_only_when_every_client_is_busy(server):
    server.reply(openai_text_reply(["ok"]))
    model = model_for(server)
    model.pool_spread, model.pools = 2, 8  # one client by default (aiohttp's pool needs no spread)
    streams = [model.stream(hello()) for _ in range(5)]
    for stream in streams:  # each has taken its client and sent nothing yet
        assert (await stream.__anext__())["type"] == "request"
    assert model.pool_load() == [2, 2, 1]
    await streams[0].aclose()  # a call left before its end gives its client back too
    assert model.pool_load() == [1, 2, 1]
    for stream in streams[1:]:
        events = [event async for event in stream]
        assert events[-1]["type"] == "finish"
    assert model.pool_load() == [0, 0, 0]
    assert len(server.requests) == 4
    # quiet again: every call takes the first client, whose connection is kept alive
    first = model.client()
    await collect(model, hello(), close=False)
    assert model.client() is first and model.pool_load() == [0, 0, 0]
    await model.aclose()
    assert model.pool_load() == [0]  # built anew: one client


@pytest.mark.asyncio
async def test_calls_with_the_same_options_share_one_client_and_its_connections(server):
    server.reply(openai_text_reply(["ok"]))
    model = model_for(server)
    first, _, _, release = model.prepare_call(hello(sdk_retries=0))
    release()
    again, _, _, release = model.prepare_call(hello(sdk_retries=0))
    release()
    other, _, _, release = model.prepare_call(hello(sdk_retries=5))
    release()
    assert again is first and first.max_retries == 0 and other.max_retries == 5
    assert first._client is other._client is model.client()._client  # one connection pool
    assert model.pool_load() == [0]
    await collect(model, hello(sdk_retries=0), close=False)
    assert len(server.requests) == 1
    await model.aclose()


@pytest.mark.asyncio
async def test_clients_stop_at_the_pool_limit(server):
    server.reply(openai_text_reply(["ok"]))
    model = model_for(server)
    model.pool_spread, model.pools = 1, 2
    streams = [model.stream(hello()) for _ in range(5)]
    for stream in streams:
        await stream.__anext__()
    assert model.pool_load() == [3, 2]
    for stream in streams:
        await stream.aclose()
    assert model.pool_load() == [0, 0]
    await model.aclose()


def test_clients_close_when_their_event_loop_ends(server, caplog):
    # a Celery task runs its model calls under async_to_sync: asyncio.run, a loop of its own
    server.reply(openai_text_reply(["ok"]))
    model = model_for(server)
    sessions = []

    async def call():
        events = await collect(model, hello(), close=False)
        sessions.append(model.client()._client._transport.client)  # the aiohttp session
        return events

    for _ in range(2):
        assert asyncio.run(call())[-1]["type"] == "finish"
    gc.collect()
    assert len(sessions) == 2 and sessions[0] is not sessions[1]  # a loop's clients are its own
    assert all(session.closed for session in sessions)
    assert "Unclosed" not in caplog.text and "destroyed" not in caplog.text
    assert len(server.requests) == 2


@pytest.mark.asyncio
async def test_a_new_key_closes_the_clients_built_with_the_old_one(server):
    server.reply(openai_text_reply(["ok"]))
    model = model_for(server)
    await collect(model, hello(), close=False)
    old = model.client()._client._transport.client
    model.api_key = "sk-other"
    await collect(model, hello(), close=False)
    assert model.client()._client._transport.client is not old
    for _ in range(10):  # closed in a task of this loop
        await asyncio.sleep(0)
    assert old.closed
    assert server.requests[-1].headers["authorization"] == "Bearer sk-other"
    await model.aclose()


@pytest.mark.asyncio
async def test_close_loop_clients_closes_the_clients_of_this_loop(server):
    # a server's shutdown (mastra_site.workers): its loop lives on, its clients are closed
    server.reply(openai_text_reply(["ok"]))
    model = model_for(server)
    await collect(model, hello(), close=False)
    session = model.client()._client._transport.client
    assert not session.closed
    await close_loop_clients()
    assert session.closed


@pytest.mark.asyncio
async def test_already_aborted_signal_sends_nothing(server):
    controller = AbortController()
    controller.abort()
    events = await collect(model_for(server), hello(abort_signal=controller.signal))
    assert [e["type"] for e in events] == ["request"]
    assert server.requests == []


@pytest.mark.asyncio
async def test_a_stream_quiet_past_the_timeout_is_a_connection_error(server):
    # the model's timeout bounds each read of the stream, as the SDK's own read timeout does
    server.reply(openai_sse([openai_chunk({"content": "first"}), openai_chunk({"content": "never"})], stall=30))
    model = model_for(server, timeout=0.5)
    events = []
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        async for event in model.stream(hello(settings={"max_retries": 0})):
            events.append(event)
    await model.aclose()
    assert time.monotonic() - started < 10
    assert info.value.code == "provider_connection_error"
    assert info.value.message == f"openai request to {server.url}/v1 timed out"
    assert of_type(events, "text-delta") == [{"type": "text-delta", "text": "first"}]


@pytest.mark.asyncio
async def test_abort_closes_a_stalled_stream(server):
    # The server sends one chunk, then goes quiet for 30 s; the abort must not wait for it.
    server.reply(openai_sse([openai_chunk({"content": "first"}), openai_chunk({"content": "never"})], stall=30))
    controller = AbortController()
    events = []
    model = model_for(server)
    aborted_at = None

    def abort():
        nonlocal aborted_at
        aborted_at = time.monotonic()
        controller.abort()

    async for event in model.stream(hello(abort_signal=controller.signal)):
        events.append(event)
        if event["type"] == "text-delta":
            asyncio.get_running_loop().call_later(0.05, abort)
    await model.aclose()
    # measured from the abort: importing and connecting the SDK is not what is tested
    assert aborted_at is not None and time.monotonic() - aborted_at < 5
    assert [e["type"] for e in events] == ["request", "response-metadata", "text-delta"]


@pytest.mark.asyncio
async def test_signal_contents_reach_the_wire_as_parts(server):
    """What a signal renders to (a file-only signal's tag before its file, a user message's several
    text parts, AI-SDK ``mediaType`` on file parts) is sent part by part."""
    server.reply(openai_text_reply(["ok"]))
    server.reply(openai_text_reply(["ok"]))
    file_only = [{"type": "text", "text": '<notification kind="img" />'},
                 {"type": "file", "data": "data:image/png;base64,aGVsbG8=", "mediaType": "image/png"}]
    parts = [{"type": "text", "text": "first"}, {"type": "text", "text": "second"},
             {"type": "file", "data": "JVBERi0x", "mediaType": "application/pdf"}]
    model = model_for(server)
    await collect(model, ModelRequest(messages=[{"role": "user", "content": file_only}]))
    await collect(model, ModelRequest(messages=[{"role": "user", "content": parts}]))
    assert [r.body["messages"] for r in server.requests] == [
        [{"role": "user", "content": [{"type": "text", "text": '<notification kind="img" />'},
                                      {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}]}],
        [{"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"},
                                      {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0x",
                                                                "filename": "file"}}]}],
    ]
