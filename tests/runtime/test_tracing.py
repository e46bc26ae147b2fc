"""Tracing: ids in the result, the span tree of a run (steps, tools, processors, delegations),
tracing_options (metadata, request context keys, tags, trace and parent ids), tracing_context,
telemetry (the legacy name), storage and exporters."""

import re

import pytest

from agents.runtime import Agent, AgentConfigError, create_tool
from agents.runtime.tracing import add_trace_exporter, remove_trace_exporter
from agents.runtime.testing import ScriptedModel, text_step, tool_step


class Tag:
    id = "tag"

    def process_input(self, *, messages):
        return messages


def weather():
    def execute(input, context):
        span = context.tracing_context["current_span"].create_child_span(name="http: weather api", type="http")
        span.end(output={"status": 200})
        return {"temp": 21}

    return create_tool(id="weather", execute=execute)


def tree(spans):
    """(type, name, parent type) of each span, in creation order."""
    by_id = {s["span_id"]: s for s in spans}
    return [(s["type"], s["name"], by_id[s["parent_span_id"]]["type"] if s["parent_span_id"] in by_id else None)
            for s in spans]


@pytest.mark.asyncio
async def test_a_run_has_a_trace_with_child_spans_for_steps_tools_and_processors(run_store):
    model = ScriptedModel([tool_step(("c1", "weather", {})), text_step("21 degrees")])
    agent = Agent(id="a", instructions="x", model=model, tools={"weather": weather()}, input_processors=[Tag()])
    result = await agent.generate("weather?")
    assert re.fullmatch(r"[0-9a-f]{32}", result.trace_id) and re.fullmatch(r"[0-9a-f]{16}", result.span_id)
    assert (result.to_dict()["traceId"], result.to_dict()["spanId"]) == (result.trace_id, result.span_id)
    spans = run_store.spans
    assert tree(spans) == [
        ("agent_run", "agent run: 'a'", None),
        ("processor", "processor: 'tag' process_input", "agent_run"),
        ("model_step", "step: 0", "agent_run"),
        ("tool_call", "tool: 'weather'", "agent_run"),
        ("http", "http: weather api", "tool_call"),
        ("model_step", "step: 1", "agent_run"),
    ]
    assert {s["trace_id"] for s in spans} == {result.trace_id}
    root = spans[0]
    assert (root["span_id"], root["parent_span_id"]) == (result.span_id, None)
    assert root["attributes"]["finish_reason"] == "stop"
    assert root["output"] == "21 degrees"
    assert spans[3]["input"] == {} and spans[3]["output"] == {"temp": 21}
    assert spans[2]["attributes"]["finish_reason"] == "tool-calls"
    assert all(s["ended_at"] is not None for s in spans)


@pytest.mark.asyncio
async def test_a_delegation_nests_the_sub_agents_run_in_the_same_trace(run_store):
    helper = Agent(id="helper", instructions="x", model=ScriptedModel([text_step("found")]))
    boss = Agent(id="boss", instructions="x", agents={"research": helper},
                 model=ScriptedModel([tool_step(("c1", "agent-research", {"prompt": "find"})), text_step("done")]))
    result = await boss.generate("go")
    assert tree(run_store.spans) == [
        ("agent_run", "agent run: 'boss'", None),
        ("model_step", "step: 0", "agent_run"),
        ("delegation", "tool: 'agent-research'", "agent_run"),
        ("agent_run", "agent run: 'helper'", "delegation"),
        ("model_step", "step: 0", "agent_run"),
        ("model_step", "step: 1", "agent_run"),
    ]
    assert {s["trace_id"] for s in run_store.spans} == {result.trace_id}


@pytest.mark.asyncio
async def test_tracing_options_set_ids_metadata_and_tags(run_store):
    result = await Agent(id="a", instructions="x", model=ScriptedModel([text_step("ok")])).generate(
        "hi", request_context={"user": {"id": "u-7", "plan": "pro"}, "region": "eu"},
        tracing_options={"traceId": "abc123", "parentSpanId": "00ff", "metadata": {"session": "s1"},
                         "requestContextKeys": ["user.id", "region", "missing.key"], "tags": ["beta"]})
    root = run_store.spans[0]
    assert (result.trace_id, root["trace_id"], root["parent_span_id"]) == ("abc123", "abc123", "00ff")
    assert root["metadata"] == {"session": "s1", "user.id": "u-7", "region": "eu"}
    assert root["attributes"]["tags"] == ["beta"]


