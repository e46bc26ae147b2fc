"""The fields of ``GenerateResult`` / ``StepResult`` (Mastra's "Valeurs renvoyées")."""

import pytest

from agents.runtime import Agent, InMemoryMemory, ModelError, Usage, create_tool
from agents.runtime.testing import ScriptedModel, text_step, tool_step

LOOKUP = create_tool(id="lookup", input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
                     execute=lambda i: {"temp": 31, "city": i["city"]})


def two_step_model():
    return ScriptedModel([
        tool_step(("call-1", "lookup", {"city": "Lagos"}), usage=(10, 2), response_id="resp-1",
                  headers={"x-ratelimit-remaining-tokens": "999"}),
        text_step("It is 31 degrees.", deltas=["It is ", "31 degrees."], usage=(20, 6), response_id="resp-2",
                  headers={"x-request-id": "req-2"}, provider_metadata={"openai": {"cachedPromptTokens": 0}}),
    ])


#: what Mastra's answers name in ``content.metadata``: the model that answered their step (the
#: scripted model is ``test/scripted``)
SCRIPTED = {"modelId": "scripted", "provider": "test"}


async def generate(model=None, **options):
    model = model or two_step_model()
    agent = Agent(id="weather", instructions="x", model=model, tools={"lookup": LOOKUP})
    return await agent.generate("Weather in Lagos?", run_id="run-1", **options)


@pytest.mark.asyncio
async def test_text_is_the_last_steps_text():
    assert (await generate()).text == "It is 31 degrees."


@pytest.mark.asyncio
async def test_finish_reason_is_the_last_steps_reason():
    assert (await generate()).finish_reason == "stop"


@pytest.mark.asyncio
async def test_length_finish_reason_is_reported():
    result = await generate(ScriptedModel([text_step("cut", finish_reason="length")]))
    assert result.finish_reason == "length"


@pytest.mark.asyncio
async def test_tool_calls_are_chunks():
    assert (await generate()).tool_calls == [{
        "type": "tool-call", "runId": "run-1", "from": "AGENT",
        "payload": {"toolCallId": "call-1", "toolName": "lookup", "args": {"city": "Lagos"}}}]


@pytest.mark.asyncio
async def test_tool_results_are_chunks():
    assert (await generate()).tool_results == [{
        "type": "tool-result", "runId": "run-1", "from": "AGENT",
        "payload": {"toolCallId": "call-1", "toolName": "lookup", "result": {"temp": 31, "city": "Lagos"}}}]


@pytest.mark.asyncio
async def test_usage_is_summed_over_steps():
    result = await generate()
    assert result.usage == {"input_tokens": 30, "output_tokens": 8, "total_tokens": 38}
    assert isinstance(result.usage, Usage)
    assert result.total_usage == result.usage


@pytest.mark.asyncio
async def test_usage_has_attribute_and_key_access():
    usage = (await generate()).usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (30, 8, 38)
    assert (usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]) == (30, 8, 38)
    assert usage.reasoning_tokens is None and usage.cached_input_tokens is None


@pytest.mark.asyncio
async def test_usage_keeps_reasoning_and_cached_tokens_when_known():
    model = ScriptedModel([text_step("ok", usage={"input_tokens": 5, "output_tokens": 3, "reasoning_tokens": 2,
                                                  "cached_input_tokens": 4})])
    usage = (await generate(model)).usage
    assert usage == {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8, "reasoning_tokens": 2,
                     "cached_input_tokens": 4}
    assert usage.reasoning_tokens == 2


