"""Who may pick a run's model over HTTP (docs/security.md, "Who may pick a model").

A body names a model only by its id string, and only one its agent lists in ``caller_models``
(staff with ``agents.choose_any_model``: any id); no body sets a connection (base URL, headers,
keys) anywhere, and a caller's JSON schema resolves ``$ref`` locally only. Every attack here points
at a local capture server with the provider keys set: the server must receive nothing.
"""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.memory import Memory
from agents.models import Message, ThreadInput
from agents.registry import get_mastra
from agents.runtime import Agent, Mastra
from tests.agents.api.conftest import Api, body, make_user, sse_chunks
from tests.runtime.providers.wire import WireServer, isolate_env, json_reply

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

OPENAI_KEY = "sk-test-openai-key-000000"
ANTHROPIC_KEY = "sk-ant-test-anthropic-key-000000"

mastra = Mastra(agents={
    # picks nothing for its callers (the default)
    "fixed": Agent(id="fixed", name="Fixed", instructions="SECRET SYSTEM PROMPT", model="local/echo",
                   memory=Memory()),
    # lets its callers pick the echo model
    "choosy": Agent(id="choosy", name="Choosy", instructions="SECRET SYSTEM PROMPT",
                    model={"id": "local/echo", "delay_ms": 0}, caller_models=["local/echo"], memory=Memory()),
})


@pytest.fixture(autouse=True)
def model_site(api_site, settings):
    settings.MASTRA = f"{__name__}:mastra"
    get_mastra.cache_clear()
    yield
    get_mastra.cache_clear()