@pytest.mark.asyncio
@pytest.mark.parametrize("options, field", [
    ({"trace_id": "xyz"}, "options.tracing_options.trace_id"),
    ({"trace_id": "a" * 33}, "options.tracing_options.trace_id"),
    ({"trace_id": ""}, "options.tracing_options.trace_id"),
    ({"parent_span_id": "0" * 17}, "options.tracing_options.parent_span_id"),
    ({"parent_span_id": "ABC"}, "options.tracing_options.parent_span_id"),
])
async def test_a_malformed_id_is_rejected_before_the_run(options, field):
    model = ScriptedModel([text_step("ok")])
    with pytest.raises(AgentConfigError) as info:
        await Agent(id="a", instructions="x", model=model).generate("hi", tracing_options=options)
    assert (info.value.field, info.value.code) == (field, "invalid_trace_id")
    assert model.calls == 0


@pytest.mark.asyncio
async def test_tracing_context_puts_the_run_under_the_current_span(run_store):
    outer = await Agent(id="outer", instructions="x", model=ScriptedModel([text_step("ok")])).generate("hi")
    parent_trace = run_store.spans[0]
    from agents.runtime.tracing import Span, Trace

    current = Span(Trace(trace_id=outer.trace_id), name="my job", type="generic")
    inner = await Agent(id="inner", instructions="x", model=ScriptedModel([text_step("ok")])).generate(
        "hi", tracing_context={"currentSpan": current})
    assert inner.trace_id == parent_trace["trace_id"]
    assert [s.type for s in current.trace.spans] == ["generic", "agent_run", "model_step"]
    assert current.trace.spans[1].parent_span_id == current.span_id


@pytest.mark.asyncio
async def test_telemetry_is_the_legacy_name_of_tracing_options(run_store):
    exported = []

    class Collector:
        def export(self, spans):
            exported.append(spans)

    collector = add_trace_exporter(Collector())
    try:
        agent = Agent(id="a", instructions="x", model=ScriptedModel([text_step("secret answer")] * 2))
        await agent.generate("secret question", telemetry={"functionId": "faq", "recordInputs": False,
                                                           "recordOutputs": False})
        await agent.generate("hi", telemetry={"isEnabled": False})
    finally:
        remove_trace_exporter(collector)
    first = run_store.spans[0]
    assert first["metadata"] == {"function_id": "faq"}
    assert (first["input"], first["output"]) == (None, None)
    assert len(exported) == 1  # the run with telemetry disabled is stored, not exported
    assert len(run_store.spans) == 4


@pytest.mark.asyncio
@pytest.mark.parametrize("telemetry, field", [
    ("x", "options.telemetry"), ({"bogus": 1}, "options.telemetry.bogus"),
    ({"isEnabled": "yes"}, "options.telemetry.is_enabled"), ({"functionId": 3}, "options.telemetry.function_id"),
])
async def test_bad_telemetry_is_rejected(telemetry, field):
    with pytest.raises(AgentConfigError) as info:
        await Agent(id="a", instructions="x", model=ScriptedModel([])).generate("hi", telemetry=telemetry)
    assert info.value.field == field


@pytest.mark.asyncio
async def test_a_failing_run_records_the_error_on_its_root_span(run_store):
    from agents.runtime import ModelError

    result = await Agent(id="a", instructions="x", model=ScriptedModel([ModelError("down", status=503)])).generate("hi")
    root = run_store.spans[0]
    assert root["error"] == {"message": "down", "code": "model_error"}
    assert run_store.spans[1]["error"] == {"message": "down", "code": "model_error"}
    assert result.trace_id == root["trace_id"]


@pytest.mark.asyncio
async def test_a_resumed_run_joins_the_trace_of_the_run_it_continues(run_store):
    ping = create_tool(id="ping", execute=lambda i: "pong", require_approval=True)
    agent = Agent(id="a", instructions="x", tools={"ping": ping},
                  model=ScriptedModel([tool_step(("c1", "ping", {})), text_step("done")]))
    first = await agent.generate("hi")
    second = await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="c1")
    assert second.trace_id == first.trace_id
    roots = [s for s in run_store.spans if s["type"] == "agent_run"]
    assert [(r["span_id"], r["parent_span_id"]) for r in roots] == [(first.span_id, None),
                                                                   (second.span_id, first.span_id)]
    assert [s["name"] for s in run_store.spans] == ["agent run: 'a'", "step: 0", "agent run: 'a'", "tool: 'ping'",
                                                    "step: 1"]


@pytest.mark.asyncio
async def test_a_finished_runs_spans_are_freed_without_the_garbage_collector(run_store):
    """The run's trace gives its spans up once they are exported: a span refers to its trace, and a
    trace still holding its spans made a cycle that kept every span (with the run's input and
    output) until a full collection."""
    from agents.runtime.tracing import Span
    from tests.garbage import cyclic_garbage

    agent = Agent(id="a", instructions="x", model=ScriptedModel([text_step("ok")]))
    with cyclic_garbage() as garbage:
        result = await agent.generate("hi")
        del result
    kept = [o for o in garbage if isinstance(o, Span)]
    assert [s["type"] for s in run_store.spans] == ["agent_run", "model_step"]  # exported as before
    assert kept == []
