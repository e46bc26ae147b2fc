"""agents.runtime.testing: the scripted model users write their agent tests with."""

import asyncio
import json

import pytest

from agents.runtime import Agent, ModelError
from agents.runtime.providers.base import LanguageModel, ModelRequest
from agents.runtime.testing import ScriptedModel, ScriptedStep, hang_step, make_usage, text_step, tool_step


async def play(model, request=None):
    return [e async for e in model.stream(request or ModelRequest(messages=[{"role": "user", "content": "hi"}]))]


def test_scripted_model_is_a_language_model():
    model = ScriptedModel([])
    assert isinstance(model, LanguageModel)
    assert (model.provider, model.model_id) == ("test", "scripted")


def test_provider_and_model_id_can_be_set():
    model = ScriptedModel([], provider="openai", model_id="gpt-test")
    assert (model.provider, model.model_id) == ("openai", "gpt-test")


def test_text_step_events():
    step = text_step("Hello", deltas=["He", "llo"], usage=(3, 2), response_id="r1", headers={"x": "1"})
    assert isinstance(step, ScriptedStep)
    assert step.events == [
        {"type": "response-metadata", "id": "r1", "model_id": None, "timestamp": None, "headers": {"x": "1"}},
        {"type": "text-delta", "text": "He"},
        {"type": "text-delta", "text": "llo"},
        {"type": "finish", "finish_reason": "stop", "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
         "provider_metadata": {}},
    ]


def test_text_step_deltas_must_join_to_the_text():
    with pytest.raises(ValueError):
        text_step("Hello", deltas=["Hel"])


def test_empty_text_step_sends_no_delta():
    assert [e["type"] for e in text_step("").events] == ["response-metadata", "finish"]


def test_tool_step_events_carry_json_args_text():
    step = tool_step(("c1", "add", {"a": 1}), ("c2", "raw", '{"broken"'), usage={"inputTokens": 4})
    assert step.events[1:] == [
        {"type": "tool-call", "tool_call_id": "c1", "tool_name": "add", "args_text": json.dumps({"a": 1})},
        {"type": "tool-call", "tool_call_id": "c2", "tool_name": "raw", "args_text": '{"broken"'},
        {"type": "finish", "finish_reason": "tool-calls",
         "usage": {"input_tokens": 4, "output_tokens": 0, "total_tokens": 4}, "provider_metadata": {}},
    ]


def test_tool_step_needs_well_formed_calls():
    with pytest.raises(ValueError):
        tool_step()
    with pytest.raises(ValueError):
        tool_step(("c1", "add"))


def test_make_usage_forms():
    assert make_usage() == {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    assert make_usage((1, 2)) == {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
    assert make_usage({"input_tokens": 1, "total_tokens": 10}) == {"input_tokens": 1, "output_tokens": 0,
                                                                   "total_tokens": 10}


@pytest.mark.asyncio
async def test_requests_are_recorded():
    model = ScriptedModel([text_step("a"), text_step("b")])
    first = ModelRequest(messages=[{"role": "user", "content": "1"}])
    second = ModelRequest(messages=[{"role": "user", "content": "2"}])
    await play(model, first)
    await play(model, second)
    assert model.requests == [first, second]
    assert model.calls == 2
    model.assert_done()


@pytest.mark.asyncio
async def test_response_ids_default_to_model_id_and_call_number():
    model = ScriptedModel([text_step("a"), text_step("b")], model_id="m")
    assert (await play(model))[0]["id"] == "m-1"
    assert (await play(model))[0]["id"] == "m-2"


@pytest.mark.asyncio
async def test_raw_event_lists_are_played_as_given():
    events = [{"type": "text-delta", "text": "x"}, {"type": "finish", "finish_reason": "stop"}]
    assert await play(ScriptedModel([events])) == events


@pytest.mark.asyncio
async def test_sync_callable_step_gets_the_request():
    seen = []

    def step(request):
        seen.append(request.messages[-1]["content"])
        return text_step("answer to " + request.messages[-1]["content"])

    model = ScriptedModel([step])
    events = await play(model, ModelRequest(messages=[{"role": "user", "content": "q"}]))
    assert seen == ["q"]
    assert events[1] == {"type": "text-delta", "text": "answer to q"}


@pytest.mark.asyncio
async def test_async_callable_step_is_awaited():
    async def step(request):
        await asyncio.sleep(0)
        return [{"type": "finish", "finish_reason": "length"}]

    assert await play(ScriptedModel([step])) == [{"type": "finish", "finish_reason": "length"}]


@pytest.mark.asyncio
async def test_exception_step_is_raised():
    with pytest.raises(ModelError, match="overloaded"):
        await play(ScriptedModel([ModelError("overloaded")]))


@pytest.mark.asyncio
async def test_running_out_of_steps_raises_assertion_error():
    model = ScriptedModel([text_step("only one")])
    await play(model)
    with pytest.raises(AssertionError, match=r"ran out of steps: call 2 but only 1 step\(s\) were scripted"):
        await play(model)


@pytest.mark.asyncio
async def test_running_out_of_steps_in_an_agent_is_the_runs_error():
    result = await Agent(id="a", instructions="x", model=ScriptedModel([])).generate("hi")
    assert result.finish_reason == "error"
    assert isinstance(result.error, AssertionError)
    assert "ran out of steps" in str(result.error)


def test_assert_done_fails_when_steps_are_left():
    with pytest.raises(AssertionError, match="1 scripted step"):
        ScriptedModel([text_step("unused")]).assert_done()


@pytest.mark.asyncio
async def test_add_appends_steps():
    model = ScriptedModel([])
    model.add(text_step("later"))
    assert model.remaining == 1
    assert (await play(model))[1]["text"] == "later"


@pytest.mark.asyncio
async def test_delay_is_slept_before_each_event():
    loop = asyncio.get_running_loop()
    start = loop.time()
    await play(ScriptedModel([text_step("ab", deltas=["a", "b"], delay=0.02)]))
    assert loop.time() - start >= 0.07  # 4 events x 0.02 s


@pytest.mark.asyncio
async def test_hang_step_never_finishes():
    model = ScriptedModel([hang_step()])
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(play(model), timeout=0.05)


@pytest.mark.asyncio
async def test_text_step_with_hang_sends_its_deltas_then_waits():
    model = ScriptedModel([text_step("partial", hang=True)])
    seen = []

    async def read():
        async for event in model.stream(ModelRequest(messages=[])):
            seen.append(event["type"])

    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(read(), timeout=0.05)
    assert seen == ["response-metadata", "text-delta"]
