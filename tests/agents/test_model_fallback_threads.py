"""Fallback chains in memory threads, on the database: the stored run says which model answered
each step, a thread whose models all fail gets one failure (not one per retry) and stays usable,
and a tool that needs an approval is neither asked again nor run again when a later step falls back.
The models are the real SDKs against local servers speaking their wire formats."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents.memory import Memory
from agents.models import Message, Run, ThreadEvent, ToolApproval
from agents.runtime import Agent, create_tool
from agents.runtime.providers.resilience import configure_resilience
from tests.agents.thread_harness import bounded, collect, ends_run, settle
from tests.runtime.providers.wire import (WireServer, anthropic_text_reply, isolate_env, json_reply, openai_chunk,
                                          openai_sse, openai_text_reply, openai_tool_call_delta)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

PRIMARY, FALLBACK = "openai/gpt-test", "anthropic/claude-test"


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    isolate_env(monkeypatch)


@pytest.fixture
def waits():
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(round(seconds, 3))

    configure_resilience(sleep=sleep, random=lambda: 0.5, retry_base_s=1.0, retry_factor=2.0, breaker_failures=0)
    return waits


@pytest.fixture
def servers():
    with WireServer() as openai_server, WireServer() as anthropic_server:
        yield openai_server, anthropic_server


def chain(servers, **primary_entry) -> list:
    openai_server, anthropic_server = servers
    return [{"model": {"id": PRIMARY, "url": openai_server.url + "/v1", "api_key": "sk-test"}, **primary_entry},
            {"model": {"id": FALLBACK, "url": anthropic_server.url, "api_key": "sk-ant-test"}}]


def tool_call_reply(call_id: str, name: str, args: dict):
    return openai_sse([openai_chunk({"role": "assistant", "content": None}),
                       openai_chunk(openai_tool_call_delta(0, id=call_id, name=name, arguments=json.dumps(args))),
                       openai_chunk({}, finish_reason="tool_calls")])


@sync_to_async
def runs() -> list[Run]:
    return list(Run.objects.order_by("started_at"))


@sync_to_async
def thread_chunks(thread_id: str) -> list[dict]:
    return [e.chunk for e in ThreadEvent.objects.filter(thread__thread_id=thread_id).order_by("seq")]


@sync_to_async
def stored_roles(thread_id: str) -> list[str]:
    return [m.role for m in Message.objects.filter(thread__thread_id=thread_id).order_by("created_at", "id")]


async def test_the_stored_run_records_the_model_of_each_step(waits, servers):
    openai_server, anthropic_server = servers
    ran = []
    lookup = create_tool(id="lookup", description="Look up", input_schema={"type": "object"},
                         execute=lambda input: ran.append(1) or {"ok": True})
    openai_server.reply(tool_call_reply("call_1", "lookup", {}), json_reply(503, {"error": {"message": "busy"}}))
    anthropic_server.reply(anthropic_text_reply(["done"]))
    agent = Agent(id="fb", instructions="x", model=chain(servers, max_retries=1), tools={"lookup": lookup},
                  memory=Memory())

    result = await agent.generate("go", memory={"resource": "u1", "thread": "t1"})

    assert result.text == "done"
    assert ran == [1]
    [run] = await runs()
    assert (run.status, run.step_models, run.error_code) == ("completed", [PRIMARY, FALLBACK], "")
    assert waits == [0.75]


async def test_a_thread_whose_models_all_fail_gets_one_failure_and_stays_usable(waits, servers):
    openai_server, anthropic_server = servers
    openai_server.reply(json_reply(429, {"error": {"message": "slow down, key sk-live-0123456789abcdef"}},
                                   headers={"retry-after": "2"}))
    anthropic_server.reply(json_reply(500, {"type": "error", "error": {"type": "api_error", "message": "boom"}}))
    agent = Agent(id="fb", instructions="x", model=chain(servers, max_retries=2), memory=Memory())
    sub = await agent.subscribe_to_thread(resource_id="u1", thread_id="t2")

    accepted = await agent.send_message("hello", resource_id="u1", thread_id="t2")
    chunks = await collect(sub, ends_run)
    await settle()

    assert accepted.action == "wake"
    assert waits == [2.0, 2.0]
    assert [c["type"] for c in chunks].count("error") == 1
    assert [c["type"] for c in chunks].count("data-model-retry") == 3
    [error] = [c for c in chunks if c["type"] == "error"]
    assert error["payload"]["error"]["code"] == "model_unavailable"
    assert "sk-live-0123456789abcdef" not in json.dumps(chunks)
    stored = await thread_chunks("t2")
    assert [c["type"] for c in stored].count("error") == 1
    [run] = await runs()
    assert (run.status, run.error_code, run.step_models) == ("failed", "model_unavailable", [])
    assert run.error.startswith("no model could answer step 0: openai/gpt-test: openai API error (HTTP 429)")
    assert "sk-live-0123456789abcdef" not in run.error
    # the input is kept, then the one failure entry (no text posing as an answer: no parts, the
    # reason redacted, never shown to the model)
    assert await stored_roles("t2") == ["signal", "assistant"]
    failure = await sync_to_async(lambda: Message.objects.get(thread__thread_id="t2", role="assistant"))()
    assert failure.content["parts"] == [] and failure.content["metadata"]["error"]["code"] == "model_unavailable"
    assert "sk-live-0123456789abcdef" not in json.dumps(failure.content)

    # the providers are back: the thread answers the next message
    openai_server.reply(openai_text_reply(["hello again"]))
    await agent.send_message("still there?", resource_id="u1", thread_id="t2")
    chunks = await collect(sub, ends_run)
    await settle()
    assert "".join(c["payload"]["text"] for c in chunks if c["type"] == "text-delta") == "hello again"
    assert [r.status for r in await runs()] == ["failed", "completed"]
    assert await stored_roles("t2") == ["signal", "assistant", "signal", "assistant"]
    # and the next model call was not shown the failure entry
    assert [m["role"] for m in openai_server.requests[-1].body["messages"]].count("assistant") == 0
    sub.unsubscribe()


async def test_an_approved_tool_is_not_asked_again_nor_run_again_when_the_next_step_falls_back(waits, servers):
    openai_server, anthropic_server = servers
    ran = []
    refund = create_tool(id="refund", description="Refund an order", input_schema={"type": "object"},
                         require_approval=True, execute=lambda input: ran.append(input) or {"refunded": True})
    openai_server.reply(tool_call_reply("call_9", "refund", {"order": "C-3"}),
                        json_reply(401, {"error": {"message": "key revoked"}}))
    anthropic_server.reply(anthropic_text_reply(["refunded C-3"]))
    agent = Agent(id="fb", instructions="x", model=chain(servers, max_retries=3), tools={"refund": refund},
                  memory=Memory())

    first = await agent.generate("refund C-3", memory={"resource": "u1", "thread": "t3"})
    assert first.finish_reason == "suspended"
    output = await agent.approve_tool_call(run_id=first.run_id, tool_call_id="call_9")
    result = await bounded(output.get_full_output())

    assert result.text == "refunded C-3"
    assert ran == [{"order": "C-3"}]
    assert await sync_to_async(ToolApproval.objects.count)() == 1
    assert len(openai_server.requests) == 2  # the 401 is not retried
    assert waits == []
    [run] = await runs()
    assert (run.status, run.step_models) == ("completed", [PRIMARY, FALLBACK])
