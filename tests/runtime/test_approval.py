"""Tool approval: suspend, approve, decline, stale decisions, resume in a fresh process."""

import pytest

from agents.runtime import Agent, AgentConfigError, AgentOutput, InMemoryMemory, ToolApprovalError, create_tool
from agents.runtime.storage import InMemoryStore, set_run_store
from agents.runtime.testing import ScriptedModel, text_step, tool_step

DELETE_ARGS = {"path": "/tmp/report.txt"}


def make_agent(model, counter, *, require_approval=False, **kwargs):
    def execute(input):
        counter.append(input["path"])
        return {"deleted": input["path"]}

    delete = create_tool(id="delete_file", description="Delete a file.",
                         input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
                         execute=execute, require_approval=require_approval)
    return Agent(id="files", instructions="You manage files.", model=model, tools={"delete_file": delete}, **kwargs)


def scripted():
    return ScriptedModel([tool_step(("call-1", "delete_file", DELETE_ARGS)), text_step("Deleted.")])


async def suspended(counter, **options):
    model = scripted()
    agent = make_agent(model, counter)
    chunks = []
    result = await agent.generate("Delete the report", require_tool_approval=True, on_chunk=chunks.append, **options)
    return agent, model, result, chunks


# -- suspension ------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_require_tool_approval_suspends_the_run():
    counter = []
    _, model, result, _ = await suspended(counter)
    assert result.finish_reason == "suspended"
    assert counter == []
    assert model.calls == 1


@pytest.mark.asyncio
async def test_suspend_payload_names_the_pending_call():
    _, _, result, _ = await suspended([])
    assert result.suspend_payload == {"tool_call_id": "call-1", "tool_name": "delete_file", "args": DELETE_ARGS}
    assert result.to_dict()["suspendPayload"] == {"toolCallId": "call-1", "toolName": "delete_file", "args": DELETE_ARGS}


@pytest.mark.asyncio
async def test_suspension_emits_a_tool_call_approval_chunk():
    _, _, result, chunks = await suspended([])
    approvals = [c for c in chunks if c["type"] == "tool-call-approval"]
    assert approvals == [{"type": "tool-call-approval", "runId": result.run_id, "from": "AGENT",
                          "payload": {"toolCallId": "call-1", "toolName": "delete_file", "args": DELETE_ARGS}}]
    assert chunks[-1]["payload"]["stepResult"] == {"reason": "suspended"}


@pytest.mark.asyncio
async def test_suspended_run_is_pending_in_the_run_store(run_store):
    _, _, result, _ = await suspended([])
    [pending] = await run_store.pending_approvals(run_id=result.run_id)
    assert (pending["agent_id"], pending["tool_call_id"], pending["tool_name"], pending["args"], pending["status"]) == (
        "files", "call-1", "delete_file", DELETE_ARGS, "pending")


@pytest.mark.asyncio
async def test_a_tool_with_require_approval_alone_suspends():
    counter = []
    model = scripted()
    result = await make_agent(model, counter, require_approval=True).generate("Delete the report")
    assert result.finish_reason == "suspended"
    assert result.suspend_payload["tool_call_id"] == "call-1"
    assert counter == []


@pytest.mark.asyncio
async def test_tools_without_approval_run_before_the_suspension():
    ran = []
    model = ScriptedModel([tool_step(("c1", "read", {}), ("c2", "delete_file", DELETE_ARGS)), text_step("ok")])
    agent = make_agent(model, ran, require_approval=True)
    agent._tools["read"] = create_tool(id="read", execute=lambda i: ran.append("read") or "content")
    result = await agent.generate("go")
    assert result.finish_reason == "suspended"
    assert ran == ["read"]
    assert result.suspend_payload["tool_call_id"] == "c2"


# -- approve ---------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_approve_tool_call_generate_executes_and_continues():
    counter = []
    agent, model, first, _ = await suspended(counter)
    result = await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-1")
    assert counter == ["/tmp/report.txt"]
    assert result.finish_reason == "stop"
    assert result.text == "Deleted."
    assert result.run_id == first.run_id
    assert model.requests[1].messages[-1]["content"] == [
        {"type": "tool-result", "toolCallId": "call-1", "toolName": "delete_file",
         "result": {"deleted": "/tmp/report.txt"}, "input": DELETE_ARGS}]


