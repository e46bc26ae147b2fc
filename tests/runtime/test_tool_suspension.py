"""Tools that suspend themselves: the suspended run, resuming it with validated data, and
auto-resume from the user's next message in the thread."""

import pytest

from agents.runtime import Agent, InMemoryMemory, ToolApprovalError, create_tool
from agents.runtime.agent.resumption import ResumeDataError
from agents.runtime.testing import ScriptedModel, text_step, tool_step

RESUME = {"type": "object", "properties": {"approved_amount": {"type": "integer"}},
          "required": ["approved_amount"], "additionalProperties": False}


def refund_tool(seen):
    async def execute(input, context):
        seen.append((input, context.resume_data))
        if context.resume_data is None:
            await context.suspend({"question": f"How much of {input['amount']} may I refund?"})
        return {"refunded": context.resume_data["approved_amount"]}

    return create_tool(id="refund", description="Refund.", execute=execute, resume_schema=RESUME,
                       input_schema={"type": "object", "properties": {"amount": {"type": "integer"}}})


def sync_tool():
    def execute(input, context):
        if context.resume_data is None:
            context.suspend({"need": "code"})
        return {"code": context.resume_data["code"]}

    return create_tool(id="code", execute=execute)


@pytest.mark.asyncio
async def test_a_tool_that_suspends_ends_the_run_suspended_with_its_payload():
    seen, chunks = [], []
    model = ScriptedModel([tool_step(("c1", "refund", {"amount": 80}))])
    agent = Agent(id="a", instructions="x", model=model, tools={"refund": refund_tool(seen)})
    result = await agent.generate("refund me", on_chunk=chunks.append)
    assert result.finish_reason == "suspended"
    assert [c["payload"] for c in chunks if c["type"] == "tool-call-suspended"] == [{
        "toolCallId": "c1", "toolName": "refund", "suspendPayload": {"question": "How much of 80 may I refund?"},
        "resumeSchema": RESUME}]
    assert [c["type"] for c in chunks][-3:] == ["tool-call", "tool-call-suspended", "finish"]
    wire = result.to_dict()
    assert wire["suspendPayload"] == {
        "toolCallId": "c1", "toolName": "refund", "args": {"amount": 80},
        "suspendPayload": {"question": "How much of 80 may I refund?"}, "resumeSchema": RESUME}
    assert wire["resumeSchema"] == RESUME  # beside the payload, as Mastra's result
    assert result.tool_results == []


@pytest.mark.asyncio
async def test_resume_runs_the_tool_again_with_the_data_and_the_run_goes_on():
    seen = []
    model = ScriptedModel([tool_step(("c1", "refund", {"amount": 80})), text_step("Refunded 50.")])
    agent = Agent(id="a", instructions="x", model=model, tools={"refund": refund_tool(seen)})
    first = await agent.generate("refund me")
    result = await agent.resume_generate({"approved_amount": 50}, run_id=first.run_id)
    assert seen == [({"amount": 80}, None), ({"amount": 80}, {"approved_amount": 50})]
    assert result.run_id == first.run_id
    assert result.tool_results[0]["payload"]["result"] == {"refunded": 50}
    assert (result.text, result.finish_reason) == ("Refunded 50.", "stop")
    with pytest.raises(ToolApprovalError) as info:  # resumed once
        await agent.resume_generate({"approved_amount": 50}, run_id=first.run_id)
    assert info.value.code == "approval_not_found"


@pytest.mark.asyncio
async def test_resume_data_that_fails_the_schema_is_refused_and_the_run_stays_suspended():
    seen = []
    model = ScriptedModel([tool_step(("c1", "refund", {"amount": 80})), text_step("done")])
    agent = Agent(id="a", instructions="x", model=model, tools={"refund": refund_tool(seen)})
    first = await agent.generate("refund me")
    with pytest.raises(ResumeDataError) as info:
        await agent.resume_generate({"approved_amount": "lots"}, run_id=first.run_id, tool_call_id="c1")
    assert (info.value.code, info.value.message) == (
        "resume_data_invalid", "resume data for 'refund' is invalid: approved_amount: 'lots' is not of type 'integer'")
    result = await agent.resume_generate({"approved_amount": 10}, run_id=first.run_id, tool_call_id="c1")
    assert result.tool_results[0]["payload"]["result"] == {"refunded": 10}


