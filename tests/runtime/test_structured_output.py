"""structured_output: schema dict or pydantic, separate model, error strategies, prompt injection."""

import json
import logging

import pydantic
import pytest

from agents.runtime import Agent, AgentConfigError, ModelError, StructuredOutputError, create_tool
from agents.runtime.testing import ScriptedModel, text_step, tool_step
from agents.runtime.tools import Schema

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "temp": {"type": "integer"}},
          "required": ["city", "temp"]}


class Weather(pydantic.BaseModel):
    city: str
    temp: int


def agent_for(model, **kwargs):
    return Agent(id="a", instructions="Answer.", model=model, **kwargs)


@pytest.mark.asyncio
async def test_schema_dict_gives_a_validated_object():
    model = ScriptedModel([text_step('{"city": "Lagos", "temp": 31}')])
    result = await agent_for(model).generate("Weather?", structured_output={"schema": SCHEMA})
    assert result.object == {"city": "Lagos", "temp": 31}
    assert result.text == '{"city": "Lagos", "temp": 31}'
    assert result.finish_reason == "stop"


@pytest.mark.asyncio
async def test_schema_is_sent_as_the_response_format():
    model = ScriptedModel([text_step('{"city": "Lagos", "temp": 31}')])
    await agent_for(model).generate("Weather?", structured_output={"schema": SCHEMA})
    assert model.requests[0].response_format == {"type": "json", "schema": SCHEMA, "name": "response"}


@pytest.mark.asyncio
async def test_pydantic_schema_gives_plain_json_data():
    model = ScriptedModel([text_step('{"city": "Lagos", "temp": 31}')])
    result = await agent_for(model).generate("Weather?", structured_output={"schema": Weather})
    assert result.object == {"city": "Lagos", "temp": 31}
    assert model.requests[0].response_format["schema"] == Weather.model_json_schema()


@pytest.mark.asyncio
async def test_code_fences_around_the_json_are_accepted():
    model = ScriptedModel([text_step('```json\n{"city": "Lagos", "temp": 31}\n```')])
    result = await agent_for(model).generate("Weather?", structured_output={"schema": SCHEMA})
    assert result.object == {"city": "Lagos", "temp": 31}


@pytest.mark.asyncio
async def test_object_result_chunk_is_emitted_before_finish():
    chunks = []
    model = ScriptedModel([text_step('{"city": "Lagos", "temp": 31}')])
    await agent_for(model).generate("Weather?", structured_output={"schema": SCHEMA}, on_chunk=chunks.append)
    assert [c["type"] for c in chunks][-2:] == ["object-result", "finish"]
    assert chunks[-2]["payload"] == {"object": {"city": "Lagos", "temp": 31}}


@pytest.mark.asyncio
async def test_strict_strategy_ends_the_run_with_an_error():
    errors = []
    model = ScriptedModel([text_step('{"city": "Lagos"}')])
    result = await agent_for(model).generate("Weather?", structured_output={"schema": SCHEMA}, on_error=errors.append)
    assert result.finish_reason == "error"
    assert isinstance(result.error, StructuredOutputError)
    assert result.error.code == "structured_output_error"
    assert str(result.error) == "structured output does not match the schema: (root): 'temp' is a required property"
    assert result.object is None
    assert [type(e["error"]) for e in errors] == [StructuredOutputError]


@pytest.mark.asyncio
async def test_strict_strategy_reports_invalid_json():
    model = ScriptedModel([text_step("It is sunny.")])
    result = await agent_for(model).generate("Weather?", structured_output={"schema": SCHEMA, "error_strategy": "strict"})
    assert result.finish_reason == "error"
    assert str(result.error).startswith("structured output does not match the schema: ")


@pytest.mark.asyncio
async def test_warn_strategy_keeps_the_run_and_adds_a_warning():
    model = ScriptedModel([text_step('{"city": "Lagos"}')])
    result = await agent_for(model).generate("Weather?", structured_output={"schema": SCHEMA, "errorStrategy": "warn"})
    assert result.finish_reason == "stop"
    assert result.error is None
    assert result.object is None
    assert result.warnings == [{"type": "structured-output",
                                "message": "structured output does not match the schema: (root): 'temp' is a required property"}]


@pytest.mark.asyncio
async def test_fallback_strategy_uses_the_fallback_value():
    model = ScriptedModel([text_step("not json")])
    result = await agent_for(model).generate("Weather?", structured_output={
        "schema": SCHEMA, "error_strategy": "fallback", "fallback_value": {"city": "unknown", "temp": 0}})
    assert result.finish_reason == "stop"
    assert result.error is None
    assert result.object == {"city": "unknown", "temp": 0}
    assert result.used_fallback_value is True and result.to_dict()["usedFallbackValue"] is True