@pytest.mark.asyncio
async def test_approved_result_holds_all_steps_and_summed_usage():
    agent, _, first, _ = await suspended([])
    result = await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-1")
    assert [s.finish_reason for s in result.steps] == ["tool-calls", "stop"]
    assert [c["payload"]["toolCallId"] for c in result.tool_calls] == ["call-1"]
    assert [r["payload"]["result"] for r in result.tool_results] == [{"deleted": "/tmp/report.txt"}]
    assert result.suspend_payload is None


@pytest.mark.asyncio
async def test_approve_emits_a_resumed_start_then_the_tool_result():
    agent, _, first, _ = await suspended([])
    chunks = []
    await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-1", on_chunk=chunks.append)
    assert [c["type"] for c in chunks][:3] == ["start", "tool-result", "step-finish"]
    assert chunks[0]["payload"] == {"resumed": True}
    assert {c["runId"] for c in chunks} == {first.run_id}


@pytest.mark.asyncio
async def test_approve_tool_call_streaming_returns_an_agent_output():
    counter = []
    agent, _, first, _ = await suspended(counter)
    output = await agent.approve_tool_call(run_id=first.run_id, tool_call_id="call-1")
    assert isinstance(output, AgentOutput)
    chunks = [c async for c in output.full_stream]
    assert chunks[-1]["payload"]["stepResult"] == {"reason": "stop"}
    assert (await output.get_full_output()).text == "Deleted."
    assert counter == ["/tmp/report.txt"]


@pytest.mark.asyncio
async def test_approving_twice_raises():
    agent, _, first, _ = await suspended([])
    await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-1")
    with pytest.raises(ToolApprovalError) as info:
        await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-1")
    assert info.value.code == "approval_not_found"


@pytest.mark.asyncio
async def test_declining_after_approving_raises():
    agent, _, first, _ = await suspended([])
    await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-1")
    with pytest.raises(ToolApprovalError):
        await agent.decline_tool_call_generate(run_id=first.run_id, tool_call_id="call-1")


# -- decline ---------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_decline_never_runs_the_tool():
    counter = []
    agent, _, first, _ = await suspended(counter)
    result = await agent.decline_tool_call_generate(run_id=first.run_id, tool_call_id="call-1")
    assert counter == []
    assert result.finish_reason == "stop"


@pytest.mark.asyncio
async def test_the_model_sees_the_decline():
    agent, model, first, _ = await suspended([])
    await agent.decline_tool_call_generate(run_id=first.run_id, tool_call_id="call-1")
    last = model.requests[1].messages[-1]
    assert (last["role"], last["content"]) == ("tool", [{
        "type": "tool-result", "toolCallId": "call-1", "toolName": "delete_file",
        "result": "Tool call was not approved by the user", "isError": True, "input": DELETE_ARGS}])


@pytest.mark.asyncio
async def test_decline_tool_call_streaming_returns_an_agent_output():
    counter = []
    agent, _, first, _ = await suspended(counter)
    output = await agent.decline_tool_call(run_id=first.run_id, tool_call_id="call-1")
    assert isinstance(output, AgentOutput)
    assert (await output.get_full_output()).finish_reason == "stop"
    assert counter == []


# -- stale and unknown decisions -------------------------------------------------------------

@pytest.mark.asyncio
async def test_unknown_tool_call_id_is_stale():
    counter = []
    agent, _, first, _ = await suspended(counter)
    with pytest.raises(ToolApprovalError) as info:
        await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-999")
    assert info.value.code == "approval_stale"
    assert counter == []


@pytest.mark.asyncio
async def test_a_stale_decision_leaves_the_run_pending():
    counter = []
    agent, _, first, _ = await suspended(counter)
    with pytest.raises(ToolApprovalError):
        await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-999")
    result = await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-1")
    assert result.finish_reason == "stop"
    assert counter == ["/tmp/report.txt"]


@pytest.mark.asyncio
async def test_unknown_run_id_is_not_found():
    agent, _, _, _ = await suspended([])
    with pytest.raises(ToolApprovalError) as info:
        await agent.decline_tool_call_generate(run_id="no-such-run", tool_call_id="call-1")
    assert info.value.code == "approval_not_found"


@pytest.mark.asyncio
async def test_a_finished_run_cannot_be_approved():
    model = ScriptedModel([text_step("nothing to approve")])
    result = await make_agent(model, []).generate("hi", require_tool_approval=True)
    with pytest.raises(ToolApprovalError) as info:
        await make_agent(model, []).approve_tool_call_generate(run_id=result.run_id, tool_call_id="call-1")
    assert info.value.code == "approval_not_found"