@pytest.mark.asyncio
async def test_steps_have_their_own_text_calls_results_reason_and_usage():
    steps = (await generate()).steps
    assert [s.step_number for s in steps] == [0, 1]
    assert [s.text for s in steps] == ["", "It is 31 degrees."]
    assert [[c["payload"]["toolCallId"] for c in s.tool_calls] for s in steps] == [["call-1"], []]
    assert [[r["payload"]["result"] for r in s.tool_results] for s in steps] == [[{"temp": 31, "city": "Lagos"}], []]
    assert [s.finish_reason for s in steps] == ["tool-calls", "stop"]
    assert [dict(s.usage) for s in steps] == [{"input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
                                              {"input_tokens": 20, "output_tokens": 6, "total_tokens": 26}]
    assert [s.is_continued for s in steps] == [True, False]


@pytest.mark.asyncio
async def test_step_response_has_id_model_id_and_headers():
    steps = (await generate()).steps
    r0, r1 = steps[0].response, steps[1].response
    assert (r0["id"], r0["modelId"], r0["headers"]) == ("resp-1", "scripted", {"x-ratelimit-remaining-tokens": "999"})
    assert (r1["id"], r1["modelId"], r1["headers"]) == ("resp-2", "scripted", {"x-request-id": "req-2"})
    assert isinstance(r0["timestamp"], str)
    assert [m["role"] for m in r0["messages"]] == ["assistant"]


@pytest.mark.asyncio
async def test_response_is_the_last_steps_response_with_every_answer_of_the_run():
    response = (await generate()).response
    assert (response["id"], response["modelId"], response["headers"]) == ("resp-2", "scripted", {"x-request-id": "req-2"})
    # Mastra's response.messages: every response message of the run, the tool call and its result included
    assert [(m["role"], m["content"]) for m in response["messages"]] == [
        ("assistant", [{"type": "tool-call", "toolCallId": "call-1", "toolName": "lookup", "args": {"city": "Lagos"}}]),
        ("tool", [{"type": "tool-result", "toolCallId": "call-1", "toolName": "lookup",
                   "result": {"temp": 31, "city": "Lagos"}}]),
        ("assistant", [{"type": "text", "text": "It is 31 degrees."}]),
    ]


@pytest.mark.asyncio
async def test_inputs_taken_in_during_the_run_are_not_answers():
    model = ScriptedModel([text_step("draft"), text_step("final")])
    agent = Agent(id="weather", instructions="x", model=model)
    result = await agent.generate("Weather?", on_iteration_complete=lambda ctx: (
        {"continue": True, "feedback": "shorter"} if ctx["iteration"] == 1 else None))
    assert [m["role"] for m in result.messages[-3:]] == ["assistant", "user", "assistant"]  # the feedback went in
    assert [(m["role"], m["content"]) for m in result.response["messages"]] == [
        ("assistant", [{"type": "text", "text": "draft"}]), ("assistant", [{"type": "text", "text": "final"}])]


@pytest.mark.asyncio
async def test_db_messages_are_the_answers_in_the_stored_format():
    result = await generate()
    first, second = (m for m in result.response["messages"] if m["role"] == "assistant")
    assert result.db_messages == [
        {"id": first["id"], "role": "assistant", "createdAt": first["createdAt"], "content": {"format": 2, "parts": [
            {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "call-1",
                                                           "toolName": "lookup", "args": {"city": "Lagos"},
                                                           "result": {"temp": 31, "city": "Lagos"}}}],
            "metadata": SCRIPTED}},
        {"id": second["id"], "role": "assistant", "createdAt": second["createdAt"], "content": {"format": 2, "parts": [
            {"type": "text", "text": "It is 31 degrees."}], "content": "It is 31 degrees.", "metadata": SCRIPTED}},
    ]


@pytest.mark.asyncio
async def test_ui_messages_are_the_answers_as_the_ai_sdks_ui_messages():
    result = await generate()
    first, second = (m for m in result.response["messages"] if m["role"] == "assistant")
    assert result.ui_messages == [
        {"id": first["id"], "role": "assistant", "metadata": {**SCRIPTED, "createdAt": first["createdAt"]}, "parts": [
            {"type": "tool-lookup", "toolCallId": "call-1", "input": {"city": "Lagos"},
             "output": {"temp": 31, "city": "Lagos"}, "state": "output-available"}]},
        {"id": second["id"], "role": "assistant", "metadata": {**SCRIPTED, "createdAt": second["createdAt"]}, "parts": [
            {"type": "text", "text": "It is 31 degrees."}]},
    ]


@pytest.mark.asyncio
async def test_the_wire_response_carries_ui_and_db_messages_as_mastras():
    result = await generate()
    response = result.to_dict()["response"]
    assert list(response) == ["id", "timestamp", "modelId", "headers", "messages", "uiMessages", "dbMessages"]
    assert response["uiMessages"] == result.ui_messages
    assert response["dbMessages"] == result.db_messages
    assert [m["role"] for m in response["messages"]] == ["assistant", "tool", "assistant"]


