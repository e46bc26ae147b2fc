"""Mastra's legacy names: ``output`` (structured output without a model); a ``voice`` that is not a
voice provider is refused with a clear error (voices: tests/runtime/test_voice.py)."""

import pytest

from agents.runtime import Agent, AgentConfigError
from agents.runtime.testing import ScriptedModel, text_step

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


@pytest.mark.asyncio
async def test_output_is_structured_output_without_a_model():
    model = ScriptedModel([text_step('{"city": "Lagos"}')])
    result = await Agent(id="a", instructions="x", model=model).generate("Where?", output=CITY)
    assert result.object == {"city": "Lagos"}
    assert model.requests[0].response_format == {"type": "json", "schema": CITY, "name": "response"}


@pytest.mark.asyncio
async def test_output_in_default_options_works_too():
    model = ScriptedModel([text_step('{"city": "Accra"}')])
    agent = Agent(id="a", instructions="x", model=model, default_options={"output": CITY})
    assert (await agent.generate("Where?")).object == {"city": "Accra"}


@pytest.mark.asyncio
async def test_output_and_structured_output_together_are_rejected():
    model = ScriptedModel([text_step("{}")])
    with pytest.raises(AgentConfigError) as info:
        await Agent(id="a", instructions="x", model=model).generate(
            "Where?", output=CITY, structured_output={"schema": CITY})
    assert (info.value.field, info.value.message) == (
        "options.output", "options.output: is the legacy name of structured_output; pass only one of them")
    assert model.calls == 0


@pytest.mark.asyncio
async def test_an_output_that_fails_its_schema_is_a_structured_output_error():
    model = ScriptedModel([text_step('{"town": "Lagos"}')])
    result = await Agent(id="a", instructions="x", model=model).generate("Where?", output=CITY)
    assert result.finish_reason == "error"
    assert result.error.code == "structured_output_error"


def test_a_voice_that_is_not_a_voice_provider_is_refused_naming_the_field():
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model=ScriptedModel([]), voice=object())
    assert (info.value.field, info.value.code) == ("voice", "agent_config_error")
    assert info.value.problem.startswith("must be a voice (CompositeVoice(input=..., output=...)")
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model=ScriptedModel([]), Voice=object())
    assert info.value.message == "Voice: unknown option (the keyword is 'voice')"
