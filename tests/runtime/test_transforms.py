"""Tool payload transforms: displays and transcripts see transformed payloads, the model the real ones."""

import json

import pytest

from agents.runtime import Agent, AgentConfigError, InMemoryMemory, create_tool
from agents.runtime.testing import ScriptedModel, text_step, tool_step


def lookup(transform=None, fail=False):
    def execute(input):
        if fail:
            raise RuntimeError("card 4111 declined")
        return {"card": "4111-1111-1111-1111", "owner": "Ann"}

    return create_tool(id="lookup", execute=execute, transform=transform,
                       input_schema={"type": "object", "properties": {"ssn": {"type": "string"}}})


def payloads(chunks, kind, key):
    return [c["payload"][key] for c in chunks if c["type"] == kind]


MASK = {"display": {"input": lambda ctx: {"ssn": "***"}, "output": lambda ctx: {"owner": ctx["output"]["owner"]},
                    "error": lambda ctx: "lookup failed"},
        "transcript": {"input": lambda ctx: {"ssn": "***"}, "output": lambda ctx: "[card details removed]"}}


@pytest.mark.asyncio
async def test_a_tool_transform_changes_displays_and_transcripts_not_the_model():
    chunks = []
    memory = InMemoryMemory()
    model = ScriptedModel([tool_step(("c1", "lookup", {"ssn": "123-45-6789"})), text_step("done")])
    agent = Agent(id="a", instructions="x", model=model, tools={"lookup": lookup(MASK)}, memory=memory)
    result = await agent.generate("find", on_chunk=chunks.append, memory={"resource": "u", "thread": "t"})
    assert payloads(chunks, "tool-call", "args") == [{"ssn": "***"}]
    assert payloads(chunks, "tool-result", "result") == [{"owner": "Ann"}]
    # the model and the result see the real payloads
    assert model.requests[1].messages[-1]["content"][0]["result"] == {"card": "4111-1111-1111-1111", "owner": "Ann"}
    assert result.tool_calls[0]["payload"]["args"] == {"ssn": "123-45-6789"}
    assert result.tool_results[0]["payload"]["result"]["card"] == "4111-1111-1111-1111"
    saved = await memory.store.list_messages(resource_id="u", thread_id="t")
    assert saved[1]["content"] == {"format": 2, "parts": [{"type": "tool-invocation", "toolInvocation": {
        "state": "result", "toolCallId": "c1", "toolName": "lookup", "args": {"ssn": "***"},
        "result": "[card details removed]"}}], "metadata": {"agentId": "a", "runId": result.run_id,
                                                             "modelId": "scripted", "provider": "test"}}


@pytest.mark.asyncio
async def test_errors_go_through_the_error_phase():
    chunks = []
    model = ScriptedModel([tool_step(("c1", "lookup", {"ssn": "1"})), text_step("sorry")])
    await Agent(id="a", instructions="x", model=model, tools={"lookup": lookup(MASK, fail=True)}).generate(
        "find", on_chunk=chunks.append)
    assert payloads(chunks, "tool-error", "error") == ["lookup failed"]
    assert payloads(chunks, "tool-result", "result") == []  # errors stream as tool-error only
    assert "4111" in model.requests[1].messages[-1]["content"][0]["result"]["error"]


@pytest.mark.asyncio
async def test_the_agent_policy_applies_to_every_tool_and_only_to_its_targets():
    chunks, seen = [], []
    memory = InMemoryMemory()

    def policy(ctx):
        seen.append((ctx["target"], ctx["phase"], ctx["tool_name"]))
        if ctx["phase"] == "output-available":
            return {"truncated": str(ctx["output"])[:10]}
        return ctx["input"]

    model = ScriptedModel([tool_step(("c1", "lookup", {"ssn": "1"})), text_step("done")])
    agent = Agent(id="a", instructions="x", model=model, tools={"lookup": lookup()}, memory=memory,
                  transform={"transformToolPayload": policy, "targets": ["display"]})
    await agent.generate("find", on_chunk=chunks.append, memory={"resource": "u", "thread": "t"})
    assert payloads(chunks, "tool-result", "result") == [{"truncated": "{'card': '"}]
    assert seen == [("display", "input-available", "lookup"), ("display", "output-available", "lookup")]
    saved = await memory.store.list_messages(resource_id="u", thread_id="t")
    assert saved[1]["content"]["parts"][0]["toolInvocation"]["result"] == {"card": "4111-1111-1111-1111",
                                                                           "owner": "Ann"}