@pytest.mark.asyncio
async def test_a_run_on_a_memory_thread_names_the_thread_in_its_ui_and_db_messages():
    agent = Agent(id="weather", instructions="x", model=two_step_model(), tools={"lookup": LOOKUP},
                  memory=InMemoryMemory())
    result = await agent.generate("Weather in Lagos?", memory={"resource": "ann", "thread": "t-1"})
    assert [(m["threadId"], m["resourceId"]) for m in result.db_messages] == [("t-1", "ann")] * 2
    assert [(m["metadata"]["threadId"], m["metadata"]["resourceId"]) for m in result.ui_messages] == [("t-1", "ann")] * 2
    assert [m["id"] for m in result.ui_messages] == [m["id"] for m in result.db_messages]


@pytest.mark.asyncio
async def test_request_body_comes_from_the_request_event():
    model = ScriptedModel([[{"type": "request", "body": {"model": "m", "messages": []}},
                            {"type": "text-delta", "text": "ok"},
                            {"type": "finish", "finish_reason": "stop", "usage": None}]])
    result = await generate(model)
    assert result.request == {"body": {"model": "m", "messages": []}}
    assert result.steps[0].request == {"body": {"model": "m", "messages": []}}


@pytest.mark.asyncio
async def test_request_body_is_none_when_the_model_sends_none():
    assert (await generate()).steps[0].request == {"body": None}


@pytest.mark.asyncio
async def test_warnings_are_collected_from_all_steps():
    model = ScriptedModel([
        [{"type": "warning", "message": "topK is not supported"}, {"type": "tool-call", "tool_call_id": "c1",
         "tool_name": "lookup", "args_text": '{"city": "Abuja"}'}, {"type": "finish", "finish_reason": "tool-calls"}],
        [{"type": "warning", "message": "seed ignored"}, {"type": "text-delta", "text": "ok"},
         {"type": "finish", "finish_reason": "stop"}],
    ])
    result = await generate(model)
    assert result.warnings == [{"message": "topK is not supported"}, {"message": "seed ignored"}]
    assert result.steps[1].warnings == [{"message": "seed ignored"}]


@pytest.mark.asyncio
async def test_provider_metadata_comes_from_the_finish_event():
    assert (await generate()).provider_metadata == {"openai": {"cachedPromptTokens": 0}}


@pytest.mark.asyncio
async def test_reasoning_and_reasoning_text_come_from_reasoning_deltas():
    model = ScriptedModel([text_step("42", reasoning=["Think ", "hard."])])
    result = await generate(model)
    assert result.reasoning_text == "Think hard."
    assert result.reasoning == [{"type": "reasoning", "runId": "run-1", "from": "AGENT",
                                 "payload": {"text": "Think hard."}}]
    assert result.steps[0].reasoning_text == "Think hard."
    assert result.text == "42"


@pytest.mark.asyncio
async def test_reasoning_is_empty_without_reasoning_deltas():
    result = await generate()
    assert (result.reasoning, result.reasoning_text) == ([], "")


@pytest.mark.asyncio
async def test_sources_and_files_are_chunks():
    model = ScriptedModel([[
        {"type": "source", "id": "s1", "sourceType": "url", "url": "https://example.com", "title": "Example"},
        {"type": "file", "mimeType": "image/png", "data": "aGk="},
        {"type": "text-delta", "text": "see source"},
        {"type": "finish", "finish_reason": "stop"},
    ]])
    result = await generate(model)
    assert result.sources == [{"type": "source", "runId": "run-1", "from": "AGENT", "payload": {
        "id": "s1", "sourceType": "url", "url": "https://example.com", "title": "Example"}}]
    assert result.files == [{"type": "file", "runId": "run-1", "from": "AGENT",
                             "payload": {"mimeType": "image/png", "data": "aGk="}}]


@pytest.mark.asyncio
async def test_suspend_payload_is_none_for_a_finished_run():
    assert (await generate()).suspend_payload is None


@pytest.mark.asyncio
async def test_run_id_is_reported():
    assert (await generate()).run_id == "run-1"


@pytest.mark.asyncio
async def test_messages_are_input_then_response_messages():
    messages = (await generate()).messages
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[0]["content"] == "Weather in Lagos?"
    assert messages[1]["content"] == [{"type": "tool-call", "toolCallId": "call-1", "toolName": "lookup",
                                       "args": {"city": "Lagos"}}]
    assert messages[2]["content"] == [{"type": "tool-result", "toolCallId": "call-1", "toolName": "lookup",
                                       "result": {"temp": 31, "city": "Lagos"}}]
    assert messages[3]["content"] == [{"type": "text", "text": "It is 31 degrees."}]
    assert all(m["id"] and m["createdAt"] for m in messages)