# -- several calls ---------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_each_call_of_a_step_is_approved_in_turn():
    counter = []
    model = ScriptedModel([tool_step(("c1", "delete_file", {"path": "/a"}), ("c2", "delete_file", {"path": "/b"})),
                           text_step("Both deleted.")])
    agent = make_agent(model, counter, require_approval=True)
    first = await agent.generate("Delete both")
    assert first.suspend_payload["tool_call_id"] == "c1"
    second = await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="c1")
    assert second.finish_reason == "suspended"
    assert second.suspend_payload == {"tool_call_id": "c2", "tool_name": "delete_file", "args": {"path": "/b"}}
    assert counter == ["/a"]
    third = await agent.decline_tool_call_generate(run_id=first.run_id, tool_call_id="c2")
    assert third.text == "Both deleted."
    assert counter == ["/a"]
    assert [p["result"] for p in model.requests[1].messages[-1]["content"]] == [
        {"deleted": "/a"}, "Tool call was not approved by the user"]


# -- restart ---------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_resume_after_a_restart_with_a_new_agent_and_the_same_store():
    store = InMemoryStore()
    set_run_store(store)
    counter = []
    first_model = ScriptedModel([tool_step(("call-1", "delete_file", DELETE_ARGS))])
    first = await make_agent(first_model, counter).generate("Delete the report", require_tool_approval=True,
                                                            run_id="run-restart", max_steps=3)
    assert first.finish_reason == "suspended"

    # "restart": new model object, new agent object, same definition and the same store
    set_run_store(store)
    second_model = ScriptedModel([text_step("Deleted after restart.")])
    fresh = make_agent(second_model, counter)
    result = await fresh.approve_tool_call_generate(run_id="run-restart", tool_call_id="call-1")
    assert counter == ["/tmp/report.txt"]
    assert result.text == "Deleted after restart."
    assert result.run_id == "run-restart"
    assert [m["role"] for m in second_model.requests[0].messages] == ["system", "user", "assistant", "tool"]
    assert second_model.requests[0].messages[1]["content"] == "Delete the report"
    assert store.runs["run-restart"]["status"] == "completed"


@pytest.mark.asyncio
async def test_resume_keeps_the_stored_options():
    model = ScriptedModel([tool_step(("call-1", "delete_file", DELETE_ARGS)), tool_step(("call-2", "delete_file", DELETE_ARGS)),
                           text_step("never")])
    counter = []
    agent = make_agent(model, counter)
    first = await agent.generate("go", require_tool_approval=True, max_steps=2,
                                 model_settings={"temperature": 0.1})
    second = await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-1")
    assert model.requests[1].settings == {"temperature": 0.1}
    assert second.finish_reason == "suspended"  # still requires approval
    third = await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-2")
    assert len(third.steps) == 2  # max_steps=2 survived the suspensions
    assert model.calls == 2


@pytest.mark.asyncio
async def test_resume_keeps_the_request_context():
    seen = []
    model = ScriptedModel([tool_step(("c1", "who", {})), text_step("ok")])
    who = create_tool(id="who", execute=lambda i, ctx: seen.append(ctx.request_context) or "x", require_approval=True)
    agent = Agent(id="a", instructions="x", model=model, tools={"who": who})
    first = await agent.generate("hi", request_context={"user": "ada"})
    await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="c1")
    assert seen == [{"user": "ada"}]


@pytest.mark.asyncio
async def test_approval_on_a_memory_thread_saves_the_whole_exchange():
    memory = InMemoryMemory()
    counter = []
    agent = make_agent(scripted(), counter, memory=memory)
    first = await agent.generate("Delete the report", require_tool_approval=True,
                                 memory={"resource": "u1", "thread": "t1"})
    await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-1")
    stored = await memory.store.list_messages(resource_id="u1", thread_id="t1")
    # Mastra's stored format: the approved call's result joins the assistant message that made the
    # call, saved again under its id when the run resumes
    assert [m["role"] for m in stored] == ["user", "assistant", "assistant"]
    assert len({m["id"] for m in stored}) == 3
    assert stored[1]["content"]["parts"] == [{"type": "tool-invocation", "toolInvocation": {
        "state": "result", "toolCallId": "call-1", "toolName": "delete_file", "args": {"path": "/tmp/report.txt"},
        "result": {"deleted": "/tmp/report.txt"}}}]
    assert stored[2]["content"] == {"format": 2, "parts": [{"type": "text", "text": "Deleted."}], "content": "Deleted.",
                                    "metadata": {"agentId": agent.id, "runId": first.run_id, "modelId": "scripted",
                                                 "provider": "test"}}


