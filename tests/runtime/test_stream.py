"""``stream()``: the AgentOutput handle and the exact chunk shapes of DESIGN §5."""

import asyncio

import pytest

from agents.runtime import Agent, AgentOutput, GenerateResult, create_tool
from agents.runtime.testing import ScriptedModel, text_step, tool_step


def agent_for(model, **kwargs):
    return Agent(id="a", instructions="x", model=model, **kwargs)


async def collect(output):
    return [c async for c in output.full_stream]


@pytest.mark.asyncio
async def test_stream_returns_an_agent_output_with_the_run_id():
    output = await agent_for(ScriptedModel([text_step("hi")])).stream("hello", run_id="r1")
    assert isinstance(output, AgentOutput)
    assert output.run_id == "r1"
    await output.consume_stream()


@pytest.mark.asyncio
async def test_full_stream_yields_the_exact_chunk_sequence():
    model = ScriptedModel([text_step("Hello there", deltas=["Hello", " there"], usage=(4, 2), response_id="resp-1")])
    chunks = await collect(await agent_for(model).stream("hi", run_id="r1"))
    text_id = chunks[3]["payload"]["id"]
    message_id = chunks[1]["payload"]["messageId"]
    assert [(c["type"], c["payload"]) for c in chunks if c["type"] != "response-metadata"] == [
        ("start", {}),
        ("step-start", {"messageId": message_id, "stepNumber": 0}),
        ("text-start", {"id": text_id}),
        ("text-delta", {"id": text_id, "text": "Hello"}),
        ("text-delta", {"id": text_id, "text": " there"}),
        ("text-end", {"id": text_id}),
        ("step-finish", {"stepResult": {"reason": "stop", "isContinued": False},
                         "output": {"usage": {"inputTokens": 4, "outputTokens": 2, "totalTokens": 6}},
                         "metadata": chunks[7]["payload"]["metadata"], "messageId": message_id}),
        ("finish", {"stepResult": {"reason": "stop"},
                    "output": {"usage": {"inputTokens": 4, "outputTokens": 2, "totalTokens": 6}},
                    "metadata": chunks[8]["payload"]["metadata"], "messageId": message_id}),
    ]
    assert chunks[2]["type"] == "response-metadata"


@pytest.mark.asyncio
async def test_step_finish_and_finish_metadata_carry_the_response_as_mastras_do():
    """Mastra's ``step-finish`` / ``finish`` metadata has the response's ``id``, ``timestamp`` and
    ``modelId`` at its top; this runtime's also keeps them under ``response``, and ``request``
    (empty: it would hold the system instructions). ``finish`` names the last step's message."""
    model = ScriptedModel([tool_step(("c1", "t", {}), response_id="resp-1"), text_step("ok", response_id="resp-2")])
    tool = create_tool(id="t", execute=lambda i: "r")
    output = await agent_for(model, tools={"t": tool}).stream("hi")
    chunks = await collect(output)
    result = await output.get_full_output()
    ends = [c["payload"] for c in chunks if c["type"] in ("step-finish", "finish")]
    responses = [step.response for step in result.steps]
    assert [sorted(p["metadata"]) for p in ends] == [["id", "modelId", "request", "response", "timestamp"]] * 3
    assert [(p["metadata"]["id"], p["metadata"]["modelId"], p["metadata"]["timestamp"]) for p in ends] == [
        ("resp-1", responses[0]["modelId"], responses[0]["timestamp"]),
        ("resp-2", responses[1]["modelId"], responses[1]["timestamp"]),
        ("resp-2", responses[1]["modelId"], responses[1]["timestamp"]),
    ]
    assert all(p["metadata"]["response"] == {k: p["metadata"][k] for k in ("id", "timestamp", "modelId")}
               and p["metadata"]["request"] == {} for p in ends)
    assert isinstance(ends[0]["metadata"]["timestamp"], str) and ends[0]["metadata"]["modelId"]
    answers = [m["id"] for m in result.messages if m["role"] == "assistant"]
    assert ends[-1]["messageId"] == answers[-1] == ends[1]["messageId"]