@pytest.mark.asyncio
async def test_remembered_messages_are_only_the_history_from_memory():
    memory = InMemoryMemory()
    model = ScriptedModel([text_step("first answer"), text_step("second answer")])
    agent = Agent(id="a", instructions="x", model=model, memory=memory)
    first = await agent.generate("one", memory={"resource": "u1", "thread": "t1"})
    second = await agent.generate("two", memory={"resource": "u1", "thread": "t1"})
    assert first.remembered_messages == []
    assert [(m["role"], m["content"]) for m in second.remembered_messages] == [
        ("user", "one"), ("assistant", [{"type": "text", "text": "first answer"}])]
    assert [m["role"] for m in second.messages] == ["user", "assistant", "user", "assistant"]


@pytest.mark.asyncio
async def test_to_dict_gives_the_messages_as_mastras_db_messages():
    """On the wire, ``messages`` are Mastra's ``MastraDBMessage`` (as its server answers them): the
    stored format, a tool's result on the assistant message that called it; no thread without memory."""
    result = await generate()
    ids = [m["id"] for m in result.messages]
    at = [m["createdAt"] for m in result.messages]
    assert result.to_dict()["messages"] == [
        {"id": ids[0], "role": "user", "createdAt": at[0],
         "content": {"format": 2, "parts": [{"type": "text", "text": "Weather in Lagos?"}],
                     "content": "Weather in Lagos?"}},
        {"id": ids[1], "role": "assistant", "createdAt": at[1],
         "content": {"format": 2, "parts": [{"type": "tool-invocation", "toolInvocation": {
             "state": "result", "toolCallId": "call-1", "toolName": "lookup", "args": {"city": "Lagos"},
             "result": {"temp": 31, "city": "Lagos"}}}], "metadata": SCRIPTED}},
        {"id": ids[3], "role": "assistant", "createdAt": at[3],
         "content": {"format": 2, "parts": [{"type": "text", "text": "It is 31 degrees."}],
                     "content": "It is 31 degrees.", "metadata": SCRIPTED}},
    ]
    assert result.to_dict()["rememberedMessages"] == []
    assert result.messages[0]["content"] == "Weather in Lagos?"  # Python's stay the model's messages


@pytest.mark.asyncio
async def test_to_dict_gives_a_memory_threads_messages_as_its_store_holds_them():
    memory = InMemoryMemory()
    model = ScriptedModel([text_step("first answer"), text_step("second answer")])
    agent = Agent(id="a", instructions="x", model=model, memory=memory)
    await agent.generate("one", memory={"resource": "u1", "thread": "t1"})
    data = (await agent.generate("two", memory={"resource": "u1", "thread": "t1"})).to_dict()
    stored = (await memory.recall(resource_id="u1", thread_id="t1")).messages

    def shown(message, answered_here=False):
        """The store stamps an answer with its agent, run and model; the run's own answer names its
        model on the wire too."""
        content = {k: v for k, v in message["content"].items() if k != "metadata"}
        if answered_here:
            content["metadata"] = SCRIPTED
        return {**message, "content": content}

    assert [m["id"] for m in stored] == [m["id"] for m in data["messages"]]
    assert stored[3]["content"]["metadata"] == {"runId": data["runId"], "agentId": "a", **SCRIPTED}
    assert data["messages"] == [shown(m) for m in stored[:3]] + [shown(stored[3], answered_here=True)]
    assert data["rememberedMessages"] == data["messages"][:2]
    assert [(m["threadId"], m["resourceId"]) for m in data["messages"]] == [("t1", "u1")] * 4
    assert [m["content"]["parts"] for m in data["rememberedMessages"]] == [
        [{"type": "text", "text": "one"}], [{"type": "text", "text": "first answer"}]]


@pytest.mark.asyncio
async def test_error_is_none_for_a_finished_run():
    assert (await generate()).error is None


class BlockSecrets:
    id = "block-secrets"

    def process_output_stream(self, *, chunk, abort):
        if chunk["type"] == "text-delta" and "secret" in chunk["payload"]["text"]:
            abort("Leaked a secret", metadata={"word": "secret"})
        return chunk


