"""Model fallback chains, retries and circuit breakers, at the wire.

The real ``openai`` and ``anthropic`` SDKs make every request; two local servers speak their
streaming formats and answer with scripted failures (429 with ``Retry-After``, 503, 500, 401, a
stream cut mid-answer, a stalled stream). The waits go through an injected ``sleep`` and the
breakers read an injected clock, so the tests see every wait without waiting it.
"""

from __future__ import annotations

import json

import pytest

from agents.runtime import Agent, InMemoryMemory, create_tool
from agents.runtime.errors import AgentConfigError
from agents.runtime.providers.breaker import breakers_snapshot
from agents.runtime.providers.resilience import configure_resilience
from agents.runtime.stored_messages import to_model_messages
from tests.runtime.providers.wire import (Reply, WireServer, anthropic_message_end, anthropic_message_start,
                                          anthropic_sse, anthropic_text_block, anthropic_text_reply, isolate_env,
                                          json_reply, openai_chunk, openai_sse, openai_text_reply,
                                          openai_tool_call_delta)

PRIMARY = "openai/gpt-test"
FALLBACK = "anthropic/claude-test"


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    isolate_env(monkeypatch)


class Clock:
    """An injected clock and sleep: ``sleep`` records each wait and moves the clock by it."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(round(seconds, 3))
        self.now += seconds


@pytest.fixture
def clock():
    clock = Clock()
    configure_resilience(sleep=clock.sleep, clock=clock, random=lambda: 0.5, retry_base_s=1.0, retry_factor=2.0,
                         retry_max_s=30.0, retry_after_max_s=30.0, breaker_failures=5, breaker_cooldown_s=60.0)
    return clock


@pytest.fixture
def openai_server():
    with WireServer() as srv:
        yield srv


@pytest.fixture
def anthropic_server():
    with WireServer() as srv:
        yield srv


def primary(server: WireServer, **entry) -> dict:
    return {"model": {"id": PRIMARY, "url": server.url + "/v1", "api_key": "sk-test"}, **entry}


def fallback(server: WireServer, **entry) -> dict:
    return {"model": {"id": FALLBACK, "url": server.url, "api_key": "sk-ant-test"}, **entry}


def error(status: int, message: str, headers: dict | None = None) -> Reply:
    return json_reply(status, {"error": {"message": message, "type": "error"}}, headers=headers)


def tool_call_reply(call_id: str, name: str, args: dict) -> Reply:
    return openai_sse([openai_chunk({"role": "assistant", "content": None}),
                       openai_chunk(openai_tool_call_delta(0, id=call_id, name=name, arguments=json.dumps(args))),
                       openai_chunk({}, finish_reason="tool_calls"),
                       openai_chunk(choices=False, usage={"prompt_tokens": 5, "completion_tokens": 2,
                                                          "total_tokens": 7})])


def counting_tool(log: list):
    return create_tool(id="lookup", description="Look up an order",
                       input_schema={"type": "object", "properties": {"order": {"type": "string"}}},
                       execute=lambda input: log.append(input["order"]) or {"status": "shipped"})


@pytest.mark.asyncio
async def test_a_429_is_retried_on_the_same_model_after_the_retry_after_it_asked(clock, openai_server,
                                                                                  anthropic_server):
    openai_server.reply(error(429, "rate limited", {"retry-after": "7"}), openai_text_reply(["fine"]))
    agent = Agent(id="a", instructions="x", model=[primary(openai_server, max_retries=2), fallback(anthropic_server)])

    result = await agent.generate("hi")

    assert result.error is None
    assert result.text == "fine"
    assert result.models == [PRIMARY]
    assert clock.waits == [7.0]
    assert len(openai_server.requests) == 2
    assert anthropic_server.requests == []
    assert result.steps[0].attempts == [{"model": PRIMARY, "code": "provider_http_error", "status": 429,
                                         "message": "openai API error (HTTP 429) for model 'gpt-test': rate limited",
                                         "retryAfterMs": 7000, "delayMs": 7000}]


@pytest.mark.asyncio
async def test_503s_back_off_exponentially_then_the_next_model_answers(clock, openai_server, anthropic_server):
    openai_server.reply(error(503, "overloaded"))
    anthropic_server.reply(anthropic_text_reply(["from ", "claude"]))
    agent = Agent(id="a", instructions="x", model=[primary(openai_server, max_retries=3), fallback(anthropic_server)])

    result = await agent.generate("hi")

    assert result.text == "from claude"
    assert result.models == [FALLBACK]
    # base 1 s × 2^n, half fixed and half random (random() = 0.5): 0.75, 1.5, 3
    assert clock.waits == [0.75, 1.5, 3.0]
    assert len(openai_server.requests) == 4
    assert len(anthropic_server.requests) == 1
    assert [(a["model"], a["status"], a["delayMs"]) for a in result.steps[0].attempts] == [
        (PRIMARY, 503, 750), (PRIMARY, 503, 1500), (PRIMARY, 503, 3000), (PRIMARY, 503, None)]


@pytest.mark.asyncio
@pytest.mark.parametrize("status,message", [(401, "invalid api key"), (400, "invalid request: bad schema"),
                                            (400, "This model's maximum context length is 8192 tokens")])
async def test_errors_retrying_cannot_fix_go_to_the_next_model_at_once(clock, openai_server, anthropic_server,
                                                                        status, message):
    openai_server.reply(error(status, message))
    anthropic_server.reply(anthropic_text_reply(["ok"]))
    agent = Agent(id="a", instructions="x", model=[primary(openai_server, max_retries=5), fallback(anthropic_server)])

    result = await agent.generate("hi")

    assert result.text == "ok"
    assert result.models == [FALLBACK]
    assert len(openai_server.requests) == 1
    assert clock.waits == []


@pytest.mark.asyncio
async def test_a_retry_after_beyond_the_cap_goes_to_the_next_model_without_waiting(clock, openai_server,
                                                                                    anthropic_server):
    configure_resilience(retry_after_max_s=10.0)
    openai_server.reply(error(429, "come back in a while", {"retry-after-ms": "120000"}))
    anthropic_server.reply(anthropic_text_reply(["ok"]))
    agent = Agent(id="a", instructions="x", model=[primary(openai_server, max_retries=2), fallback(anthropic_server)])

    result = await agent.generate("hi")

    assert result.models == [FALLBACK]
    assert clock.waits == []
    assert len(openai_server.requests) == 1


@pytest.mark.asyncio
async def test_a_retry_after_beyond_the_cap_waits_the_cap_when_no_model_is_left(clock, openai_server):
    configure_resilience(retry_after_max_s=10.0)
    openai_server.reply(error(429, "come back later", {"retry-after": "120"}), openai_text_reply(["ok"]))
    agent = Agent(id="a", instructions="x", model=[primary(openai_server, max_retries=1)])

    result = await agent.generate("hi")

    assert result.text == "ok"
    assert clock.waits == [10.0]


@pytest.mark.asyncio
async def test_a_step_that_fails_after_a_tool_ran_is_answered_by_the_next_model_with_the_tool_result(
        clock, openai_server, anthropic_server):
    ran: list[str] = []
    openai_server.reply(tool_call_reply("call_1", "lookup", {"order": "A-7"}), error(500, "internal error"))
    anthropic_server.reply(anthropic_text_reply(["A-7 has shipped"]))
    agent = Agent(id="a", instructions="x", tools={"lookup": counting_tool(ran)},
                  model=[primary(openai_server, max_retries=1), fallback(anthropic_server)])

    result = await agent.generate("where is A-7?", max_steps=3)

    assert result.error is None
    assert result.text == "A-7 has shipped"
    assert ran == ["A-7"]  # the tool ran once, before the failure; the fallback did not run it again
    assert result.models == [PRIMARY, FALLBACK]
    assert clock.waits == [0.75]
    assert len(openai_server.requests) == 3
    [asked] = anthropic_server.bodies
    assert asked["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "where is A-7?"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "lookup",
                                           "input": {"order": "A-7"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
                                      "content": '{"status": "shipped"}'}]},
    ]


@pytest.mark.asyncio
async def test_each_stored_answer_names_the_model_that_answered_its_step(clock, openai_server, anthropic_server):
    """As Mastra's answers do (``content.metadata``: ``modelId``, ``provider``), per step: the
    thread shows which model of the chain wrote what."""
    openai_server.reply(tool_call_reply("call_1", "lookup", {"order": "A-7"}), error(500, "internal error"))
    anthropic_server.reply(anthropic_text_reply(["A-7 has shipped"]))
    memory = InMemoryMemory()
    agent = Agent(id="a", instructions="x", tools={"lookup": counting_tool([])}, memory=memory,
                  model=[primary(openai_server, max_retries=1), fallback(anthropic_server)])

    result = await agent.generate("where is A-7?", max_steps=3, memory={"resource": "r", "thread": "t"})

    stored = await memory.store.list_messages(resource_id="r", thread_id="t")
    assert [(m["role"], m["content"].get("metadata"), m["content"].get("content")) for m in stored] == [
        ("user", None, "where is A-7?"),
        ("assistant", {"runId": result.run_id, "agentId": "a", "modelId": "gpt-test", "provider": "openai"}, None),
        ("assistant", {"runId": result.run_id, "agentId": "a", "modelId": "claude-test", "provider": "anthropic"},
         "A-7 has shipped"),
    ]
    # what the next step is shown: the answers without the names of their agent, run and model
    shown = [m.get("metadata") for m in to_model_messages(stored)]
    assert shown == [None, None, None, None]


@pytest.mark.asyncio
async def test_the_run_stays_on_its_fallback_for_the_next_steps(clock, openai_server, anthropic_server):
    ran: list[str] = []
    openai_server.reply(error(503, "down"))
    anthropic_server.reply(
        anthropic_sse([anthropic_message_start(), {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta",
                                                                 "partial_json": '{"order": "B-1"}'}},
            {"type": "content_block_stop", "index": 0}, *anthropic_message_end("tool_use")]),
        anthropic_text_reply(["B-1 is late"]))
    agent = Agent(id="a", instructions="x", tools={"lookup": counting_tool(ran)},
                  model=[primary(openai_server), fallback(anthropic_server)])

    result = await agent.generate("B-1?", max_steps=3)

    assert result.text == "B-1 is late"
    assert result.models == [FALLBACK, FALLBACK]
    assert ran == ["B-1"]
    assert len(openai_server.requests) == 1  # step 2 starts at the model that answered step 1


@pytest.mark.asyncio
async def test_a_stream_cut_mid_answer_is_discarded_and_the_next_model_answers(clock, openai_server,
                                                                                anthropic_server):
    openai_server.reply(openai_sse([openai_chunk({"role": "assistant", "content": ""}),
                                    openai_chunk({"content": "half an ans"})], done=False, cut=True))
    anthropic_server.reply(anthropic_text_reply(["a whole answer"]))
    agent = Agent(id="a", instructions="x", model=[primary(openai_server), fallback(anthropic_server)])
    chunks: list[dict] = []

    result = await agent.generate("hi", on_chunk=chunks.append)

    assert result.text == "a whole answer"
    assert [m["content"] for m in result.messages if m["role"] == "assistant"] == [
        [{"type": "text", "text": "a whole answer"}]]
    kinds = [c["type"] for c in chunks]
    assert kinds == ["start", "step-start", "response-metadata", "text-start", "text-delta", "text-end",
                     "data-model-retry", "response-metadata", "text-start", "text-delta", "text-end",
                     "step-finish", "finish"]
    first_text = chunks[3]["payload"]["id"]
    retry = chunks[6]
    assert retry["transient"] is True
    assert retry["data"]["model"] == PRIMARY
    assert retry["data"]["code"] == "provider_connection_error"
    assert retry["data"]["next"] == FALLBACK
    assert retry["data"]["discarded"] == [first_text]
    assert retry["data"]["messageId"] == chunks[1]["payload"]["messageId"]


@pytest.mark.asyncio
async def test_a_stalled_stream_times_out_and_is_retried(clock, openai_server):
    openai_server.reply(openai_sse([openai_chunk({"role": "assistant", "content": ""})], done=False, stall=5),
                        openai_text_reply(["awake"]))
    model = {"model": {"id": PRIMARY, "url": openai_server.url + "/v1", "api_key": "sk-test", "timeout": 0.3},
             "max_retries": 1}
    agent = Agent(id="a", instructions="x", model=[model])

    result = await agent.generate("hi")

    assert result.text == "awake"
    assert result.steps[0].attempts[0]["code"] == "provider_connection_error"
    assert len(openai_server.requests) == 2


@pytest.mark.asyncio
async def test_when_every_model_fails_the_run_fails_once_with_a_stable_code_and_the_redacted_reason(
        clock, openai_server, anthropic_server):
    openai_server.reply(error(401, "Incorrect API key provided: sk-proj-abcdefghijklmnop1234"))
    anthropic_server.reply(json_reply(529, {"type": "error", "error": {"type": "overloaded_error",
                                                                        "message": "Overloaded"}}))
    agent = Agent(id="a", instructions="x", model=[primary(openai_server, max_retries=2),
                                                   fallback(anthropic_server, max_retries=1)])
    chunks: list[dict] = []

    result = await agent.generate("hi", on_chunk=chunks.append)

    assert result.finish_reason == "error"
    assert result.error.code == "model_unavailable"
    assert "sk-proj-abcdefghijklmnop1234" not in result.error.message
    assert result.error.message.startswith("no model could answer step 0: openai/gpt-test: openai API error "
                                           "(HTTP 401) for model 'gpt-test': Incorrect API key provided: ")
    assert result.error.message.endswith("anthropic/claude-test: anthropic API error (HTTP 529) for model "
                                         "'claude-test': Overloaded")
    assert [(a["model"], a["status"]) for a in result.error.details["attempts"]] == [
        (PRIMARY, 401), (FALLBACK, 529), (FALLBACK, 529)]
    assert [c["type"] for c in chunks].count("error") == 1
    assert [c["payload"]["error"]["code"] for c in chunks if c["type"] == "error"] == ["model_unavailable"]
    assert [c["type"] for c in chunks].count("data-model-retry") == 2


@pytest.mark.asyncio
async def test_a_disabled_entry_is_skipped(clock, openai_server, anthropic_server):
    anthropic_server.reply(anthropic_text_reply(["ok"]))
    agent = Agent(id="a", instructions="x", model=[primary(openai_server, enabled=False), fallback(anthropic_server)])

    result = await agent.generate("hi")

    assert result.models == [FALLBACK]
    assert openai_server.requests == []


@pytest.mark.asyncio
async def test_the_breaker_opens_after_consecutive_failures_and_skips_the_model_until_its_cool_down(
        clock, openai_server, anthropic_server):
    configure_resilience(breaker_failures=3, breaker_cooldown_s=60.0)
    openai_server.reply(error(503, "outage"))
    anthropic_server.reply(anthropic_text_reply(["fallback"]))
    agent = Agent(id="a", instructions="x", model=[primary(openai_server, max_retries=1), fallback(anthropic_server)])

    first = await agent.generate("one")  # 2 failures (1 + 1 retry)
    second = await agent.generate("two")  # the 3rd failure opens the breaker
    assert (first.models, second.models) == ([FALLBACK], [FALLBACK])
    assert len(openai_server.requests) == 3
    [breaker] = breakers_snapshot()
    assert (breaker["key"], breaker["state"], breaker["failures"], breaker["reopens_in_s"]) == (
        PRIMARY, "open", 3, 60.0)

    third = await agent.generate("three")
    assert third.models == [FALLBACK]
    assert len(openai_server.requests) == 3  # skipped: no request, no wait
    assert third.steps[0].attempts == [{"model": PRIMARY, "code": "circuit_open", "status": None,
                                        "message": "openai/gpt-test is skipped: its circuit breaker is open",
                                        "delayMs": None}]

    clock.now += 61  # cool-down over: one trial call goes through, and succeeds
    openai_server.reply(openai_text_reply(["back"]))
    fourth = await agent.generate("four")
    assert fourth.models == [PRIMARY]
    assert breakers_snapshot() == []


@pytest.mark.asyncio
async def test_a_run_whose_only_model_is_behind_an_open_breaker_fails_at_once(clock, openai_server):
    configure_resilience(breaker_failures=1, breaker_cooldown_s=60.0)
    openai_server.reply(error(503, "outage"))
    agent = Agent(id="a", instructions="x", model=[primary(openai_server)])

    await agent.generate("one")
    result = await agent.generate("two")

    assert result.error.code == "model_circuit_open"
    assert len(openai_server.requests) == 1


@pytest.mark.asyncio
async def test_a_call_may_pass_its_own_chain(clock, openai_server, anthropic_server):
    openai_server.reply(error(500, "boom"))
    anthropic_server.reply(anthropic_text_reply(["ok"]))
    agent = Agent(id="a", instructions="x", model="local/echo",
                  default_options={"model": [primary(openai_server), fallback(anthropic_server)]})

    assert (await agent.generate("hi")).models == [FALLBACK]
    assert (await agent.generate("hi", model="local/echo")).models == ["local/echo"]


def test_a_chain_is_checked_when_the_agent_is_built():
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model=[])
    assert info.value.field == "model"
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model=[{"model": "nope/x"}])
    assert info.value.field == "model[0].model.id" or info.value.field == "model[0].model"
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model=[{"model": "local/echo", "retries": 1}])
    assert info.value.field == "model[0].retries"
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model=[{"model": "local/echo", "enabled": False}])
    assert info.value.problem == "every entry of the model chain is disabled (enabled: False)"
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model="local/echo", default_options={"model": [{"model": "local/echo",
                                                                                        "maxRetries": -1}]})
    assert info.value.field == "default_options.model[0].max_retries"