@pytest.mark.asyncio
async def test_an_answer_that_matches_is_not_a_fallback():
    model = ScriptedModel([text_step('{"city": "Lagos", "temp": 31}')])
    result = await agent_for(model).generate("Weather?", structured_output={
        "schema": SCHEMA, "error_strategy": "fallback", "fallback_value": {"city": "unknown", "temp": 0}})
    assert result.object == {"city": "Lagos", "temp": 31}
    assert result.used_fallback_value is False and result.to_dict()["usedFallbackValue"] is False


class Told:
    """A structured output ``logger``: what it was told, by level."""

    def __init__(self):
        self.lines = []

    def error(self, line):
        self.lines.append(("error", line))

    def warning(self, line):
        self.lines.append(("warning", line))

    def info(self, line):
        self.lines.append(("info", line))


MISMATCH = "structured output does not match the schema: (root): 'temp' is a required property"


@pytest.mark.asyncio
@pytest.mark.parametrize("strategy, level, suffix", [("strict", "error", ""), ("warn", "warning", ""),
                                                     ("fallback", "info", " (using fallback)")])
async def test_the_logger_hears_of_an_answer_that_does_not_match_at_its_strategys_level(strategy, level, suffix):
    told = Told()
    model = ScriptedModel([text_step('{"city": "Lagos"}')])
    result = await agent_for(model).generate("Weather?", run_id="run-7", structured_output={
        "schema": SCHEMA, "error_strategy": strategy, "fallback_value": {"city": "?", "temp": 0}, "logger": told})
    assert told.lines == [(level, f"run run-7: {MISMATCH}{suffix}")]
    assert result.finish_reason == ("error" if strategy == "strict" else "stop")


@pytest.mark.asyncio
async def test_the_logger_hears_nothing_of_an_answer_that_matches():
    told = Told()
    model = ScriptedModel([text_step('{"city": "Lagos", "temp": 31}')])
    await agent_for(model).generate("Weather?", structured_output={"schema": SCHEMA, "logger": told})
    assert told.lines == []


@pytest.mark.asyncio
async def test_a_logging_logger_is_a_logger(caplog):
    model = ScriptedModel([text_step('{"city": "Lagos"}')])
    with caplog.at_level(logging.INFO, logger="app.weather"):
        await agent_for(model).generate("Weather?", run_id="run-8", structured_output={
            "schema": SCHEMA, "errorStrategy": "warn", "logger": logging.getLogger("app.weather")})
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("app.weather", "WARNING", f"run run-8: {MISMATCH}")]


def test_a_stored_wake_keeps_its_structured_output_without_the_logger():
    from agents.runtime.threads.inputs import storable_options

    # stream options are stored with a queued input as JSON (another process may run it)
    for name in ("structured_output", "structuredOutput"):
        options = {name: {"schema": SCHEMA, "logger": Told()}, "max_steps": 2}
        assert storable_options(options) == {name: {"schema": SCHEMA}, "max_steps": 2}
        assert "logger" in options[name]  # the caller's own options are left as they were


def failing_structurer():
    return ScriptedModel([ModelError("rate limited by the provider", code="rate_limited", status=429)],
                         model_id="structurer")


@pytest.mark.asyncio
async def test_a_structuring_model_that_fails_ends_a_strict_run_with_its_error():
    errors, told = [], Told()
    model = ScriptedModel([text_step("It is 31 in Lagos.")])
    result = await agent_for(model).generate("Weather?", run_id="run-9", on_error=errors.append, structured_output={
        "schema": SCHEMA, "model": failing_structurer(), "logger": told})
    assert result.finish_reason == "error"
    assert isinstance(result.error, ModelError) and result.error.code == "rate_limited"
    assert [e["error"] for e in errors] == [result.error]
    assert result.text == "It is 31 in Lagos." and result.object is None
    assert told.lines == [("error", "run run-9: structuring failed: rate limited by the provider")]