@pytest.mark.asyncio
async def test_tripwire_is_set_when_an_output_processor_aborts():
    chunks = []
    model = ScriptedModel([text_step("the secret is 42")])
    agent = Agent(id="a", instructions="x", model=model, output_processors=[BlockSecrets()])
    result = await agent.generate("hi", on_chunk=chunks.append)
    assert result.tripwire == {"reason": "Leaked a secret", "retry": False, "metadata": {"word": "secret"},
                               "processorId": "block-secrets"}
    assert result.finish_reason == "other"
    assert result.error is None
    assert [c["payload"] for c in chunks if c["type"] == "tripwire"] == [
        {"reason": "Leaked a secret", "processorId": "block-secrets"}]
    assert "secret" not in "".join(c["payload"].get("text", "") for c in chunks if c["type"] == "text-delta")


class RejectResult:
    id = "judge"

    def process_output_result(self, *, messages, text, abort):
        abort("Off topic")


@pytest.mark.asyncio
async def test_tripwire_from_the_final_output_check():
    result = await Agent(id="a", instructions="x", model=ScriptedModel([text_step("football")]),
                         output_processors=[RejectResult()]).generate("hi")
    assert result.tripwire["reason"] == "Off topic"
    assert result.tripwire["processorId"] == "judge"


@pytest.mark.asyncio
async def test_tripwire_is_none_without_processors():
    assert (await generate()).tripwire is None


@pytest.mark.asyncio
async def test_to_dict_uses_camel_case_keys():
    data = (await generate()).to_dict()
    assert data["usedFallbackValue"] is False  # Mastra's full output has it on every run
    # Mastra's keys for a run that did not fail, trip or suspend, with no structured output and no
    # reasoning (the others are undefined there, and its JSON leaves them out); the provider's
    # metadata and the run's trace ids because this run has them
    assert set(data) == {"runId", "text", "usedFallbackValue", "toolCalls", "toolResults", "usage",
                         "totalUsage", "steps", "finishReason", "response", "request", "warnings", "providerMetadata",
                         "reasoning", "sources", "files", "messages", "rememberedMessages", "traceId", "spanId"}
    assert data["usage"] == {"inputTokens": 30, "outputTokens": 8, "totalTokens": 38}
    assert data["finishReason"] == "stop"
    assert set(data["steps"][0]) == {"stepNumber", "stepType", "content", "text", "reasoning", "reasoningText",
                                     "toolCalls", "toolResults", "staticToolCalls", "dynamicToolCalls",
                                     "staticToolResults", "dynamicToolResults", "finishReason", "usage", "request",
                                     "response", "warnings", "sources", "files", "isContinued",
                                     "model", "attempts"}
    assert data["steps"][1]["providerMetadata"] == {"openai": {"cachedPromptTokens": 0}}
    assert data["steps"][1]["usage"] == {"inputTokens": 20, "outputTokens": 6, "totalTokens": 26}


@pytest.mark.asyncio
async def test_to_dict_leaves_out_what_the_run_does_not_have_as_mastras_server():
    """Mastra's full output holds ``undefined`` for what a run does not have, and its server's JSON
    drops those keys: a client reading ``"error" in result`` or ``result.object !== undefined``
    reads the same here."""
    data = (await generate(ScriptedModel([text_step("Hi.")]))).to_dict()
    for key in ("object", "error", "tripwire", "suspendPayload", "resumeSchema", "reasoningText",
                "providerMetadata"):
        assert key not in data, key
    step = data["steps"][0]
    assert "providerMetadata" not in step and step["reasoningText"] == ""  # a step's is "", as Mastra's
    # the provider's request body and response headers are kept only when asked
    # (MASTRA_KEEP_PROVIDER_PAYLOADS): Mastra's request is then {} and its response has no headers
    assert data["request"] == {} and step["request"] == {}
    assert "headers" not in data["response"] and "headers" not in step["response"]

    reasoned = (await generate(ScriptedModel([text_step("Done.", reasoning="think")]))).to_dict()
    assert reasoned["reasoningText"] == "think"
    failed = (await generate(ScriptedModel([ModelError("down", code="model_error")]))).to_dict()
    assert failed["error"] == {"message": "down", "code": "model_error"}


