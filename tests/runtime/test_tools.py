"""create_tool: schemas, execute forms, and every way a tool call can fail (the model sees it)."""

import asyncio
import json

import pydantic
import pytest

from agents.runtime import Agent, AgentConfigError, ToolContext, create_tool
from agents.runtime.testing import ScriptedModel, text_step, tool_step

ADD_SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
              "required": ["a", "b"]}


def tool_message(request):
    """The tool-result parts of the last tool message the model received."""
    return [m for m in request.messages if m["role"] == "tool"][-1]["content"]


async def run_one_call(tool, args, *, name="add", **options):
    model = ScriptedModel([tool_step(("c1", name, args)), text_step("done")])
    agent = Agent(id="a", instructions="x", model=model, tools={"add": tool})
    chunks = []
    result = await agent.generate("go", on_chunk=chunks.append, **options)
    return result, model, chunks


# -- schemas and execute forms ---------------------------------------------------------------

@pytest.mark.asyncio
async def test_json_schema_tool_receives_the_args_dict():
    seen = []
    tool = create_tool(id="add", input_schema=ADD_SCHEMA, execute=lambda input, ctx: seen.append(input) or input["a"] + input["b"])
    result, model, _ = await run_one_call(tool, {"a": 2, "b": 3})
    assert seen == [{"a": 2, "b": 3}]
    assert tool_message(model.requests[1]) == [{"type": "tool-result", "toolCallId": "c1", "toolName": "add", "result": 5,
                                                "input": {"a": 2, "b": 3}}]


@pytest.mark.asyncio
async def test_pydantic_tool_receives_a_model_instance():
    class AddInput(pydantic.BaseModel):
        a: int
        b: int

    seen = []

    def execute(input, ctx):
        seen.append(input)
        return input.a + input.b

    tool = create_tool(id="add", input_schema=AddInput, execute=execute)
    result, model, _ = await run_one_call(tool, {"a": 2, "b": 3})
    assert len(seen) == 1 and isinstance(seen[0], AddInput) and (seen[0].a, seen[0].b) == (2, 3)
    assert result.tool_results[0]["payload"]["result"] == 5


@pytest.mark.asyncio
async def test_pydantic_input_schema_is_sent_to_the_model_as_json_schema():
    class AddInput(pydantic.BaseModel):
        a: int

    model = ScriptedModel([text_step("ok")])
    tool = create_tool(id="add", description="Add.", input_schema=AddInput, execute=lambda i: i.a)
    await Agent(id="x", instructions="x", model=model, tools={"add": tool}).generate("hi")
    assert model.requests[0].tools == [{"name": "add", "description": "Add.",
                                        "parameters": {**AddInput.model_json_schema(), "additionalProperties": False}}]


@pytest.mark.asyncio
async def test_async_execute_is_awaited():
    async def execute(input, ctx):
        await asyncio.sleep(0)
        return {"sum": input["a"] + input["b"]}

    result, _, _ = await run_one_call(create_tool(id="add", input_schema=ADD_SCHEMA, execute=execute), {"a": 1, "b": 1})
    assert result.tool_results[0]["payload"]["result"] == {"sum": 2}


@pytest.mark.asyncio
async def test_execute_with_only_the_input_argument():
    result, _, _ = await run_one_call(create_tool(id="add", input_schema=ADD_SCHEMA, execute=lambda input: input["a"]),
                                      {"a": 4, "b": 0})
    assert result.tool_results[0]["payload"]["result"] == 4


@pytest.mark.asyncio
async def test_pydantic_result_is_returned_as_json_data():
    class Out(pydantic.BaseModel):
        total: int

    tool = create_tool(id="add", input_schema=ADD_SCHEMA, output_schema=Out,
                       execute=lambda i: Out(total=i["a"] + i["b"]))
    result, model, _ = await run_one_call(tool, {"a": 1, "b": 2})
    assert result.tool_results[0]["payload"]["result"] == {"total": 3}
    assert tool_message(model.requests[1])[0]["result"] == {"total": 3}