@pytest.mark.asyncio
async def test_a_structuring_model_that_fails_is_a_warning_or_the_fallback_under_those_strategies():
    warned = await agent_for(ScriptedModel([text_step("31")])).generate("Weather?", structured_output={
        "schema": SCHEMA, "model": failing_structurer(), "error_strategy": "warn"})
    assert (warned.finish_reason, warned.object, warned.error) == ("stop", None, None)
    assert warned.warnings == [{"type": "structured-output",
                                "message": "structuring failed: rate limited by the provider"}]
    fell_back = await agent_for(ScriptedModel([text_step("31")])).generate("Weather?", structured_output={
        "schema": SCHEMA, "model": failing_structurer(), "error_strategy": "fallback",
        "fallback_value": {"city": "?", "temp": 0}})
    assert (fell_back.finish_reason, fell_back.object, fell_back.used_fallback_value) == ("stop", {"city": "?", "temp": 0},
                                                                                         True)


@pytest.mark.asyncio
async def test_separate_model_structures_the_answer_after_the_tool_loop():
    structurer = ScriptedModel([text_step('{"city": "Lagos", "temp": 31}', usage=(7, 3))], model_id="structurer")
    model = ScriptedModel([tool_step(("c1", "weather", {}), usage=(1, 1)), text_step("It is 31 in Lagos.", usage=(2, 2))])
    weather = create_tool(id="weather", execute=lambda i: {"temp": 31})
    result = await agent_for(model, tools={"weather": weather}).generate(
        "Weather in Lagos?", structured_output={"schema": SCHEMA, "model": structurer})
    assert result.object == {"city": "Lagos", "temp": 31}
    assert result.text == "It is 31 in Lagos."
    assert [r.response_format for r in model.requests] == [None, None]
    assert structurer.requests[0].response_format == {"type": "json", "schema": SCHEMA, "name": "response"}
    assert result.usage == {"input_tokens": 10, "output_tokens": 6, "total_tokens": 16}


@pytest.mark.asyncio
async def test_structuring_model_sees_the_conversation_and_the_instructions():
    structurer = ScriptedModel([text_step('{"city": "Lagos", "temp": 31}')])
    model = ScriptedModel([text_step("It is 31 in Lagos.")])
    await agent_for(model).generate("Weather in Lagos?", structured_output={
        "schema": SCHEMA, "model": structurer, "instructions": "Extract city and temperature."})
    messages = structurer.requests[0].messages
    assert messages[0] == {"role": "system", "content": "Extract city and temperature."}
    assert messages[1]["role"] == "user"
    assert "Weather in Lagos?" in messages[1]["content"] and "It is 31 in Lagos." in messages[1]["content"]


@pytest.mark.asyncio
async def test_structuring_model_gets_the_structured_provider_options():
    structurer = ScriptedModel([text_step('{"city": "Lagos", "temp": 31}')])
    await agent_for(ScriptedModel([text_step("31")])).generate("Weather?", structured_output={
        "schema": SCHEMA, "model": structurer, "provider_options": {"openai": {"reasoningEffort": "low"}}})
    assert structurer.requests[0].provider_options == {"openai": {"reasoningEffort": "low"}}


@pytest.mark.asyncio
async def test_json_prompt_injection_puts_the_schema_in_a_system_message():
    model = ScriptedModel([text_step('{"city": "Lagos", "temp": 31}')])
    result = await agent_for(model).generate("Weather?", structured_output={"schema": SCHEMA,
                                                                             "json_prompt_injection": True})
    request = model.requests[0]
    assert request.response_format is None
    systems = [m["content"] for m in request.messages if m["role"] == "system"]
    assert systems[0] == "Answer."
    assert len(systems) == 2 and json.dumps(SCHEMA) in systems[1]
    assert request.messages[-1] == {"role": "user", "content": "Weather?"}
    assert result.object == {"city": "Lagos", "temp": 31}


@pytest.mark.asyncio
async def test_json_prompt_injection_system_is_the_same_as_true():
    model = ScriptedModel([text_step('{"city": "Lagos", "temp": 31}')])
    await agent_for(model).generate("Weather?", structured_output={"schema": SCHEMA, "jsonPromptInjection": "system"})
    assert model.requests[0].response_format is None
    assert sum(m["role"] == "system" for m in model.requests[0].messages) == 2


@pytest.mark.asyncio
async def test_json_prompt_injection_inline_adds_the_schema_to_the_user_message():
    model = ScriptedModel([text_step('{"city": "Lagos", "temp": 31}')])
    await agent_for(model).generate("Weather?", structured_output={"schema": SCHEMA, "json_prompt_injection": "inline"})
    request = model.requests[0]
    assert request.response_format is None
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert request.messages[-1]["content"].startswith("Weather?\n\n")
    assert json.dumps(SCHEMA) in request.messages[-1]["content"]