@pytest.mark.asyncio
async def test_steps_carry_mastras_step_type_and_content():
    """As Mastra 1.71's server answers ``calc`` (a tool step, then text): ``stepType`` ``initial``
    then ``tool-result``; ``content`` the AI SDK's model content, a tool call's ``input`` and its
    result's ``output``; the static / dynamic splits empty."""
    result = await generate()
    first, second = result.steps
    assert (first.step_type, second.step_type) == ("initial", "tool-result")
    assert first.content == [
        {"type": "tool-call", "toolCallId": "call-1", "toolName": "lookup", "input": {"city": "Lagos"}},
        {"type": "tool-result", "toolCallId": "call-1", "toolName": "lookup", "input": {"city": "Lagos"},
         "output": {"type": "json", "value": {"temp": 31, "city": "Lagos"}}}]
    assert second.content == [{"type": "text", "text": "It is 31 degrees."}]
    wire = result.to_dict()["steps"]
    assert [(s["stepType"], s["content"]) for s in wire] == [("initial", first.content),
                                                             ("tool-result", second.content)]
    assert {k: wire[0][k] for k in ("staticToolCalls", "dynamicToolCalls", "staticToolResults",
                                    "dynamicToolResults")} == dict.fromkeys(
        ("staticToolCalls", "dynamicToolCalls", "staticToolResults", "dynamicToolResults"), [])


@pytest.mark.asyncio
async def test_step_content_holds_reasoning_text_and_failed_tool_results():
    def fail(_):
        raise RuntimeError("lookup down")

    broken = create_tool(id="lookup", input_schema={"type": "object"}, execute=fail)
    text = create_tool(id="note", input_schema={"type": "object"}, execute=lambda i: "noted")
    model = ScriptedModel([tool_step(("c1", "lookup", {}), ("c2", "note", {"n": 1}), text="Checking."),
                           text_step("Done.", reasoning="think")])
    agent = Agent(id="a", instructions="x", model=model, tools={"lookup": broken, "note": text})
    first, second = (await agent.generate("go")).steps
    assert [p["type"] for p in first.content] == ["text", "tool-call", "tool-call", "tool-result", "tool-result"]
    assert first.content[0] == {"type": "text", "text": "Checking."}
    results = {p["toolCallId"]: p for p in first.content if p["type"] == "tool-result"}
    assert results["c1"]["output"]["type"] == "error-json" and results["c1"]["input"] == {}
    assert results["c2"]["output"] == {"type": "text", "value": "noted"} and results["c2"]["input"] == {"n": 1}
    assert second.content == [{"type": "reasoning", "text": "think"}, {"type": "text", "text": "Done."}]


@pytest.mark.asyncio
async def test_to_dict_is_json_serialisable():
    import json

    json.dumps((await generate()).to_dict())


@pytest.mark.asyncio
async def test_to_dict_reports_an_error_with_its_code():
    data = (await generate(ScriptedModel([ModelError("rate limited", code="rate_limited", status=429)]))).to_dict()
    assert data["error"] == {"message": "rate limited", "code": "rate_limited"}
    assert data["finishReason"] == "error"


@pytest.mark.asyncio
async def test_the_result_is_the_same_whether_or_not_anyone_reads_the_chunks():
    """Without ``on_chunk`` nobody sees a ``generate``'s chunks and the run makes none; its result
    (steps, tool calls and results, text, usage, response, messages) is the one a run whose chunks
    are read returns."""
    chunks: list[dict] = []
    read = (await generate(on_chunk=chunks.append)).to_dict()
    unread = (await generate()).to_dict()
    assert [c["type"] for c in chunks] == [
        "start", "step-start", "response-metadata", "tool-call", "tool-result", "step-finish",
        "step-start", "response-metadata", "text-start", "text-delta", "text-delta", "text-end", "step-finish",
        "finish"]

    def without_times(value):
        if isinstance(value, dict):
            return {k: without_times(v) for k, v in value.items() if k not in ("createdAt", "timestamp", "id", "traceId", "spanId")}
        if isinstance(value, list):
            return [without_times(v) for v in value]
        return value

    assert without_times(unread) == without_times(read)
    assert [c["payload"]["toolName"] for c in unread["toolCalls"]] == ["lookup"]
    assert unread["steps"][0]["toolResults"][0]["payload"]["result"] == {"temp": 31, "city": "Lagos"}
    assert unread["text"] == "It is 31 degrees."