@pytest.mark.asyncio
async def test_execute_receives_the_run_context():
    contexts = []
    tool = create_tool(id="add", input_schema=ADD_SCHEMA, execute=lambda i, ctx: contexts.append(ctx) or 0)
    result, _, _ = await run_one_call(tool, {"a": 1, "b": 2}, request_context={"user": "u1"}, run_id="run-7")
    ctx = contexts[0]
    assert isinstance(ctx, ToolContext)
    assert (ctx.run_id, ctx.tool_call_id, ctx.agent_id, ctx.request_context) == ("run-7", "c1", "a", {"user": "u1"})
    assert ctx.thread_id is None and ctx.resource_id is None


def test_tool_without_schema_sends_an_open_object_schema():
    assert create_tool(id="t", execute=lambda i: i).parameters() == {
        "type": "object", "properties": {}, "additionalProperties": True}


@pytest.mark.parametrize("kwargs, field", [
    ({"id": ""}, "tool.id"),
    ({"id": "t", "execute": 3}, "tool 't'.execute"),
    ({"id": "t", "description": 3}, "tool 't'.description"),
    ({"id": "t", "input_schema": "string"}, "tool 't'.input_schema"),
    ({"id": "t", "input_schema": {"type": "nope"}}, "tool 't'.input_schema"),
    ({"id": "t", "output_schema": 3}, "tool 't'.output_schema"),
])
def test_invalid_tool_definition_names_the_field(kwargs, field):
    with pytest.raises(AgentConfigError) as info:
        create_tool(**kwargs)
    assert info.value.field == field


# -- failures the model sees -----------------------------------------------------------------

@pytest.mark.asyncio
async def test_invalid_args_give_a_tool_error_chunk_and_do_not_execute():
    calls = []
    tool = create_tool(id="add", input_schema=ADD_SCHEMA, execute=lambda i: calls.append(i))
    result, model, chunks = await run_one_call(tool, {"a": "two", "b": 3})
    errors = [c for c in chunks if c["type"] == "tool-error"]
    assert calls == []
    assert errors == [{"type": "tool-error", "runId": result.run_id, "from": "AGENT",
                       "payload": {"toolCallId": "c1", "toolName": "add",
                                   "error": "invalid arguments for tool 'add': a: 'two' is not of type 'integer'"}}]


@pytest.mark.asyncio
async def test_invalid_args_reach_the_model_as_an_error_result():
    tool = create_tool(id="add", input_schema=ADD_SCHEMA, execute=lambda i: 0)
    result, model, _ = await run_one_call(tool, {"a": 1})
    assert tool_message(model.requests[1]) == [{
        "type": "tool-result", "toolCallId": "c1", "toolName": "add",
        "result": {"error": "invalid arguments for tool 'add': (root): 'b' is a required property"}, "isError": True,
        "input": {"a": 1}}]
    assert result.tool_results[0]["payload"]["isError"] is True
    assert result.text == "done"
    assert result.finish_reason == "stop"


@pytest.mark.asyncio
async def test_output_schema_violation_is_a_tool_error():
    tool = create_tool(id="add", input_schema=ADD_SCHEMA, output_schema={"type": "object", "required": ["sum"]},
                       execute=lambda i: {"total": 3})
    result, model, chunks = await run_one_call(tool, {"a": 1, "b": 2})
    [error] = [c["payload"]["error"] for c in chunks if c["type"] == "tool-error"]
    assert error == "output does not match the tool's output schema: (root): 'sum' is a required property"
    assert tool_message(model.requests[1])[0]["isError"] is True


@pytest.mark.asyncio
async def test_a_tool_that_raises_becomes_an_error_result():
    def boom(input):
        raise ValueError("disk full")

    result, model, chunks = await run_one_call(create_tool(id="add", execute=boom), {})
    assert [c["payload"]["error"] for c in chunks if c["type"] == "tool-error"] == ["ValueError: disk full"]
    assert tool_message(model.requests[1]) == [{"type": "tool-result", "toolCallId": "c1", "toolName": "add",
                                                "result": {"error": "ValueError: disk full"}, "isError": True,
                                                "input": {}}]
    assert result.error is None
    assert result.finish_reason == "stop"


