"""Sub-agents as tools and the ``delegation`` option: start hooks that change or reject a
delegation, complete hooks with bail and feedback, message filters, memory threads, aborts."""

import asyncio

import pytest

from agents.runtime import AbortController, Agent, AgentConfigError, InMemoryMemory
from agents.runtime.testing import ScriptedModel, hang_step, text_step, tool_step


def team(helper_steps, boss_steps, **helper_kwargs):
    helper_model = ScriptedModel(helper_steps)
    helper = Agent(id="helper", instructions="You help.", model=helper_model, **helper_kwargs)
    boss_model = ScriptedModel(boss_steps)
    boss = Agent(id="boss", instructions="You lead.", model=boss_model, agents={"research": helper})
    return boss, boss_model, helper_model


def delegate(prompt="Find it", **extra):
    return tool_step(("c1", "agent-research", {"prompt": prompt, **extra}))


def tool_result(result):
    return result.tool_results[0]["payload"]


@pytest.mark.asyncio
async def test_start_hook_sees_the_delegation_and_can_change_prompt_instructions_and_context():
    seen = []

    def start(ctx):
        seen.append({k: ctx[k] for k in ("primitive_id", "primitive_type", "prompt", "params", "iteration",
                                         "parent_agent_id", "tool_call_id")})
        ctx["request_context"]["tier"] = "gold"
        return {"modified_prompt": "Find it fast", "modified_instructions": "Be terse.", "modified_max_steps": 2}

    boss, boss_model, helper_model = team([text_step("found")], [delegate(), text_step("done")])
    result = await boss.generate("go", delegation={"onDelegationStart": start}, request_context={"user": "ann"})
    assert seen == [{"primitive_id": "helper", "primitive_type": "agent", "prompt": "Find it",
                     "params": {"instructions": None, "max_steps": None}, "iteration": 1,
                     "parent_agent_id": "boss", "tool_call_id": "c1"}]
    assert helper_model.requests[0].messages == [
        {"role": "system", "content": "You help."}, {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "go"}, {"role": "user", "content": "Find it fast"}]
    assert tool_result(result)["result"] == {"text": "found"}
    assert result.text == "done"


@pytest.mark.asyncio
async def test_request_context_changes_reach_the_sub_agent_only():
    contexts = []

    def start(ctx):
        ctx["request_context"]["tier"] = "gold"

    def instructions(rc):
        contexts.append(dict(rc))
        return "You help."

    helper = Agent(id="helper", instructions=instructions, model=ScriptedModel([text_step("ok")]))
    parent_rc = {"user": "ann"}
    boss = Agent(id="boss", instructions="x", model=ScriptedModel([delegate(), text_step("done")]),
                 agents={"research": helper})
    await boss.generate("go", delegation={"on_delegation_start": start}, request_context=parent_rc)
    assert contexts == [{"user": "ann", "tier": "gold"}]
    assert parent_rc == {"user": "ann"}


@pytest.mark.asyncio
async def test_a_rejected_delegation_never_runs_the_sub_agent_and_the_supervisor_sees_why():
    boss, boss_model, helper_model = team([], [delegate(), text_step("ok, I will do it")])
    result = await boss.generate("go", delegation={
        "on_delegation_start": lambda ctx: {"proceed": False, "rejection_reason": "Budget exhausted"}})
    assert helper_model.calls == 0
    assert tool_result(result)["result"] == {"text": "[Delegation Rejected] Budget exhausted"}
    assert boss_model.requests[1].messages[-1]["content"][0]["result"] == {"text": "[Delegation Rejected] Budget exhausted"}


@pytest.mark.asyncio
async def test_a_rejection_without_reason_says_it_was_the_start_hook():
    boss, _, _ = team([], [delegate(), text_step("ok")])
    result = await boss.generate("go", delegation={"on_delegation_start": lambda ctx: {"proceed": False}})
    assert tool_result(result)["result"] == {"text": "[Delegation Rejected] Delegation rejected by onDelegationStart hook"}


@pytest.mark.asyncio
async def test_complete_hook_gets_the_result_and_bail_stops_the_supervisor():
    completed = []

    def complete(ctx):
        completed.append((ctx["prompt"], ctx["success"], ctx["result"]["text"], ctx["result"]["finish_reason"]))
        ctx["bail"]()

    boss, boss_model, helper_model = team([text_step("the answer")], [delegate(), text_step("never")])
    result = await boss.generate("go", delegation={"on_delegation_complete": complete})
    assert completed == [("Find it", True, "the answer", "stop")]
    assert boss_model.calls == 1  # no step after the bail
    assert result.finish_reason == "tool-calls"
    assert tool_result(result)["result"] == {"text": "the answer"}


@pytest.mark.asyncio
async def test_feedback_is_saved_to_the_supervisors_memory_as_an_assistant_message():
    memory = InMemoryMemory()
    helper = Agent(id="helper", instructions="x", model=ScriptedModel([text_step("draft")]))
    boss = Agent(id="boss", instructions="x", model=ScriptedModel([delegate(), text_step("final")]),
                 agents={"research": helper}, memory=memory)
    result = await boss.generate("go", memory={"resource": "u1", "thread": "t1"}, delegation={
        "on_delegation_complete": lambda ctx: {"feedback": "Ask for sources next time."}})
    saved = await memory.store.list_messages(resource_id="u1", thread_id="t1")
    # Mastra's stored format: the tool result is on the assistant message that made the call
    assert [(m["role"], m.get("type")) for m in saved] == [
        ("user", None), ("assistant", None), ("assistant", "delegation-feedback"), ("assistant", None)]
    # no model wrote it: it names no model
    assert saved[2]["content"] == {"format": 2, "parts": [{"type": "text", "text": "Ask for sources next time."}],
                                   "content": "Ask for sources next time.",
                                   "metadata": {"agentId": "boss", "runId": result.run_id}}
    # the model does not see it in this run
    assert all("Ask for sources" not in str(m) for m in boss.model.requests[1].messages)
    assert result.text == "final"