@pytest.fixture
def capture(monkeypatch):
    """A local HTTP server that records every request; provider keys set, no base URL."""
    isolate_env(monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    with WireServer().reply(json_reply(400, {"error": {"message": "captured"}})) as server:
        yield server


@sync_to_async
def grant_choose_any_model(username: str) -> None:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    user = get_user_model().objects.get(username=username)
    user.user_permissions.add(Permission.objects.get(codename="choose_any_model", content_type__app_label="agents"))


async def nothing_stored() -> bool:
    return await ThreadInput.objects.acount() == 0 and await Message.objects.acount() == 0


def connection_models(url: str) -> list:
    return [
        {"id": "openai/gpt-4o", "baseURL": f"{url}/v1"},
        {"id": "openai/gpt-4o", "url": f"{url}/v1"},
        {"providerId": "openai", "modelId": "gpt-4o", "base_url": f"{url}/v1"},
        {"id": "anthropic/claude-sonnet-4-5", "baseURL": url},
        {"id": "openai/gpt-4o", "apiKey": "sk-attacker"},
        {"id": "openai/gpt-4o", "headers": {"X-Forwarded-To": url}},
    ]


# -- a connection in a body: 400 model_connection_forbidden ------------------------------------------------
@pytest.mark.parametrize("route", ["generate", "stream"])
@pytest.mark.parametrize("case", range(6))
async def test_a_model_object_with_a_connection_is_refused_on_generate_and_stream(alice: Api, capture, route, case):
    model = connection_models(capture.url)[case]
    response = await alice.post(f"/api/agents/choosy/{route}", {"messages": "hi", "model": model})
    assert response.status_code == 400, response.content
    assert body(response)["code"] == "model_connection_forbidden"
    assert capture.requests == []


async def test_the_message_names_the_setting_and_the_rule(alice: Api, capture):
    response = await alice.post("/api/agents/fixed/generate",
                                {"messages": "hi", "model": {"id": "openai/gpt-4o", "baseURL": capture.url}})
    assert body(response)["message"] == (
        "model.baseURL: a request may not set a model connection (base URL, headers, keys); "
        "name a model by its id, e.g. 'openai/gpt-4o'")


@pytest.mark.parametrize("route", ["generate", "stream"])
async def test_a_structured_output_model_with_a_connection_is_refused(alice: Api, capture, route):
    structured = {"schema": {"type": "object", "properties": {"a": {"type": "string"}}},
                  "model": {"id": "openai/gpt-4o", "baseURL": f"{capture.url}/v1"}}
    response = await alice.post(f"/api/agents/choosy/{route}", {"messages": "hi", "structuredOutput": structured})
    assert response.status_code == 400
    assert body(response)["code"] == "model_connection_forbidden"
    assert "structuredOutput.model.baseURL" in body(response)["message"]
    assert capture.requests == []


@pytest.mark.parametrize("extra", [
    {"modelSettings": {"headers": {"Authorization": "Bearer x"}}},
    {"providerOptions": {"openai": {"apiKey": "sk-attacker"}}},
    {"providerOptions": {"openai": {"baseURL": "http://127.0.0.1:9/v1"}}},
    {"structuredOutput": {"schema": {"type": "object"}, "providerOptions": {"anthropic": {"headers": {"a": "b"}}}}},
    {"memory": {"resource": "alice", "thread": "t1",
                "options": {"generateTitle": {"model": {"id": "openai/gpt-4o", "baseURL": "http://127.0.0.1:9"}}}}},
])
async def test_headers_keys_and_urls_anywhere_in_the_options_are_refused(alice: Api, capture, extra):
    response = await alice.post("/api/agents/choosy/generate", {"messages": "hi", **extra})
    assert response.status_code == 400, response.content
    assert body(response)["code"] == "model_connection_forbidden"
    assert capture.requests == [] and await nothing_stored()


INPUTS = [
    ("send-message", {"message": "hi"}),
    ("queue-message", {"message": "hi"}),
    ("signals", {"signal": {"type": "user", "contents": "hi"}}),
    ("state-signals", {"state": {"id": "browser", "mode": "snapshot", "contents": "on page 1"}}),
    ("notifications", {"notification": {"source": "github", "kind": "ci", "priority": "urgent", "summary": "x"}}),
]


@pytest.mark.parametrize("route,payload", INPUTS, ids=[r for r, _ in INPUTS])
async def test_if_idle_stream_options_with_a_connection_are_refused_before_anything_is_stored(
        alice: Api, capture, route, payload):
    stream_options = {"model": {"id": "openai/gpt-4o", "baseURL": f"{capture.url}/v1"}}
    response = await alice.post(f"/api/agents/choosy/{route}",
                                {**payload, "threadId": "t1", "ifIdle": {"streamOptions": stream_options}})
    assert response.status_code == 400, response.content
    assert body(response)["code"] == "model_connection_forbidden"
    assert "ifIdle.streamOptions.model.baseURL" in body(response)["message"]
    assert capture.requests == [] and await nothing_stored()


@pytest.mark.parametrize("route,payload", INPUTS, ids=[r for r, _ in INPUTS])
async def test_if_idle_stream_options_naming_a_model_not_allowed_are_403(alice: Api, capture, route, payload):
    response = await alice.post(f"/api/agents/fixed/{route}",
                                {**payload, "threadId": "t1", "ifIdle": {"streamOptions": {"model": "openai/gpt-4o"}}})
    assert response.status_code == 403, response.content
    assert body(response)["code"] == "model_forbidden"
    assert capture.requests == [] and await nothing_stored()


# -- a model id: only one the agent allows ------------------------------------------------------------------
async def test_by_default_a_caller_may_name_no_model(alice: Api, capture):
    response = await alice.post("/api/agents/fixed/generate", {"messages": "hi", "model": "local/echo"})
    assert response.status_code == 403
    assert body(response) == {
        "error": "model: agent 'fixed' does not let callers choose the model 'local/echo'", "code": "model_forbidden",
        "message": "model: agent 'fixed' does not let callers choose the model 'local/echo'"}


async def test_an_allowed_id_is_used(alice: Api, capture):
    response = await alice.post("/api/agents/choosy/generate", {"messages": "hi", "model": "local/echo"})
    assert response.status_code == 200, response.content
    assert body(response)["text"] == "echo: hi"
    streamed = await alice.post("/api/agents/choosy/stream", {"messages": "hi", "model": "local/echo"})
    assert streamed.status_code == 200
    _, chunks = await sse_chunks(streamed)
    assert "".join(c["payload"]["text"] for c in chunks if c["type"] == "text-delta") == "echo: hi"
    accepted = await alice.post("/api/agents/choosy/send-message",
                                {"message": "hi", "threadId": "t1", "ifIdle": {"streamOptions": {"model": "local/echo"}}})
    assert accepted.status_code == 200 and body(accepted)["action"] == "wake"


@pytest.mark.parametrize("where", ["model", "structuredOutput"])
async def test_an_id_the_agent_does_not_allow_is_403(alice: Api, capture, where):
    request = {"messages": "hi", "model": "openai/gpt-4o-mini"} if where == "model" else {
        "messages": "hi", "structuredOutput": {"schema": {"type": "object"}, "model": "openai/gpt-4o-mini"}}
    response = await alice.post("/api/agents/choosy/generate", request)
    assert response.status_code == 403
    assert body(response)["code"] == "model_forbidden"
    assert capture.requests == []


async def test_a_model_object_without_a_connection_is_400_name_it_by_id(alice: Api, capture):
    response = await alice.post("/api/agents/choosy/generate", {"messages": "hi", "model": {"id": "local/echo"}})
    assert response.status_code == 400
    assert body(response)["code"] == "invalid_model"


async def test_staff_with_the_permission_may_choose_any_id(capture, transactional_db):
    ops = Api(await make_user("ops", staff=True))
    await grant_choose_any_model("ops")
    response = await ops.post("/api/agents/fixed/generate", {"messages": "hi", "model": "local/echo"})
    assert response.status_code == 200, response.content
    assert body(response)["text"] == "echo: hi"
    # but never a connection
    response = await ops.post("/api/agents/fixed/generate",
                              {"messages": "hi", "model": {"id": "openai/gpt-4o", "baseURL": capture.url}})
    assert response.status_code == 400 and body(response)["code"] == "model_connection_forbidden"
    assert capture.requests == []


async def test_staff_without_the_permission_may_not(ops: Api, capture):
    response = await ops.post("/api/agents/fixed/generate", {"messages": "hi", "model": "local/echo"})
    assert response.status_code == 403
    assert body(response)["code"] == "model_forbidden"


async def test_the_permission_without_staff_is_not_enough(alice: Api, capture):
    await grant_choose_any_model("alice")
    response = await alice.post("/api/agents/fixed/generate", {"messages": "hi", "model": "local/echo"})
    assert response.status_code == 403


# -- a caller's JSON schema resolves $ref locally only --------------------------------------------------------
@pytest.mark.parametrize("route", ["generate", "stream"])
async def test_a_remote_ref_in_a_structured_output_schema_is_never_fetched(alice: Api, capture, route):
    schema = {"type": "object", "properties": {"a": {"$ref": f"{capture.url}/schema.json"}}}
    response = await alice.post(f"/api/agents/choosy/{route}", {"messages": "hi", "structuredOutput": {"schema": schema}})
    assert response.status_code == 400, response.content
    assert body(response)["code"] == "invalid_schema"
    assert capture.requests == []


async def test_a_remote_ref_in_if_idle_stream_options_is_400(alice: Api, capture):
    schema = {"$ref": f"{capture.url}/schema.json"}
    response = await alice.post("/api/agents/choosy/send-message", {
        "message": "hi", "threadId": "t1", "ifIdle": {"streamOptions": {"structuredOutput": {"schema": schema}}}})
    assert response.status_code == 400
    assert body(response)["code"] == "invalid_schema"
    assert capture.requests == [] and await nothing_stored()


async def test_local_refs_keep_working(alice: Api, capture):
    # the echo model answers null for a $ref; the validation follows the ref to {"type": "null"}
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/nothing"}}, "required": ["a"],
              "$defs": {"nothing": {"type": "null"}}}
    response = await alice.post("/api/agents/choosy/generate", {"messages": "hi", "structuredOutput": {"schema": schema}})
    assert response.status_code == 200, response.content
    assert body(response)["object"] == {"a": None} and "error" not in body(response)
