"""Agents whose provider key is not set are found before anyone writes to them."""

from agents.runtime import Agent
from agents.runtime.providers.credentials import MissingKey, missing_key, missing_keys


def agent(model, id="a"):
    return Agent(id=id, instructions="x", model=model)


def test_an_agent_whose_provider_key_is_not_set_is_found(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    found = missing_keys([agent("openai/gpt-4o-mini", "ops"), agent("local/echo", "echo"),
                          agent("anthropic/claude-sonnet-4-5", "writer"), agent(lambda ctx: "openai/gpt-4o", "dyn")])
    assert found == [MissingKey("ops", "openai", ("OPENAI_API_KEY",)),
                     MissingKey("writer", "anthropic", ("ANTHROPIC_API_KEY",))]
    assert found[0].message() == ("agent 'ops' cannot answer: provider 'openai' needs an API key "
                                  "(set OPENAI_API_KEY)")


def test_a_set_key_or_a_custom_server_is_enough(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert missing_key(agent("openai/gpt-4o-mini")) is None
    monkeypatch.delenv("OPENAI_API_KEY")
    assert missing_key(agent({"id": "openai/gpt-4o-mini", "url": "http://127.0.0.1:9/v1"})) is None