@pytest.mark.asyncio
async def test_result_text_replaces_what_the_supervisor_model_sees():
    boss, boss_model, _ = team([text_step("")], [delegate(), text_step("ok")])
    result = await boss.generate("go", delegation={
        "on_delegation_complete": lambda ctx: {"result_text": "The helper found nothing."}})
    assert tool_result(result)["result"] == {"text": "The helper found nothing."}


@pytest.mark.asyncio
async def test_message_filter_chooses_what_the_sub_agent_receives():
    filtered = []

    def keep_last(ctx):
        filtered.append([m["content"] for m in ctx["messages"]])
        return ctx["messages"][-1:]

    boss, _, helper_model = team([text_step("ok")], [delegate(), text_step("done")])
    await boss.generate(["first", {"role": "assistant", "content": "noted"}, "second"],
                        delegation={"message_filter": keep_last})
    assert filtered == [["first", "noted", "second"]]
    assert helper_model.requests[0].messages[1:] == [{"role": "user", "content": "second"},
                                                     {"role": "user", "content": "Find it"}]


@pytest.mark.asyncio
async def test_a_failing_sub_agent_is_a_tool_error_and_the_complete_hook_knows():
    from agents.runtime import ModelError

    completed = []
    boss, boss_model, _ = team([ModelError("provider down")], [delegate(), text_step("sorry")])
    result = await boss.generate("go", delegation={
        "on_delegation_complete": lambda ctx: completed.append((ctx["success"], str(ctx["error"])))})
    assert completed == [(False, "provider down")]
    assert tool_result(result) == {"toolCallId": "c1", "toolName": "agent-research", "isError": True,
                                   "result": {"error": "DelegationError: sub-agent 'helper' failed: provider down"}}
    assert result.text == "sorry"


@pytest.mark.asyncio
async def test_hook_errors_are_ignored_by_default_and_fail_the_delegation_with_throw():
    def broken(ctx):
        raise ValueError("oops")

    boss, _, helper_model = team([text_step("fine")], [delegate(), text_step("done")])
    result = await boss.generate("go", delegation={"on_delegation_start": broken})
    assert tool_result(result)["result"] == {"text": "fine"}
    boss, _, helper_model = team([], [delegate(), text_step("done")])
    result = await boss.generate("go", delegation={"on_delegation_start": broken, "hook_error_strategy": "throw"})
    assert tool_result(result)["result"] == {
        "error": "DelegationError: delegation hook on_delegation_start failed: ValueError: oops"}
    assert helper_model.calls == 0


@pytest.mark.asyncio
async def test_an_unknown_sub_agent_is_a_clear_tool_error():
    boss, boss_model, _ = team([], [tool_step(("c1", "agent-nobody", {"prompt": "x"})), text_step("ok")])
    result = await boss.generate("go")
    assert tool_result(result)["result"] == {"error": "unknown sub-agent 'nobody'; sub-agents: research"}
    assert result.text == "ok"


@pytest.mark.asyncio
async def test_the_sub_agent_gets_a_thread_derived_from_the_supervisors():
    helper_memory = InMemoryMemory()
    helper = Agent(id="helper", instructions="x", model=ScriptedModel([text_step("noted")]), memory=helper_memory)
    boss = Agent(id="boss", instructions="x", model=ScriptedModel([delegate(), text_step("done")]),
                 agents={"research": helper}, memory=InMemoryMemory())
    result = await boss.generate("go", memory={"resource": "u1", "thread": "t1"})
    assert tool_result(result)["result"] == {"text": "noted", "subAgentThreadId": "t1--research",
                                             "subAgentResourceId": "u1"}
    saved = await helper_memory.store.list_messages(resource_id="u1", thread_id="t1--research")
    assert [m["role"] for m in saved] == ["user", "assistant"]


@pytest.mark.asyncio
async def test_abort_stops_a_running_sub_agent_and_the_supervisor():
    controller = AbortController()
    boss, boss_model, helper_model = team([hang_step()], [delegate(), text_step("never")])

    def on_chunk(chunk):
        if chunk["type"] == "tool-call":
            asyncio.get_running_loop().call_later(0.02, controller.abort, "stop")

    result = await asyncio.wait_for(boss.generate("go", abort_signal=controller.signal, on_chunk=on_chunk), 5)
    assert (result.finish_reason, helper_model.calls, boss_model.calls) == ("abort", 1, 1)


@pytest.mark.asyncio
@pytest.mark.parametrize("value, field", [
    ("x", "options.delegation"), ({"bogus": 1}, "options.delegation.bogus"),
    ({"on_delegation_start": 3}, "options.delegation.on_delegation_start"),
    ({"hookErrorStrategy": "loud"}, "options.delegation.hook_error_strategy"),
])
async def test_a_bad_delegation_option_is_rejected(value, field):
    boss, boss_model, _ = team([], [])
    with pytest.raises(AgentConfigError) as info:
        await boss.generate("go", delegation=value)
    assert info.value.field == field
