"""resolve_model: strings, config dicts and model objects; errors name the field and the value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agents.runtime.errors import AgentConfigError
from agents.runtime.providers.anthropic import AnthropicModel
from agents.runtime.providers.echo import EchoModel
from agents.runtime.providers.google import GoogleModel
from agents.runtime.providers.openai import OpenAIChatModel
from agents.runtime.providers.router import clear_model_cache, resolve_model
from tests.runtime.providers.wire import isolate_env


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    isolate_env(monkeypatch)
    clear_model_cache()
    yield
    clear_model_cache()


@pytest.mark.parametrize("spec, cls, provider, model_id", [
    ("openai/gpt-4o", OpenAIChatModel, "openai", "gpt-4o"),
    ("openai/meta-llama/Llama-3", OpenAIChatModel, "openai", "meta-llama/Llama-3"),
    ("anthropic/claude-sonnet-4-5", AnthropicModel, "anthropic", "claude-sonnet-4-5"),
    ("google/gemini-2.5-flash", GoogleModel, "google", "gemini-2.5-flash"),
    ("local/echo", EchoModel, "local", "echo"),
])
def test_strings_resolve_to_provider_models(spec, cls, provider, model_id):
    model = resolve_model(spec)
    assert type(model) is cls
    assert (model.provider, model.model_id) == (provider, model_id)


def test_resolving_needs_no_credentials():
    # Keys are checked when the model is called, so an agent can be defined before they are set.
    assert resolve_model("openai/gpt-4o").provider == "openai"


def test_strings_are_cached():
    assert resolve_model("openai/gpt-4o") is resolve_model("openai/gpt-4o")
    assert resolve_model("openai/gpt-4o") is not resolve_model("openai/gpt-4o-mini")


def test_config_dicts_with_the_same_settings_give_one_model():
    spec = {"id": "openai/llama3", "url": "http://127.0.0.1:11434/v1", "api_key": "k", "headers": {"x-a": "1"}}
    model = resolve_model(spec)
    assert resolve_model(dict(spec)) is model  # its SDK clients and connections serve every run
    assert resolve_model({"id": "openai/llama3", "baseURL": "http://127.0.0.1:11434/v1", "apiKey": "k",
                          "headers": {"x-a": "1"}}) is model  # the same settings, spelled as Mastra does
    assert resolve_model({**spec, "api_key": "other"}) is not model
    assert resolve_model({**spec, "headers": {"x-a": "2"}}) is not model
    assert resolve_model({**spec, "headers": {"x-a": ["not", "hashable"]}}) is not resolve_model(
        {**spec, "headers": {"x-a": ["not", "hashable"]}})  # built each time, as before
    clear_model_cache()
    assert resolve_model(spec) is not model


def test_config_dict_models_are_kept_for_the_most_recent_settings_only(monkeypatch):
    from agents.runtime.providers import router

    monkeypatch.setattr(router, "CONFIG_CACHE_SIZE", 3)
    first = resolve_model({"id": "openai/m0", "api_key": "k"})
    for n in range(1, 4):
        resolve_model({"id": f"openai/m{n}", "api_key": "k"})
    assert len(router._config_cache) == 3
    assert resolve_model({"id": "openai/m0", "api_key": "k"}) is not first  # the oldest was let go


def test_config_dict_passes_connection_settings():
    model = resolve_model({"id": "openai/llama3", "url": "http://127.0.0.1:11434/v1", "api_key": "k",
                           "headers": {"x-a": "1"}})
    assert isinstance(model, OpenAIChatModel)
    assert (model.model_id, model.base_url, model.api_key, model.headers) == (
        "llama3", "http://127.0.0.1:11434/v1", "k", {"x-a": "1"})


def test_config_dict_accepts_mastra_spellings():
    model = resolve_model({"providerId": "anthropic", "modelId": "claude-x", "apiKey": "k",
                           "baseURL": "http://127.0.0.1:1"})
    assert isinstance(model, AnthropicModel)
    assert (model.model_id, model.api_key, model.base_url) == ("claude-x", "k", "http://127.0.0.1:1")


def test_config_dict_for_echo_passes_its_options():
    model = resolve_model({"id": "local/echo", "delay_ms": 20, "chunk_size": 3})
    assert isinstance(model, EchoModel)
    assert (model.delay, model.chunk_size) == (0.02, 3)


def test_model_objects_are_returned_as_they_are():
    class Custom:
        provider, model_id = "custom", "m1"

        async def stream(self, request):
            yield {"type": "finish"}

    custom = Custom()
    assert resolve_model(custom) is custom


@pytest.mark.parametrize("spec", ["gpt-4o", "openai/", "/gpt-4o", "", "/"])
def test_malformed_strings_name_the_value_and_the_providers(spec):
    with pytest.raises(AgentConfigError) as info:
        resolve_model(spec, field="agents.helper.model")
    assert info.value.field == "agents.helper.model"
    assert repr(spec) in info.value.message
    assert "anthropic, google, local, openai" in info.value.message


def test_unknown_provider_names_the_value_and_the_providers():
    with pytest.raises(AgentConfigError) as info:
        resolve_model("mistral/large")
    assert info.value.field == "model"
    assert "'mistral'" in info.value.message and "'mistral/large'" in info.value.message
    assert "known providers: anthropic, google, local, openai" in info.value.message


def test_unknown_local_model_is_an_error():
    with pytest.raises(AgentConfigError, match="unknown local model 'parrot'"):
        resolve_model("local/parrot")


@pytest.mark.parametrize("spec", [42, None, ["openai/gpt-4o"], object()])
def test_other_values_are_errors(spec):
    with pytest.raises(AgentConfigError) as info:
        resolve_model(spec)
    assert "known providers" in info.value.message


@pytest.mark.parametrize("spec, message", [
    ({"url": "http://x"}, "needs 'id'"),
    ({"id": "nope"}, "not a model id"),
    ({"id": "openai/gpt-4o", "base-url": "http://x"}, "unknown key 'base-url'"),
    ({"id": "local/echo", "api_key": "k"}, "unknown key 'api_key'"),
    ({"id": "openai/gpt-4o", "headers": "x"}, "headers must be a dict"),
])
def test_bad_config_dicts(spec, message):
    with pytest.raises(AgentConfigError, match=message):
        resolve_model(spec)


def test_object_without_identity_is_an_error():
    class Anonymous:
        def stream(self, request):
            return iter(())

    with pytest.raises(AgentConfigError, match="provider and model_id"):
        resolve_model(Anonymous())


def test_router_imports_no_sdk_until_a_model_is_used():
    code = ("import sys, agents.runtime.providers.router as r; r.resolve_model('openai/gpt-4o'); "
            "r.resolve_model('anthropic/claude'); r.resolve_model('google/gemini'); "
            "print(sorted(m for m in ('openai', 'anthropic', 'django') if m in sys.modules))")
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "[]"