@pytest.mark.asyncio
async def test_ui_messages_show_what_the_display_showed_without_running_the_transforms_again():
    seen = []

    def policy(ctx):
        seen.append(ctx["phase"])
        return {"ssn": "***"} if ctx["phase"] == "input-available" else {"owner": ctx["output"]["owner"]}

    model = ScriptedModel([tool_step(("c1", "lookup", {"ssn": "123-45-6789"})), text_step("done")])
    agent = Agent(id="a", instructions="x", model=model, tools={"lookup": lookup()},
                  transform={"transformToolPayload": policy, "targets": ["display"]})
    result = await agent.generate("find")
    assert seen == ["input-available", "output-available"]  # once each, for the chunks
    tool_part = result.ui_messages[0]["parts"][0]
    assert (tool_part["input"], tool_part["output"]) == ({"ssn": "***"}, {"owner": "Ann"})
    assert result.to_dict()["response"]["uiMessages"][0]["parts"][0] == tool_part
    # the answers themselves and their stored form keep the real payloads
    real = result.db_messages[0]["content"]["parts"][0]["toolInvocation"]
    assert (real["args"], real["result"]["card"]) == ({"ssn": "123-45-6789"}, "4111-1111-1111-1111")
    assert result.response["messages"][1]["content"][0]["result"]["card"] == "4111-1111-1111-1111"


@pytest.mark.asyncio
async def test_ui_messages_show_a_failed_tool_through_the_error_phase():
    model = ScriptedModel([tool_step(("c1", "lookup", {"ssn": "1"})), text_step("sorry")])
    result = await Agent(id="a", instructions="x", model=model, tools={"lookup": lookup(MASK, fail=True)}).generate(
        "find")
    assert result.ui_messages[0]["parts"][0]["output"] == "lookup failed"
    assert "4111" in str(result.db_messages[0]["content"]["parts"][0]["toolInvocation"]["result"])


@pytest.mark.asyncio
async def test_a_run_resumed_after_an_approval_keeps_what_the_display_showed_before(run_store):
    model = ScriptedModel([tool_step(("c1", "lookup", {"ssn": "1"})), text_step("done")])
    transform = {"display": {"input": lambda ctx: "in", "output": lambda ctx: "out"}}
    agent = Agent(id="a", instructions="x", model=model, tools={"lookup": lookup(transform)})
    first = await agent.generate("find", require_tool_approval=True)
    # the resumed run is built from the suspended state, as the database keeps it (JSON)
    entry = run_store.suspended[first.run_id]
    entry["state"] = json.loads(json.dumps(entry["state"]))
    result = await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="c1")
    tool_part = result.ui_messages[0]["parts"][0]
    assert (tool_part["input"], tool_part["output"], tool_part["state"]) == ("in", "out", "output-available")


@pytest.mark.asyncio
async def test_a_configured_target_without_a_transform_for_the_phase_hides_the_payload():
    chunks = []
    model = ScriptedModel([tool_step(("c1", "lookup", {"ssn": "1"})), text_step("done")])
    transform = {"display": {"input": lambda ctx: None}}  # None: nothing to show
    await Agent(id="a", instructions="x", model=model, tools={"lookup": lookup(transform)}).generate(
        "find", on_chunk=chunks.append)
    assert payloads(chunks, "tool-call", "args") == [{"message": "Tool input-available payload unavailable"}]
    assert payloads(chunks, "tool-result", "result") == [{"message": "Tool output-available payload unavailable"}]


@pytest.mark.asyncio
async def test_a_raising_transform_hides_the_payload():
    chunks = []
    model = ScriptedModel([tool_step(("c1", "lookup", {"ssn": "1"})), text_step("done")])
    transform = {"display": {"input": lambda ctx: 1 / 0, "output": lambda ctx: "ok"}}
    await Agent(id="a", instructions="x", model=model, tools={"lookup": lookup(transform)}).generate(
        "find", on_chunk=chunks.append)
    assert payloads(chunks, "tool-call", "args") == [{"message": "Tool input-available payload unavailable"}]


@pytest.mark.asyncio
async def test_approval_and_suspension_payloads_are_transformed_for_display():
    chunks = []
    model = ScriptedModel([tool_step(("c1", "lookup", {"ssn": "1"}))])
    transform = {"display": {"input": lambda ctx: "in", "approval": lambda ctx: {"ssn": "hidden"}}}
    result = await Agent(id="a", instructions="x", model=model, tools={"lookup": lookup(transform)}).generate(
        "find", on_chunk=chunks.append, require_tool_approval=True)
    assert payloads(chunks, "tool-call-approval", "args") == [{"ssn": "hidden"}]
    assert result.suspend_payload["args"] == {"ssn": "1"}


@pytest.mark.parametrize("build", [
    lambda: create_tool(id="t", transform={"screen": {}}),
    lambda: create_tool(id="t", transform={"display": {"inputs": print}}),
    lambda: create_tool(id="t", transform={"display": {"input": 3}}),
    lambda: Agent(id="a", instructions="x", model=ScriptedModel([]), transform={"targets": ["display"]}),
    lambda: Agent(id="a", instructions="x", model=ScriptedModel([]),
                  transform={"transform_tool_payload": print, "targets": ["screen"]}),
])
def test_bad_transforms_are_config_errors(build):
    with pytest.raises(AgentConfigError):
        build()