@pytest.mark.asyncio
async def test_the_stored_state_of_a_suspended_run_is_json(run_store):
    import json

    memory = InMemoryMemory(generate_title={"model": ScriptedModel([text_step("A title")]), "instructions": "Title."})
    agent = make_agent(scripted(), [], memory=memory)
    first = await agent.generate("Delete the report", require_tool_approval=True, max_steps=3, on_finish=print,
                                 memory={"resource": "u1", "thread": "t1", "on_title_generated": print})
    state = run_store.suspended[first.run_id]["state"]
    assert json.loads(json.dumps(state))["options"] == {"max_steps": 3, "require_tool_approval": True}


@pytest.mark.asyncio
async def test_a_thread_title_is_generated_once_across_suspension_and_approval():
    import asyncio

    titles = []
    title_model = ScriptedModel([text_step("Report deletion"), text_step("Second title")])
    memory = InMemoryMemory(generate_title={"model": title_model})
    agent = make_agent(scripted(), [], memory=memory)
    first = await agent.generate("Delete the report", require_tool_approval=True,
                                 memory={"resource": "u1", "thread": "t1", "on_title_generated": titles.append})
    await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-1")
    await asyncio.sleep(0.05)
    assert titles == ["Report deletion"]
    assert title_model.calls == 1


@pytest.mark.asyncio
async def test_stream_with_approval_ends_suspended_with_an_approval_chunk():
    counter = []
    model = scripted()
    output = await make_agent(model, counter).stream("Delete the report", require_tool_approval=True)
    chunks = [c async for c in output.full_stream]
    assert [c["type"] for c in chunks][-3:] == ["tool-call", "tool-call-approval", "finish"]
    assert chunks[-1]["payload"]["stepResult"] == {"reason": "suspended"}
    result = await output.get_full_output()
    assert result.suspend_payload == {"tool_call_id": "call-1", "tool_name": "delete_file", "args": DELETE_ARGS}
    assert counter == []


# -- scoped to a thread ------------------------------------------------------------------------

@pytest.mark.asyncio
@pytest.mark.parametrize("decide", ["approve_tool_call", "decline_tool_call", "approve_tool_call_generate",
                                    "decline_tool_call_generate"])
async def test_a_decision_scoped_to_another_thread_is_not_found_and_leaves_the_run_pending(decide):
    set_run_store(InMemoryStore())
    counter = []
    agent = make_agent(scripted(), counter, memory=InMemoryMemory())
    first = await agent.generate("Delete the report", require_tool_approval=True,
                                 memory={"resource": "u1", "thread": "t1"})
    for resource_id, thread_id in (("u1", "t2"), ("u2", "t1")):
        for tool_call_id in ("call-1", "call-999"):  # not "stale": nothing of the run is named
            with pytest.raises(ToolApprovalError) as info:
                await getattr(agent, decide)(run_id=first.run_id, tool_call_id=tool_call_id,
                                             resource_id=resource_id, thread_id=thread_id)
            assert (info.value.code, info.value.message) == (
                "approval_not_found", f"no run is waiting for approval under run id {first.run_id!r}")
    result = await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-1",
                                                    resource_id="u1", thread_id="t1")
    assert result.finish_reason == "stop" and counter == ["/tmp/report.txt"]


@pytest.mark.asyncio
async def test_a_threadless_run_is_not_in_any_thread():
    set_run_store(InMemoryStore())
    agent, _, first, _ = await suspended([])
    with pytest.raises(ToolApprovalError) as info:
        await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-1", resource_id="u1",
                                               thread_id="t1")
    assert info.value.code == "approval_not_found"
    assert (await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-1")).finish_reason == "stop"


@pytest.mark.asyncio
async def test_a_thread_scope_needs_both_ids():
    agent, _, first, _ = await suspended([])
    with pytest.raises(AgentConfigError) as info:
        await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call-1", thread_id="t1")
    assert info.value.message == "resource_id: resource_id and thread_id go together (both, or neither)"