@pytest.mark.asyncio
async def test_a_steps_chunks_name_its_assistant_message():
    """``step-start`` and ``step-finish`` carry the same ``messageId``, as Mastra's: the id of the
    assistant message the step adds (one per step here), never the provider's response id."""
    model = ScriptedModel([tool_step(("c1", "t", {}), response_id="resp-1"), text_step("ok", response_id="resp-2")])
    tool = create_tool(id="t", execute=lambda i: "r")
    output = await agent_for(model, tools={"t": tool}).stream("hi")
    chunks = await collect(output)
    result = await output.get_full_output()
    started = [c["payload"]["messageId"] for c in chunks if c["type"] == "step-start"]
    finished = [c["payload"]["messageId"] for c in chunks if c["type"] == "step-finish"]
    answers = [m["id"] for m in result.messages if m["role"] == "assistant"]
    assert started == finished == answers
    assert len(set(answers)) == 2


@pytest.mark.asyncio
async def test_every_chunk_has_type_run_id_from_and_payload():
    chunks = await collect(await agent_for(ScriptedModel([text_step("hi")])).stream("hello", run_id="r1"))
    assert all(set(c) == {"type", "runId", "from", "payload"} for c in chunks)
    assert {(c["runId"], c["from"]) for c in chunks} == {("r1", "AGENT")}


@pytest.mark.asyncio
async def test_step_finish_and_finish_carry_usage_in_camel_case():
    model = ScriptedModel([tool_step(("c1", "t", {}), usage=(3, 1)), text_step("ok", usage=(5, 2))])
    tool = create_tool(id="t", execute=lambda i: "r")
    chunks = await collect(await agent_for(model, tools={"t": tool}).stream("hi"))
    finishes = [c["payload"] for c in chunks if c["type"] in ("step-finish", "finish")]
    assert [(p["stepResult"], p["output"]["usage"]) for p in finishes] == [
        ({"reason": "tool-calls", "isContinued": True}, {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4}),
        ({"reason": "stop", "isContinued": False}, {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7}),
        ({"reason": "stop"}, {"inputTokens": 8, "outputTokens": 3, "totalTokens": 11}),
    ]


@pytest.mark.asyncio
async def test_tool_chunks_have_the_mastra_payloads():
    model = ScriptedModel([tool_step(("c1", "t", {"q": 1})), text_step("ok")])
    tool = create_tool(id="t", execute=lambda i: {"answer": i["q"] + 1})
    chunks = await collect(await agent_for(model, tools={"t": tool}).stream("hi"))
    assert [c["payload"] for c in chunks if c["type"] in ("tool-call", "tool-result")] == [
        {"toolCallId": "c1", "toolName": "t", "args": {"q": 1}},
        {"toolCallId": "c1", "toolName": "t", "result": {"answer": 2}},
    ]


@pytest.mark.asyncio
async def test_reasoning_chunks_come_before_text_chunks():
    chunks = await collect(await agent_for(ScriptedModel([text_step("42", reasoning="Hmm.")])).stream("hi"))
    kinds = [c["type"] for c in chunks if c["type"].startswith(("reasoning", "text"))]
    assert kinds == ["reasoning-start", "reasoning-delta", "reasoning-end", "text-start", "text-delta", "text-end"]
    rid = chunks[[c["type"] for c in chunks].index("reasoning-start")]["payload"]["id"]
    assert [c["payload"] for c in chunks if c["type"] == "reasoning-delta"] == [{"id": rid, "text": "Hmm."}]


@pytest.mark.asyncio
async def test_two_readers_both_get_every_chunk():
    model = ScriptedModel([text_step("a b c", deltas=["a", " b", " c"], delay=0.01)])
    output = await agent_for(model).stream("hi")
    first, second = await asyncio.gather(collect(output), collect(output))
    assert first == second
    assert [c["type"] for c in first].count("text-delta") == 3
    assert first[-1]["type"] == "finish"


