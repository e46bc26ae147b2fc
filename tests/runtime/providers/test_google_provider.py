"""GoogleModel: the OpenAI adapter pointed at Gemini's compatibility endpoint (a local server here)."""

from __future__ import annotations

import pytest

from agents.runtime.errors import MissingCredentialsError
from agents.runtime.providers.base import ModelRequest
from agents.runtime.providers.google import GOOGLE_OPENAI_BASE_URL, GoogleModel
from tests.runtime.providers.wire import (WireServer, collect, isolate_env, of_type, openai_chunk, openai_sse,
                                          openai_text_reply, openai_tool_call_delta)


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    isolate_env(monkeypatch)


@pytest.fixture
def server(monkeypatch):
    with WireServer() as srv:
        monkeypatch.setenv("GOOGLE_BASE_URL", srv.url + "/v1beta/openai/")
        yield srv


def hello(**kwargs) -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": "Hello"}], **kwargs)


@pytest.mark.parametrize("variable", ["GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"])
@pytest.mark.asyncio
async def test_key_comes_from_either_variable(server, monkeypatch, variable):
    monkeypatch.setenv(variable, f"key-from-{variable}")
    server.reply(openai_text_reply(["Hi", "!"]))
    model = GoogleModel("gemini-test")
    model.validate_credentials()
    events = await collect(model, hello())

    [request] = server.requests
    assert request.path == "/v1beta/openai/chat/completions"
    assert request.headers["authorization"] == f"Bearer key-from-{variable}"
    assert request.body["model"] == "gemini-test"
    assert "".join(e["text"] for e in of_type(events, "text-delta")) == "Hi!"
    assert events[-1]["finish_reason"] == "stop"


def test_google_api_key_wins_over_the_ai_sdk_variable(monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "first")
    monkeypatch.setenv("GOOGLE_GENERATIVE_AI_API_KEY", "second")
    assert GoogleModel("gemini-test").resolve_api_key() == "first"


def test_missing_key_names_both_variables_even_with_a_base_url(monkeypatch):
    # Unlike a custom OpenAI-compatible server, Gemini never runs keyless.
    monkeypatch.setenv("GOOGLE_BASE_URL", "http://127.0.0.1:9/")
    with pytest.raises(MissingCredentialsError) as info:
        GoogleModel("gemini-test").validate_credentials()
    assert info.value.provider == "google"
    assert info.value.variables == ["GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"]
    assert "GOOGLE_API_KEY or GOOGLE_GENERATIVE_AI_API_KEY" in info.value.message


def test_default_endpoint_is_geminis_openai_compatibility_layer():
    model = GoogleModel("gemini-2.5-flash", api_key="k")
    assert model.base_url == GOOGLE_OPENAI_BASE_URL == "https://generativelanguage.googleapis.com/v1beta/openai/"
    assert (model.provider, model.model_id) == ("google", "gemini-2.5-flash")


@pytest.mark.asyncio
async def test_google_provider_options_are_merged_and_openai_ones_are_not(server):
    server.reply(openai_text_reply(["ok"]))
    request = hello(settings={"top_k": 5}, provider_options={
        "google": {"reasoning_effort": "low",
                   "extra_body": {"google": {"thinking_config": {"include_thoughts": True}}}},
        "openai": {"user": "not-for-google"}})
    events = await collect(GoogleModel("gemini-test", api_key="k"), request)

    body = server.bodies[0]
    assert body["reasoning_effort"] == "low"
    assert body["extra_body"] == {"google": {"thinking_config": {"include_thoughts": True}}}
    assert "user" not in body
    assert "top_k" in of_type(events, "warning")[0]["message"]


@pytest.mark.asyncio
async def test_tool_call_finished_with_stop_is_reported_as_tool_calls(server):
    # Gemini's compatibility layer sends whole calls and ends the turn with "stop".
    server.reply(openai_sse([
        openai_chunk(openai_tool_call_delta(0, id="g_call", name="weather", arguments='{"city": "Oslo"}')),
        openai_chunk({}, finish_reason="stop"),
        openai_chunk(choices=False, usage={"prompt_tokens": 8, "completion_tokens": 4, "total_tokens": 12}),
    ]))
    events = await collect(GoogleModel("gemini-test", api_key="k"), hello())
    assert of_type(events, "tool-call") == [{"type": "tool-call", "tool_call_id": "g_call", "tool_name": "weather",
                                             "args_text": '{"city": "Oslo"}'}]
    assert events[-1]["finish_reason"] == "tool-calls"
    assert events[-1]["usage"] == {"input_tokens": 8, "output_tokens": 4, "total_tokens": 12}


@pytest.mark.asyncio
async def test_tool_schemas_reach_gemini_without_the_keywords_it_refuses(server):
    """As the AI SDK's Google provider (Mastra's) converts them: no ``additionalProperties`` and no
    ``$schema``, at any depth."""
    server.reply(openai_text_reply(["ok"]))
    parameters = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {
        "q": {"type": "string"},
        "filter": {"type": "object", "properties": {"tag": {"type": "string"}}, "additionalProperties": False},
        "rows": {"type": "array", "items": {"type": "object", "properties": {}, "additionalProperties": True}}},
        "required": ["q"], "additionalProperties": False}
    tools = [{"name": "find", "description": "Find.", "parameters": parameters}]
    await collect(GoogleModel("gemini-test", api_key="k"), hello(tools=tools))
    assert server.bodies[0]["tools"] == [{"type": "function", "function": {
        "name": "find", "description": "Find.", "parameters": {"type": "object", "properties": {
            "q": {"type": "string"},
            "filter": {"type": "object", "properties": {"tag": {"type": "string"}}},
            "rows": {"type": "array", "items": {"type": "object", "properties": {}}}},
            "required": ["q"]}}}]
    assert parameters["additionalProperties"] is False  # the request's own dict is untouched


@pytest.mark.asyncio
async def test_openai_and_anthropic_get_the_tool_schema_as_it_is():
    from agents.runtime.providers.anthropic import AnthropicModel
    from agents.runtime.providers.openai import OpenAIChatModel
    from tests.runtime.providers.wire import anthropic_text_reply

    parameters = {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": False}
    tools = [{"name": "find", "description": "Find.", "parameters": parameters}]
    with WireServer() as srv:
        srv.reply(openai_text_reply(["ok"]))
        await collect(OpenAIChatModel("gpt-test", api_key="k", base_url=srv.url + "/v1"), hello(tools=tools))
        srv.reply(anthropic_text_reply(["ok"]))
        await collect(AnthropicModel("claude-test", api_key="k", base_url=srv.url), hello(tools=tools))
        openai_body, anthropic_body = srv.bodies
    assert openai_body["tools"][0]["function"]["parameters"] == parameters
    assert anthropic_body["tools"][0]["input_schema"] == parameters
