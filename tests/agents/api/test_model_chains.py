"""Fallback chains over HTTP: the agent's chain as Mastra's server lists it (``modelList``), and a
chain in a generate body, checked entry by entry under the rule of ``agents.model_choice``."""

from __future__ import annotations

import pytest

from agents.registry import get_mastra
from agents.runtime import Agent, Mastra
from tests.agents.api.conftest import Api, body
from tests.runtime.providers.wire import WireServer, isolate_env, json_reply

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

mastra = Mastra(agents={
    "chained": Agent(id="chained", name="Chained", instructions="x",
                     model=[{"model": "openai/gpt-4o", "max_retries": 2, "enabled": False},
                            {"model": "anthropic/claude-sonnet-4-5", "id": "claude", "max_retries": 1},
                            "local/echo"],
                     caller_models=["local/echo", "openai/gpt-4o-mini"]),
})


@pytest.fixture(autouse=True)
def model_site(api_site, settings):
    settings.MASTRA = f"{__name__}:mastra"
    get_mastra.cache_clear()
    yield
    get_mastra.cache_clear()


@pytest.fixture
def capture(monkeypatch):
    isolate_env(monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai-key-000000")
    with WireServer().reply(json_reply(400, {"error": {"message": "captured"}})) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")  # the site's own setting: the chain's openai entries
        yield server


async def test_the_agent_lists_its_chain_as_mastra_does(alice: Api):
    data = body(await alice.get("/api/agents/chained"))
    assert (data["provider"], data["modelId"]) == ("anthropic", "claude-sonnet-4-5")
    assert data["modelList"] == [
        {"id": "openai/gpt-4o", "enabled": False, "maxRetries": 2,
         "model": {"provider": "openai", "modelId": "gpt-4o", "modelVersion": "v2"}},
        {"id": "claude", "enabled": True, "maxRetries": 1,
         "model": {"provider": "anthropic", "modelId": "claude-sonnet-4-5", "modelVersion": "v2"}},
        {"id": "local/echo", "enabled": True, "maxRetries": 0,
         "model": {"provider": "local", "modelId": "echo", "modelVersion": "v2"}},
    ]


async def test_a_chain_of_allowed_ids_runs(alice: Api, capture):
    response = await alice.post("/api/agents/chained/generate", {"messages": "hi", "model": [
        {"model": "openai/gpt-4o-mini", "maxRetries": 0}, "local/echo"]})
    assert response.status_code == 200, response.content
    data = body(response)
    assert data["text"] == "echo: hi"
    assert [s["model"] for s in data["steps"]] == ["local/echo"]
    assert [(a["model"], a["status"]) for a in data["steps"][0]["attempts"]] == [("openai/gpt-4o-mini", 400)]
    [request] = capture.requests  # the 400 goes to the next entry at once
    assert request.body["model"] == "gpt-4o-mini"


async def test_a_chain_entry_the_agent_does_not_allow_is_403_naming_it(alice: Api):
    response = await alice.post("/api/agents/chained/generate", {"messages": "hi", "model": [
        "local/echo", {"model": "openai/gpt-4o", "maxRetries": 1}]})
    assert response.status_code == 403
    assert body(response)["code"] == "model_forbidden"
    assert body(response)["message"] == (
        "model[1].model: agent 'chained' does not let callers choose the model 'openai/gpt-4o'")


@pytest.mark.parametrize("entry", [
    {"model": {"id": "local/echo", "baseURL": "http://127.0.0.1:9/v1"}},
    {"model": "local/echo", "modelSettings": {"headers": {"Authorization": "Bearer x"}}},
    {"model": "local/echo", "providerOptions": {"openai": {"apiKey": "sk-attacker"}}},
])
async def test_a_connection_in_a_chain_entry_is_refused(alice: Api, capture, entry):
    response = await alice.post("/api/agents/chained/generate", {"messages": "hi", "model": ["local/echo", entry]})
    assert response.status_code == 400, response.content
    assert body(response)["code"] == "model_connection_forbidden"
    assert capture.requests == []


async def test_a_malformed_chain_is_400(alice: Api):
    response = await alice.post("/api/agents/chained/generate", {"messages": "hi", "model": [
        {"model": "local/echo", "maxRetries": -1}]})
    assert response.status_code == 400, response.content
    assert body(response)["code"] == "agent_config_error"
    assert "model[0].max_retries" in body(response)["message"]