@pytest.mark.asyncio
async def test_a_late_reader_gets_the_whole_stream_from_the_start():
    output = await agent_for(ScriptedModel([text_step("hi")])).stream("hello")
    await output.consume_stream()
    chunks = await collect(output)
    assert chunks[0]["type"] == "start" and chunks[-1]["type"] == "finish"


@pytest.mark.asyncio
async def test_text_stream_yields_only_the_text_deltas():
    model = ScriptedModel([text_step("Hello world", deltas=["Hel", "lo ", "world"])])
    output = await agent_for(model).stream("hi")
    assert [t async for t in output.text_stream] == ["Hel", "lo ", "world"]


@pytest.mark.asyncio
async def test_text_stream_spans_all_steps():
    model = ScriptedModel([tool_step(("c1", "t", {}), text="Checking. "), text_step("Done.")])
    output = await agent_for(model, tools={"t": create_tool(id="t", execute=lambda i: 1)}).stream("hi")
    assert [t async for t in output.text_stream] == ["Checking. ", "Done."]


@pytest.mark.asyncio
async def test_consume_stream_waits_for_the_end_of_the_run():
    output = await agent_for(ScriptedModel([text_step("hi", delay=0.01)])).stream("hello")
    assert output.done is False
    await output.consume_stream()
    assert output.done is True
    assert output.result.text == "hi"


@pytest.mark.asyncio
async def test_get_full_output_returns_the_generate_result():
    model = ScriptedModel([text_step("full", usage=(2, 1))])
    output = await agent_for(model).stream("hi", run_id="r9")
    result = await output.get_full_output()
    assert isinstance(result, GenerateResult)
    assert (result.text, result.run_id, result.finish_reason, dict(result.usage)) == (
        "full", "r9", "stop", {"input_tokens": 2, "output_tokens": 1, "total_tokens": 3})


@pytest.mark.asyncio
async def test_get_text_returns_the_text():
    output = await agent_for(ScriptedModel([text_step("plain")])).stream("hi")
    assert await output.get_text() == "plain"


@pytest.mark.asyncio
async def test_awaiting_the_output_gives_the_result():
    output = await agent_for(ScriptedModel([text_step("awaited")])).stream("hi")
    assert (await output).text == "awaited"


@pytest.mark.asyncio
async def test_stream_on_chunk_sees_the_same_chunks_as_full_stream():
    seen = []
    output = await agent_for(ScriptedModel([text_step("hi")])).stream("hello", on_chunk=seen.append)
    assert await collect(output) == seen


@pytest.mark.asyncio
async def test_stream_and_generate_produce_the_same_result_fields():
    generated = await agent_for(ScriptedModel([text_step("same", usage=(1, 1))])).generate("hi", run_id="r")
    streamed = await (await agent_for(ScriptedModel([text_step("same", usage=(1, 1))])).stream("hi", run_id="r")).get_full_output()
    assert (streamed.text, streamed.finish_reason, streamed.usage, streamed.run_id) == (
        generated.text, generated.finish_reason, generated.usage, generated.run_id)


@pytest.mark.asyncio
async def test_stream_validates_options_before_returning():
    from agents.runtime import AgentConfigError

    with pytest.raises(AgentConfigError):
        await agent_for(ScriptedModel([])).stream("hi", bogus=True)


@pytest.mark.asyncio
async def test_model_error_in_a_stream_is_an_error_chunk_not_an_exception():
    from agents.runtime import ModelError

    output = await agent_for(ScriptedModel([ModelError("bad gateway", code="upstream", status=502)])).stream("hi")
    chunks = await collect(output)
    assert [c["type"] for c in chunks] == ["start", "step-start", "error", "finish"]
    assert chunks[2]["payload"] == {"error": {"message": "bad gateway", "code": "upstream", "status": 502}}
    assert (await output.get_full_output()).finish_reason == "error"
