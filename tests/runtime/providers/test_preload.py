"""A web process loads its agents' model SDKs before it serves (``agents.runtime.providers.preload``):
the first call no longer imports an SDK on the event loop, and the SDK joins the frozen heap."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.runtime import Agent
from agents.runtime.providers.anthropic import AnthropicModel
from agents.runtime.providers.openai import OpenAIChatModel
from agents.runtime.providers.preload import preload_models
from agents.runtime.providers.router import clear_model_cache
from tests.runtime.providers.wire import isolate_env

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    isolate_env(monkeypatch)
    clear_model_cache()
    yield
    clear_model_cache()


class CountingModel:
    """A model object with a preload of its own."""
    provider, model_id = "test", "counting"
    preloads = 0

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    async def stream(self, request):  # pragma: no cover - never called here
        yield {"type": "finish", "finish_reason": "stop"}

    def preload(self) -> None:
        type(self).preloads += 1
        if self.fail:
            raise RuntimeError("no SDK here")


class OtherModel(CountingModel):
    preloads = 0


def agent(model, **extra) -> Agent:
    return Agent(id=f"a{id(model)}", name="A", instructions="Answer.", model=model, **extra)


def test_each_model_class_named_by_the_agents_is_preloaded_once_in_order():
    counting = CountingModel()
    agents = [
        agent("local/echo"),  # nothing to load
        agent(counting),
        agent([{"model": "anthropic/claude-sonnet-4-5"}, {"model": "openai/gpt-4o-mini"}]),  # a fallback chain
        agent("openai/gpt-4o"),  # the same class again
        agent(lambda request_context: "openai/gpt-4o"),  # chosen per run: left to its first call
        agent(CountingModel()),
    ]
    assert preload_models(agents) == ["CountingModel", "AnthropicModel", "OpenAIChatModel"]
    assert CountingModel.preloads == 1


def test_the_agents_an_agent_delegates_to_are_preloaded_too():
    helper = agent(OtherModel())
    assert preload_models([agent("local/echo", agents={"helper": helper})]) == ["OtherModel"]


def test_a_failing_preload_is_logged_and_the_others_still_run(caplog):
    with caplog.at_level(logging.WARNING, logger="agents.runtime.providers.preload"):
        assert preload_models([agent(CountingModel(fail=True)), agent(OtherModel())]) == ["OtherModel"]
    assert "could not preload the SDK of CountingModel" in caplog.text


@pytest.mark.parametrize("model_class", [OpenAIChatModel, AnthropicModel])
def test_an_sdk_preload_sends_nothing_needs_no_key_and_leaves_the_callers_loop(model_class):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        # no key in the environment (isolate_env) and an address nothing listens on: a request or a
        # key lookup would raise
        model_class(model_id="m", base_url="http://127.0.0.1:9/v1").preload()
        assert asyncio.get_event_loop() is loop and not loop.is_closed()
    finally:
        asyncio.set_event_loop(None)
        loop.close()


PROBE = """
import gc, json, sys
import mastra_site.asgi
sdk = sys.modules.get("openai")
print(json.dumps({"openai": sdk is not None, "aiohttp": "aiohttp" in sys.modules,
                  "sdk_tracked": sdk is not None and any(o is sdk.AsyncOpenAI for o in gc.get_objects())}))
"""


def probe(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("DATABASE_URL", "MASTRA_DEFAULT_MODEL", "OPENAI_API_KEY", "MASTRA_GC_FREEZE")}
    clean.update(DJANGO_SETTINGS_MODULE="mastra_site.settings", PYTHONPATH=str(ROOT), **env)
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=clean, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_web_process_loads_its_models_sdk_before_freezing_its_heap():
    # the site's assistant on an OpenAI model (with local/echo as its fallback): the SDK is loaded
    # when the ASGI application is built, and its objects are frozen with the rest of the start
    assert probe(MASTRA_DEFAULT_MODEL="openai/gpt-4o-mini") == {"openai": True, "aiohttp": True,
                                                               "sdk_tracked": False}
    # the embedded default (local/echo) loads no SDK at all
    assert probe() == {"openai": False, "aiohttp": False, "sdk_tracked": False}