@pytest.mark.asyncio
async def test_after_tool_call_hook_sees_the_error():
    seen = []

    def boom(input):
        raise ValueError("disk full")

    model = ScriptedModel([tool_step(("c1", "add", {})), text_step("done")])
    agent = Agent(id="a", instructions="x", model=model, tools={"add": create_tool(id="add", execute=boom)},
                  hooks={"after_tool_call": lambda e: seen.append((e["output"], repr(e["error"])))})
    await agent.generate("go")
    assert seen == [(None, "ValueError('disk full')")]


@pytest.mark.asyncio
async def test_unknown_tool_name_from_the_model_is_an_error_result():
    tool = create_tool(id="add", execute=lambda i: 0)
    result, model, chunks = await run_one_call(tool, {}, name="multiply")
    message = "unknown tool 'multiply'; available: add"
    assert [c["payload"] for c in chunks if c["type"] == "tool-error"] == [
        {"toolCallId": "c1", "toolName": "multiply", "error": message}]
    assert tool_message(model.requests[1]) == [{"type": "tool-result", "toolCallId": "c1", "toolName": "multiply",
                                                "result": {"error": message}, "isError": True, "input": {}}]


@pytest.mark.asyncio
async def test_malformed_json_args_are_an_error_result_and_do_not_execute():
    calls = []
    tool = create_tool(id="add", execute=lambda i: calls.append(i))
    result, model, chunks = await run_one_call(tool, '{"a": 1,')
    [error] = [c["payload"]["error"] for c in chunks if c["type"] == "tool-error"]
    assert calls == []
    assert error.startswith("the model sent malformed JSON arguments: ")
    assert result.tool_calls[0]["payload"]["args"] == '{"a": 1,'
    assert tool_message(model.requests[1])[0]["isError"] is True


@pytest.mark.asyncio
async def test_non_object_json_args_are_an_error_result():
    calls = []
    result, model, chunks = await run_one_call(create_tool(id="add", execute=lambda i: calls.append(i)), "[1, 2]")
    assert [c["payload"]["error"] for c in chunks if c["type"] == "tool-error"] == ["tool arguments must be a JSON object"]
    assert calls == []


@pytest.mark.asyncio
async def test_empty_args_text_means_an_empty_object():
    seen = []
    result, _, _ = await run_one_call(create_tool(id="add", execute=lambda i: seen.append(i) or "ok"), "")
    assert seen == [{}]


@pytest.mark.asyncio
async def test_tool_errors_do_not_stop_the_other_calls_of_the_step():
    def boom(input):
        raise RuntimeError("nope")

    model = ScriptedModel([tool_step(("c1", "bad", {}), ("c2", "good", {})), text_step("done")])
    agent = Agent(id="a", instructions="x", model=model,
                  tools={"bad": create_tool(id="bad", execute=boom), "good": create_tool(id="good", execute=lambda i: 1)})
    result = await agent.generate("go")
    assert [(r["payload"]["toolCallId"], r["payload"]["result"]) for r in result.tool_results] == [
        ("c1", {"error": "RuntimeError: nope"}), ("c2", 1)]
    assert [p["toolCallId"] for p in tool_message(model.requests[1])] == ["c1", "c2"]


# -- what the model receives (Mastra's shapes) ----------------------------------------------------

@pytest.mark.asyncio
async def test_object_schemas_reach_the_model_closed_as_mastra_sends_them():
    schema = {"type": "object", "properties": {
        "q": {"type": "string"},
        "filter": {"type": "object", "properties": {"tag": {"type": "string"}}},
        "rows": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        "extra": {"type": "object", "additionalProperties": True},
        "either": {"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "null"}]},
        "both": {"allOf": [{"type": "object", "properties": {"x": {"type": "string"}}}]}},
        "required": ["q"], "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}}}
    original = json.loads(json.dumps(schema))
    model = ScriptedModel([text_step("ok")])
    tool = create_tool(id="find", description="Find.", input_schema=schema, execute=lambda i: i)
    await Agent(id="x", instructions="x", model=model, tools={"find": tool}).generate("hi")
    assert model.requests[0].tools[0]["parameters"] == {"type": "object", "properties": {
        "q": {"type": "string"},
        "filter": {"type": "object", "properties": {"tag": {"type": "string"}}, "additionalProperties": False},
        "rows": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}},
                                            "additionalProperties": False}},
        "extra": {"type": "object", "additionalProperties": True},
        "either": {"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
                             {"type": "null"}]},
        "both": {"allOf": [{"type": "object", "properties": {"x": {"type": "string"}}}]}},
        "required": ["q"], "additionalProperties": False,
        "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}, "additionalProperties": False}}}
    assert schema == original  # the tool's own schema (validation, the HTTP API) is untouched
    # the model may still send what the schema allows: validation follows the tool's schema
    assert tool.validate_input({"q": "a", "more": 1}) == {"q": "a", "more": 1}


