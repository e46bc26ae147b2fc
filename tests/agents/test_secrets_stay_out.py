"""No credential and no system prompt in any stored row or published chunk (docs/security.md):
after a thread run whose provider reports its request and response headers, a run suspended on an
approval with credentials in its call options, and a provider error quoting a key and a base URL
with its password, every table of the database and every chunk a subscriber saw are searched."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.apps import apps

from agents.memory import Memory
from agents.models import Run
from agents.runtime import Agent, create_tool
from agents.runtime.errors import ModelError
from agents.runtime.limits import configure_limits, current_limits
from agents.runtime.providers.echo import EchoModel
from tests.agents.thread_harness import collect, ends_run, settle

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

SYSTEM_PROMPT = "You are the planted system prompt 4f1c9a."
KEY = "sk-planted0secret0key0123456789"
PASSWORD = "planted-db-password-77"
SECRETS = (SYSTEM_PROMPT, KEY, PASSWORD, "planted0secret")
R, T = "user-1", "thread-1"


class LeakyEcho(EchoModel):
    """``local/echo`` that reports what real providers report: its request body (with the system
    instructions) and response headers (here, a key)."""

    async def stream(self, request):
        yield {"type": "request", "body": {"messages": request.messages, "headers": {"Authorization": f"Bearer {KEY}"}}}
        async for event in super().stream(request):
            if event["type"] == "response-metadata":
                event = {**event, "headers": {"x-echo-key": KEY}}
            yield event


class FailingModel(EchoModel):
    """A provider that fails quoting its base URL (with the password) and the key it was given."""

    async def stream(self, request):
        raise ModelError(f"openai connection to https://svc:{PASSWORD}@llm.internal/v1 failed: "
                         f"HTTP 401 Incorrect API key provided: {KEY}", status=401)
        yield  # pragma: no cover  (an async generator)


@pytest.fixture(autouse=True)
async def _drain():
    yield
    await settle()


@sync_to_async
def every_row() -> str:
    """Every row of every table, as one JSON text."""
    rows = []
    for model in apps.get_models():
        rows.extend(model.objects.values())
    return json.dumps(rows, default=str)


def leaked(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def delete_tool():
    return create_tool(id="delete_file", description="Delete a file.",
                       input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
                       execute=lambda input: {"deleted": input["path"]}, require_approval=True)


async def test_a_run_an_approval_and_a_provider_error_store_and_publish_no_secret():
    agent = Agent(id="bot", instructions=SYSTEM_PROMPT, model=LeakyEcho(), memory=Memory(),
                  tools={"delete_file": delete_tool()})
    watch = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    assert (await agent.send_message("hello", resource_id=R, thread_id=T)).action == "wake"
    seen = await collect(watch, ends_run)

    suspended = await agent.generate('/tool delete_file {"path": "/tmp/x"}',
                                     memory={"resource": R, "thread": "approvals"},
                                     model_settings={"headers": {"Authorization": f"Bearer {KEY}"}},
                                     provider_options={"openai": {"apiKey": KEY, "user": "kept"}})
    assert suspended.finish_reason == "suspended"
    # the caller's own result keeps what the provider reported
    assert suspended.steps[0].request["body"]["messages"][0]["content"] == SYSTEM_PROMPT

    failing = Agent(id="failing", instructions=SYSTEM_PROMPT, model=FailingModel(), memory=Memory())
    watch_failing = await failing.subscribe_to_thread(resource_id=R, thread_id="broken")
    woken = await failing.send_message("hello", resource_id=R, thread_id="broken")
    seen += await collect(watch_failing, ends_run)
    await settle()

    published = json.dumps(seen, default=str)
    assert [c["type"] for c in seen if c["type"] in ("step-finish", "finish", "error")] == [
        "step-finish", "finish", "error", "finish"]
    step_finish = next(c for c in seen if c["type"] == "step-finish")
    answered = {"id": "echo-response", "timestamp": step_finish["payload"]["metadata"]["timestamp"],
                "modelId": "echo"}
    assert step_finish["payload"]["metadata"] == {**answered, "request": {}, "response": answered}
    error = next(c for c in seen if c["type"] == "error")
    assert error["payload"]["error"]["message"] == (
        "openai connection to https://svc:[redacted]@llm.internal/v1 failed: HTTP 401 Incorrect API key "
        "provided: sk-[redacted]")
    run = await Run.objects.aget(pk=woken.run_id)
    assert (run.status, run.error) == ("failed", error["payload"]["error"]["message"])
    assert leaked(published) == []
    stored = await every_row()
    assert leaked(stored) == []
    assert '"user": "kept"' in stored  # the approval state keeps the options that are not credentials


async def test_the_debug_switch_keeps_the_provider_payloads_in_events():
    before = current_limits()
    configure_limits(keep_provider_payloads=True)
    try:
        agent = Agent(id="bot", instructions=SYSTEM_PROMPT, model=LeakyEcho(), memory=Memory())
        watch = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
        await agent.send_message("hello", resource_id=R, thread_id=T)
        seen = await collect(watch, ends_run)
    finally:
        configure_limits(keep_provider_payloads=before.keep_provider_payloads)
    step_finish = next(c for c in seen if c["type"] == "step-finish")
    assert step_finish["payload"]["metadata"]["request"]["body"]["messages"][0]["content"] == SYSTEM_PROMPT
    assert step_finish["payload"]["metadata"]["response"]["headers"] == {"x-echo-key": KEY}
    assert step_finish["payload"]["metadata"]["headers"] == {"x-echo-key": KEY}