@pytest.mark.asyncio
async def test_json_prompt_injection_auto_uses_the_native_response_format():
    model = ScriptedModel([text_step('{"city": "Lagos", "temp": 31}')])
    await agent_for(model).generate("Weather?", structured_output={"schema": SCHEMA, "json_prompt_injection": "auto"})
    assert model.requests[0].response_format == {"type": "json", "schema": SCHEMA, "name": "response"}


@pytest.mark.asyncio
async def test_structured_output_works_offline_with_the_echo_model():
    result = await Agent(id="a", instructions="x", model="local/echo").generate(
        "hi", structured_output={"schema": SCHEMA})
    assert result.object == {"city": "echo", "temp": 0}


@pytest.mark.parametrize("structured, field", [
    ("schema", "options.structured_output"),
    ({}, "options.structured_output.schema"),
    ({"schema": SCHEMA, "bogus": 1}, "options.structured_output.bogus"),
    ({"schema": SCHEMA, "error_strategy": "loose"}, "options.structured_output.error_strategy"),
    ({"schema": SCHEMA, "error_strategy": "fallback"}, "options.structured_output.fallback_value"),
    ({"schema": SCHEMA, "json_prompt_injection": "always"}, "options.structured_output.json_prompt_injection"),
])
@pytest.mark.asyncio
async def test_invalid_structured_output_names_the_field(structured, field):
    with pytest.raises(AgentConfigError) as info:
        await agent_for(ScriptedModel([])).generate("hi", structured_output=structured)
    assert info.value.field == field


# -- $ref resolves inside the schema only (docs/security.md, "Who may pick a model") --------------
@pytest.fixture
def schema_host(monkeypatch):
    """A local HTTP server that would serve a schema; records every request."""
    from tests.runtime.providers.wire import WireServer, isolate_env, json_reply

    isolate_env(monkeypatch)
    with WireServer().reply(json_reply(200, {"type": "string"})) as server:
        yield server


@pytest.mark.asyncio
@pytest.mark.parametrize("ref", ["{url}/word.json", "word.json", "#/$defs/missing"])
async def test_a_ref_outside_the_schema_is_refused_and_never_fetched(schema_host, ref):
    schema = {"type": "object", "properties": {"city": {"$ref": ref.format(url=schema_host.url)}}}
    model = ScriptedModel([text_step('{"city": "Lagos"}')])
    with pytest.raises(AgentConfigError) as caught:
        await agent_for(model).generate("Weather?", structured_output={"schema": schema})
    assert caught.value.code == "invalid_schema"
    assert caught.value.field == "options.structured_output.schema"
    assert schema_host.requests == [] and model.requests == []


def test_a_remote_ref_in_a_tool_schema_is_refused_when_the_tool_is_made(schema_host):
    with pytest.raises(AgentConfigError) as caught:
        create_tool(id="t", description="d", execute=lambda input: input,
                    input_schema={"type": "object", "properties": {"a": {"$ref": f"{schema_host.url}/a.json"}}})
    assert caught.value.code == "invalid_schema"
    assert schema_host.requests == []


@pytest.mark.asyncio
async def test_local_refs_resolve_in_the_validation():
    schema = {"type": "object", "properties": {"city": {"$ref": "#/$defs/city"}, "temp": {"$ref": "#/$defs/temp"}},
              "required": ["city", "temp"], "$defs": {"city": {"type": "string"}, "temp": {"type": "integer"}}}
    good = await agent_for(ScriptedModel([text_step('{"city": "Lagos", "temp": 31}')])).generate(
        "Weather?", structured_output={"schema": schema})
    assert good.object == {"city": "Lagos", "temp": 31}
    bad = await agent_for(ScriptedModel([text_step('{"city": "Lagos", "temp": "hot"}')])).generate(
        "Weather?", structured_output={"schema": schema})
    assert str(bad.error) == "structured output does not match the schema: temp: 'hot' is not of type 'integer'"


def test_an_embedded_id_and_the_meta_schemas_resolve_locally():
    schema = {"$id": "https://example.test/root.json", "type": "object",
              "properties": {"city": {"$ref": "city.json"}, "any": {"$ref": "https://json-schema.org/draft/2020-12/schema"}},
              "$defs": {"city": {"$id": "city.json", "type": "string"}}}
    compiled = Schema(schema, field_name="s")
    assert compiled.validate({"city": "Lagos", "any": {"type": "string"}}) == {"city": "Lagos", "any": {"type": "string"}}