@pytest.mark.asyncio
async def test_a_tool_result_sent_back_to_the_model_carries_the_call_input():
    tool = create_tool(id="add", input_schema=ADD_SCHEMA, execute=lambda i: i["a"] + i["b"])
    result, model, _ = await run_one_call(tool, {"a": 2, "b": 3})
    # Mastra's tool-result part: the call's input after the output (behaviour.out.txt, scenario 9)
    assert tool_message(model.requests[1]) == [{"type": "tool-result", "toolCallId": "c1", "toolName": "add",
                                                "result": 5, "input": {"a": 2, "b": 3}}]
    # the run's messages (what memory stores) keep their format
    assert [m for m in result.messages if m["role"] == "tool"][0]["content"] == [
        {"type": "tool-result", "toolCallId": "c1", "toolName": "add", "result": 5}]


# -- the compiled fast path: jsonschema's verdict, faster ----------------------------------------
DRAFT7 = "http://json-schema.org/draft-07/schema#"
DRAFT4 = "http://json-schema.org/draft-04/schema#"


@pytest.mark.parametrize("schema, value, valid", [
    (ADD_SCHEMA, {"a": 1, "b": 2}, True),
    (ADD_SCHEMA, {"a": 1}, False),
    (ADD_SCHEMA, {"a": 1, "b": True}, False),
    ({"type": "integer"}, 1.0, True),
    ({"$schema": DRAFT4, "type": "integer"}, 1.0, False),
    ({"type": "number"}, float("nan"), True),  # jsonschema-rs refuses it; jsonschema accepts
    ({"$schema": DRAFT7, "type": "string", "format": "email"}, "not an email", True),  # formats: not asserted
    ({"type": "string", "pattern": r"^\d+$"}, "٣٤", True),  # Python's \d is Unicode, jsonschema-rs's ASCII
    ({"type": "string", "pattern": "^a$"}, "a\n", True),  # Python's $ matches before a final newline
    ({"type": "object", "properties": {"n": {"type": "integer", "maximum": 10}}}, {"n": 2**70}, False),
    ({"$defs": {"n": {"type": "integer"}}, "type": "array", "items": {"$ref": "#/$defs/n"}}, [1, "2"], False),
    ({"type": "array", "uniqueItems": True}, [1, True], True),
])
def test_a_schema_gives_jsonschemas_verdict_with_or_without_the_compiled_validator(schema, value, valid):
    """A value the compiled validator (jsonschema-rs) accepts is valid; any other is jsonschema's to
    decide, and where the two differ, jsonschema's verdict stands."""
    import jsonschema

    from agents.runtime.tools import Schema, ToolValidationError

    assert jsonschema.validators.validator_for(schema)(schema).is_valid(value) is valid  # the reference
    compiled = Schema(schema, field_name="input_schema")
    assert compiled._fast is not None  # every draft here has a compiled validator
    plain = Schema(schema, field_name="input_schema")
    plain._fast = None
    for one in (compiled, plain):
        if valid:
            assert one.validate(value) is value
        else:
            with pytest.raises(ToolValidationError):
                one.validate(value)


def test_a_value_the_compiled_validator_cannot_read_is_left_to_jsonschema():
    from agents.runtime.tools import Schema, ToolValidationError

    schema = Schema({"type": "object"}, field_name="input_schema")
    with pytest.raises(ToolValidationError) as info:
        schema.validate(object())
    assert "is not of type 'object'" in str(info.value)
    value = {"when": object()}  # not JSON, but an object all the same: jsonschema accepts it
    assert schema.validate(value) is value
