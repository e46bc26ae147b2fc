"""AnthropicModel against a local server speaking the Messages API SSE format.

The real ``anthropic`` SDK makes every request; only the server is fake. Each test asserts the
exact body the SDK sent and the model events that came back.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from agents.runtime.abort import AbortController
from agents.runtime.errors import MissingCredentialsError, ModelError
from agents.runtime.providers.anthropic import AnthropicModel
from agents.runtime.providers.base import ModelRequest
from tests.runtime.providers.wire import (Reply, WireServer, anthropic_event, anthropic_message_end,
                                          anthropic_message_start, anthropic_sse, anthropic_text_block,
                                          anthropic_text_reply, anthropic_thinking_block, anthropic_tool_block,
                                          collect, free_port, isolate_env, json_reply, of_type)


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    isolate_env(monkeypatch)


@pytest.fixture
def server():
    with WireServer() as srv:
        yield srv


def model_for(server: WireServer, **kwargs) -> AnthropicModel:
    kwargs.setdefault("api_key", "sk-ant-test")
    return AnthropicModel("claude-test", base_url=server.url, **kwargs)


def hello(**kwargs) -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": "Hello"}], **kwargs)


CACHE = {"anthropic": {"cacheControl": {"type": "ephemeral"}}}


@pytest.mark.asyncio
async def test_text_streams_as_deltas_between_metadata_and_finish(server):
    server.reply(anthropic_text_reply(["Hel", "lo", " world"]))
    events = await collect(model_for(server), hello())

    assert [e["type"] for e in events] == ["request", "response-metadata", "text-delta", "text-delta",
                                           "text-delta", "finish"]
    assert "".join(e["text"] for e in of_type(events, "text-delta")) == "Hello world"
    meta = events[1]
    assert (meta["id"], meta["model_id"]) == ("msg_1", "claude-test")
    assert meta["headers"]["request-id"] == "req_anthropic_1"
    assert meta["headers"]["anthropic-ratelimit-requests-remaining"] == "99"
    assert meta["timestamp"].endswith("+00:00")
    assert events[-1] == {"type": "finish", "finish_reason": "stop",
                          "usage": {"input_tokens": 10, "output_tokens": 7, "total_tokens": 17},
                          "provider_metadata": {"anthropic": {"cacheCreationInputTokens": None}}}
    [request] = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["authorization"] == "Bearer sk-ant-test"  # this SDK sends keys as Bearer
    assert "anthropic-version" in request.headers
    assert request.body == events[0]["body"]
    assert request.body == {"model": "claude-test", "max_tokens": 4096, "stream": True,
                            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}]}


@pytest.mark.asyncio
async def test_request_translates_messages_cache_control_tools_and_settings(server):
    server.reply(anthropic_text_reply(["ok"]))
    messages = [
        {"role": "system", "content": "You are terse.", "providerOptions": CACHE},
        {"role": "system", "content": "Today is Monday."},
        {"role": "user", "content": [
            {"type": "text", "text": "Look:"},
            {"type": "image", "image": "https://example.test/cat.png"},
            {"type": "image", "image": b"\x89PNG", "mimeType": "image/png"},
            {"type": "file", "data": "data:application/pdf;base64,JVBERi0x", "filename": "a.pdf"},
        ], "providerOptions": CACHE},
        {"role": "assistant", "content": [
            {"type": "reasoning", "text": "unsigned thoughts are not replayed"},
            {"type": "text", "text": "Checking."},
            {"type": "tool-call", "toolCallId": "tu_a", "toolName": "weather", "args": {"city": "Oslo"}},
            {"type": "tool-call", "toolCallId": "tu_b", "toolName": "clock", "args": '{"tz": "UTC"}'},
        ]},
        {"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "tu_a", "toolName": "weather", "result": {"temp": 3}},
        ]},
        {"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "tu_b", "toolName": "clock", "result": "no clock",
             "isError": True},
        ]},
        {"role": "user", "content": "Thanks"},
    ]
    tools = [{"name": "weather", "description": "Weather by city",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    request = ModelRequest(
        messages=messages, tools=tools, tool_choice={"type": "tool", "tool_name": "weather"},
        settings={"max_output_tokens": 300, "temperature": 0.5, "top_p": 0.8, "top_k": 20,
                  "stop_sequences": ["END"], "seed": 3},
        provider_options={"anthropic": {"metadata": {"user_id": "u1"}}, "openai": {"ignored": True}},
    )
    events = await collect(model_for(server, headers={"anthropic-beta": "test-beta"}), request)

    [sent] = server.requests
    assert sent.headers["anthropic-beta"] == "test-beta"
    assert sent.body == {
        "model": "claude-test",
        "max_tokens": 300,
        "stream": True,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}},
                   {"type": "text", "text": "Today is Monday."}],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "Look:"},
                {"type": "image", "source": {"type": "url", "url": "https://example.test/cat.png"}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
                {"type": "document", "title": "a.pdf", "cache_control": {"type": "ephemeral"},
                 "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"}},
            ]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "tu_a", "name": "weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "tu_b", "name": "clock", "input": {"tz": "UTC"}},
            ]},
            # both tool messages and the next user message form one user turn
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "tu_a", "content": '{"temp": 3}'},
                {"type": "tool_result", "tool_use_id": "tu_b", "content": "no clock", "is_error": True},
                {"type": "text", "text": "Thanks"},
            ]},
        ],
        "temperature": 0.5, "top_p": 0.8, "top_k": 20, "stop_sequences": ["END"],
        "tools": [{"name": "weather", "description": "Weather by city",
                   "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "tool_choice": {"type": "tool", "name": "weather"},
        "metadata": {"user_id": "u1"},
    }
    warnings = of_type(events, "warning")
    assert len(warnings) == 1 and "seed" in warnings[0]["message"]


@pytest.mark.asyncio
@pytest.mark.parametrize("choice, wire", [
    ("auto", {"type": "auto"}), ("required", {"type": "any"}), ("none", {"type": "none"}),
    ({"type": "tool", "tool_name": "f"}, {"type": "tool", "name": "f"}),
])
async def test_tool_choice_mapping(server, choice, wire):
    server.reply(anthropic_text_reply(["ok"]))
    await collect(model_for(server), hello(tools=[{"name": "f", "description": "d", "parameters": {}}],
                                           tool_choice=choice))
    assert server.bodies[0]["tool_choice"] == wire


@pytest.mark.asyncio
async def test_thinking_streams_reasoning_and_reserves_its_budget(server):
    server.reply(anthropic_sse([anthropic_message_start(), *anthropic_thinking_block(0, ["Let me ", "think."]),
                                *anthropic_text_block(1, ["Done."]), *anthropic_message_end()]))
    request = hello(settings={"max_output_tokens": 1000, "temperature": 0.3},
                    provider_options={"anthropic": {"thinking": {"type": "enabled", "budgetTokens": 2048}}})
    events = await collect(model_for(server), request)

    body = server.bodies[0]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 3048
    assert "temperature" not in body
    assert "temperature" in of_type(events, "warning")[0]["message"]
    assert [(e["type"], e["text"]) for e in events if e["type"] in ("reasoning-delta", "text-delta")] == [
        ("reasoning-delta", "Let me "), ("reasoning-delta", "think."), ("text-delta", "Done.")]


@pytest.mark.asyncio
async def test_tool_use_blocks_become_tool_calls_when_each_block_ends(server):
    server.reply(anthropic_sse([
        anthropic_message_start(),
        *anthropic_text_block(0, ["Checking."]),
        *anthropic_tool_block(1, "toolu_1", "weather", ['{"ci', 'ty": ', '"Oslo"}']),
        *anthropic_tool_block(2, "toolu_2", "clock", ['{"tz": "UTC"}']),
        *anthropic_tool_block(3, "toolu_3", "now", []),
        *anthropic_message_end("tool_use", output_tokens=30),
    ]))
    events = await collect(model_for(server), hello())

    assert [e["type"] for e in events] == ["request", "response-metadata", "text-delta", "tool-call",
                                           "tool-call", "tool-call", "finish"]
    assert of_type(events, "tool-call") == [
        {"type": "tool-call", "tool_call_id": "toolu_1", "tool_name": "weather", "args_text": '{"city": "Oslo"}'},
        {"type": "tool-call", "tool_call_id": "toolu_2", "tool_name": "clock", "args_text": '{"tz": "UTC"}'},
        {"type": "tool-call", "tool_call_id": "toolu_3", "tool_name": "now", "args_text": "{}"},
    ]
    assert events[-1]["finish_reason"] == "tool-calls"
    assert events[-1]["usage"]["output_tokens"] == 30


@pytest.mark.asyncio
async def test_cache_usage_is_reported(server):
    server.reply(anthropic_sse([anthropic_message_start(input_tokens=12, cache_read=500, cache_creation=80),
                                *anthropic_text_block(0, ["hi"]), *anthropic_message_end(output_tokens=4)]))
    events = await collect(model_for(server), hello())
    assert events[-1]["usage"] == {"input_tokens": 12, "output_tokens": 4, "total_tokens": 16,
                                   "cached_input_tokens": 500}
    assert events[-1]["provider_metadata"] == {"anthropic": {"cacheCreationInputTokens": 80}}


@pytest.mark.asyncio
@pytest.mark.parametrize("wire, expected", [
    ("end_turn", "stop"), ("stop_sequence", "stop"), ("max_tokens", "length"), ("tool_use", "tool-calls"),
    ("refusal", "content-filter"), ("pause_turn", "other"),
])
async def test_finish_reasons(server, wire, expected):
    server.reply(anthropic_text_reply(["x"], stop_reason=wire))
    events = await collect(model_for(server), hello())
    assert events[-1]["finish_reason"] == expected


@pytest.mark.asyncio
async def test_include_raw_yields_every_event(server):
    server.reply(anthropic_text_reply(["a"]))
    events = await collect(model_for(server), hello(include_raw=True))
    raws = of_type(events, "raw")
    assert [r["raw_value"]["type"] for r in raws] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop"]


def error_body(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


@pytest.mark.asyncio
async def test_rate_limit_is_retried_by_the_sdk(server):
    server.reply(json_reply(429, error_body("rate_limit_error", "slow down"), headers={"retry-after-ms": "1"}),
                 anthropic_text_reply(["ok"]))
    events = await collect(model_for(server), hello())
    assert len(server.requests) == 2
    assert of_type(events, "text-delta") == [{"type": "text-delta", "text": "ok"}]


@pytest.mark.asyncio
@pytest.mark.parametrize("max_retries", [0, 1, 3])
async def test_server_errors_raise_model_error_after_the_configured_retries(server, max_retries):
    server.reply(json_reply(500, error_body("api_error", "upstream exploded"), headers={"retry-after-ms": "1"}))
    with pytest.raises(ModelError) as info:
        await collect(model_for(server), hello(settings={"max_retries": max_retries}))
    assert len(server.requests) == max_retries + 1
    assert info.value.code == "provider_http_error"
    assert info.value.status == 500
    assert info.value.message == "anthropic API error (HTTP 500) for model 'claude-test': upstream exploded"


@pytest.mark.asyncio
async def test_unauthorized_is_not_retried(server):
    server.reply(json_reply(401, error_body("authentication_error", "invalid x-api-key")))
    with pytest.raises(ModelError) as info:
        await collect(model_for(server), hello())
    assert len(server.requests) == 1
    assert (info.value.status, info.value.retryable) == (401, False)
    assert "invalid x-api-key" in info.value.message


@pytest.mark.asyncio
async def test_an_event_that_is_not_an_object_is_a_stream_error(server):
    server.reply(Reply(events=[anthropic_event(anthropic_message_start()),
                               b"event: content_block_delta\ndata: [1, 2]\n\n"]))
    with pytest.raises(ModelError) as info:
        await collect(model_for(server), hello())
    assert info.value.code == "provider_stream_error"
    assert "not a JSON object" in info.value.message


@pytest.mark.asyncio
async def test_odd_fields_of_an_event_are_passed_over(server):
    server.reply(anthropic_sse([
        {**anthropic_message_start(), "message": "odd"},
        {"type": "content_block_start", "index": 0, "content_block": "odd"},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 7}},
        *anthropic_text_block(1, ["ok"]),
        {"type": "message_delta", "delta": "odd", "usage": "odd"},
        *anthropic_message_end("end_turn"),
    ]))
    events = await collect(model_for(server), hello())
    assert [e["type"] for e in events] == ["request", "response-metadata", "text-delta", "finish"]
    assert events[1]["model_id"] == "claude-test"  # the model's own id: the message had none
    assert events[-1]["finish_reason"] == "stop"


@pytest.mark.asyncio
async def test_error_event_inside_the_stream_is_a_stream_error(server):
    server.reply(Reply(events=[anthropic_event(anthropic_message_start()),
                               anthropic_event(error_body("overloaded_error", "Overloaded"))]))
    with pytest.raises(ModelError) as info:
        await collect(model_for(server), hello())
    assert info.value.code == "provider_stream_error"
    assert "Overloaded" in info.value.message


@pytest.mark.asyncio
async def test_connection_dropped_mid_stream_is_a_connection_error(server):
    server.reply(anthropic_sse([anthropic_message_start(), *anthropic_text_block(0, ["par"])], cut=True))
    events = []
    model = model_for(server)
    with pytest.raises(ModelError) as info:
        async for event in model.stream(hello()):
            events.append(event)
    await model.aclose()
    assert info.value.code == "provider_connection_error"
    assert of_type(events, "text-delta") == [{"type": "text-delta", "text": "par"}]


@pytest.mark.asyncio
async def test_connection_refused_is_a_connection_error():
    model = AnthropicModel("claude-test", api_key="k", base_url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ModelError) as info:
        await collect(model, hello(settings={"max_retries": 0}))
    assert info.value.code == "provider_connection_error"
    assert info.value.message.startswith(f"anthropic connection to {model.base_url} failed: ")


def test_missing_key_names_the_variable():
    with pytest.raises(MissingCredentialsError) as info:
        AnthropicModel("claude-test").validate_credentials()
    assert info.value.variables == ["ANTHROPIC_API_KEY"]
    assert "ANTHROPIC_API_KEY" in info.value.message


@pytest.mark.asyncio
async def test_key_and_base_url_come_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    server.reply(anthropic_text_reply(["ok"]))
    await collect(AnthropicModel("claude-test"), hello())
    assert server.requests[0].headers["authorization"] == "Bearer sk-ant-env"


@pytest.mark.asyncio
async def test_a_stream_quiet_past_the_timeout_is_a_connection_error(server):
    # the model's timeout bounds each read of the stream, as the SDK's own read timeout does
    server.reply(anthropic_sse([anthropic_message_start(), *anthropic_text_block(0, ["first"])], stall=30))
    model = model_for(server, timeout=0.5)
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        await collect(model, hello(settings={"max_retries": 0}))
    await model.aclose()
    assert time.monotonic() - started < 10
    assert info.value.code == "provider_connection_error"
    assert info.value.message == f"anthropic request to {server.url} timed out"


@pytest.mark.asyncio
async def test_abort_closes_a_stalled_stream(server):
    # The message starts, then the server goes quiet for 30 s; the abort must not wait for it. The
    # abort follows the first answer from the server (not a timer started before the SDK is
    # imported and connected, which a loaded machine can make slower than any timer).
    server.reply(anthropic_sse([anthropic_message_start(), *anthropic_text_block(0, ["never"])], stall=30))
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
        if event["type"] == "response-metadata":
            asyncio.get_running_loop().call_later(0.2, abort)
    await model.aclose()
    assert aborted_at is not None and time.monotonic() - aborted_at < 5
    assert [e["type"] for e in events] == ["request", "response-metadata"]


async def test_signal_contents_reach_the_wire_as_blocks(server):
    """A file-only signal's tag comes before its file; ``mediaType`` (the AI SDK's name) is read."""
    server.reply(anthropic_text_reply(["ok"]))
    content = [{"type": "text", "text": '<notification kind="img" />'},
               {"type": "file", "data": "aGVsbG8=", "mediaType": "image/png"},
               {"type": "text", "text": "second"}]
    await collect(model_for(server), ModelRequest(messages=[{"role": "user", "content": content}]))
    [sent] = server.requests
    assert sent.body["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": '<notification kind="img" />'},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGVsbG8="}},
        {"type": "text", "text": "second"}]}]