@pytest.mark.asyncio
async def test_a_sync_tool_can_suspend_without_await():
    model = ScriptedModel([tool_step(("c1", "code", {})), text_step("ok")])
    agent = Agent(id="a", instructions="x", model=model, tools={"code": sync_tool()})
    first = await agent.generate("go")
    assert first.suspend_payload["suspend_payload"] == {"need": "code"}
    # no resume schema: none in the payload (as its tool-call-suspended chunk) nor beside it
    wire = first.to_dict()
    assert wire["suspendPayload"] == {"toolCallId": "c1", "toolName": "code", "args": {},
                                      "suspendPayload": {"need": "code"}}
    assert "resumeSchema" not in wire
    result = await agent.resume_generate({"code": "1234"}, run_id=first.run_id)
    assert result.tool_results[0]["payload"]["result"] == {"code": "1234"}


@pytest.mark.asyncio
async def test_resume_data_is_refused_for_a_run_waiting_on_an_approval():
    model = ScriptedModel([tool_step(("c1", "code", {})), text_step("ok")])
    agent = Agent(id="a", instructions="x", model=model, tools={"code": sync_tool()})
    first = await agent.generate("go", require_tool_approval=True)
    with pytest.raises(ToolApprovalError) as info:
        await agent.resume_generate({"code": "1"}, run_id=first.run_id)
    assert info.value.code == "approval_required"
    approved = await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="c1")
    assert approved.finish_reason == "suspended"  # approved, then the tool suspends itself


@pytest.mark.asyncio
async def test_auto_resume_takes_the_resume_data_from_the_next_user_message():
    seen = []
    memory = InMemoryMemory()

    def second_step(request):
        # the model is told about the suspended call in the system message
        system = request.messages[1]["content"]
        assert system.startswith('Suspended tool calls are waiting for data from the user: [{"toolCallId": "c1"')
        return tool_step(("c2", "refund", {"amount": 80, "resumeData": {"approved_amount": 30},
                                           "suspendedToolCallId": "c1"}))

    model = ScriptedModel([tool_step(("c1", "refund", {"amount": 80})), second_step, text_step("Refunded 30.")])
    agent = Agent(id="a", instructions="x", model=model, tools={"refund": refund_tool(seen)}, memory=memory)
    mem = {"resource": "u1", "thread": "t1"}
    first = await agent.generate("refund 80", memory=mem)
    assert first.finish_reason == "suspended"
    result = await agent.generate("30 is fine", memory=mem, auto_resume_suspended_tools=True)
    assert seen[-1] == ({"amount": 80}, {"approved_amount": 30})
    assert result.tool_results[0]["payload"]["result"] == {"refunded": 30}
    assert result.text == "Refunded 30."
    with pytest.raises(ToolApprovalError):  # the stored suspension was claimed by the auto-resume
        await agent.resume_generate({"approved_amount": 1}, run_id=first.run_id)


@pytest.mark.asyncio
async def test_auto_resume_with_bad_data_is_a_tool_error_the_model_sees():
    memory = InMemoryMemory()
    model = ScriptedModel([
        tool_step(("c1", "refund", {"amount": 80})),
        tool_step(("c2", "refund", {"amount": 80, "resumeData": {"approved_amount": "x"},
                                    "suspendedToolCallId": "c1"})),
        text_step("How much exactly?")])
    agent = Agent(id="a", instructions="x", model=model, tools={"refund": refund_tool([])}, memory=memory)
    mem = {"resource": "u1", "thread": "t1"}
    await agent.generate("refund 80", memory=mem)
    result = await agent.generate("some", memory=mem, auto_resume_suspended_tools=True)
    assert result.tool_results[0]["payload"] == {
        "toolCallId": "c2", "toolName": "refund", "isError": True,
        "result": {"error": "approved_amount: 'x' is not of type 'integer'"}}


@pytest.mark.asyncio
async def test_auto_resume_needs_memory():
    from agents.runtime import AgentConfigError

    agent = Agent(id="a", instructions="x", model=ScriptedModel([]))
    with pytest.raises(AgentConfigError) as info:
        await agent.generate("x", auto_resume_suspended_tools=True)
    assert info.value.field == "options.auto_resume_suspended_tools"
