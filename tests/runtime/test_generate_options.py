"""Every option of ``generate()`` (Mastra's AgentExecutionOptions, snake_case)."""

import asyncio

import pytest

from agents.runtime import (AbortController, Agent, AgentConfigError, InMemoryMemory, StepResult, GenerateResult,
                            create_tool, has_tool_call, step_count_is)
from agents.runtime.testing import ScriptedModel, hang_step, text_step, tool_step


def ping_tool(calls=None):
    return create_tool(id="ping", description="Ping.", execute=lambda i: (calls.append(i) if calls is not None else None) or "pong")


def looping_model(n):
    """A model that calls ``ping`` n times, then answers."""
    return ScriptedModel([tool_step((f"c{i}", "ping", {})) for i in range(1, n + 1)] + [text_step("done")])


def agent_with(model, **kwargs):
    kwargs.setdefault("tools", {"ping": ping_tool()})
    return Agent(id="a", instructions="Be brief.", model=model, **kwargs)


def types(chunks):
    return [c["type"] for c in chunks]


# -- unknown options -------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_unknown_option_is_rejected_before_any_model_call():
    model = ScriptedModel([text_step("ok")])
    with pytest.raises(AgentConfigError) as info:
        await agent_with(model).generate("hi", max_stepz=3)
    assert info.value.field == "options.max_stepz"
    assert model.calls == 0


@pytest.mark.asyncio
async def test_a_structured_output_logger_must_be_a_logger():
    model = ScriptedModel([])
    with pytest.raises(AgentConfigError) as info:
        await agent_with(model).generate("hi", structured_output={"schema": {"type": "object"}, "logger": print})
    assert (info.value.field, str(info.value)) == (
        "options.structured_output.logger",
        "options.structured_output.logger: must be a logging.Logger (or an object with error, warning and info methods)")
    assert model.calls == 0


@pytest.mark.asyncio
async def test_camel_case_option_names_are_accepted():
    model = looping_model(3)
    result = await agent_with(model).generate("hi", maxSteps=2)
    assert len(result.steps) == 2


# -- max_steps and stop_when -----------------------------------------------------------------

@pytest.mark.asyncio
async def test_max_steps_defaults_to_five():
    model = looping_model(10)
    result = await agent_with(model).generate("hi")
    assert len(result.steps) == 5
    assert model.calls == 5
    assert result.finish_reason == "tool-calls"


@pytest.mark.asyncio
async def test_max_steps_stops_the_tool_loop():
    model = looping_model(10)
    result = await agent_with(model).generate("hi", max_steps=2)
    assert [s.finish_reason for s in result.steps] == ["tool-calls", "tool-calls"]
    assert model.calls == 2
    assert result.steps[-1].is_continued is False


@pytest.mark.asyncio
async def test_max_steps_must_be_a_positive_integer():
    with pytest.raises(AgentConfigError) as info:
        await agent_with(ScriptedModel([])).generate("hi", max_steps=0)
    assert info.value.field == "options.max_steps"


@pytest.mark.asyncio
async def test_the_loop_ends_when_the_model_answers_without_tools():
    model = looping_model(2)
    result = await agent_with(model).generate("hi", max_steps=10)
    assert [s.finish_reason for s in result.steps] == ["tool-calls", "tool-calls", "stop"]
    assert result.text == "done"


@pytest.mark.asyncio
async def test_stop_when_step_count_is_stops_after_that_many_steps():
    model = looping_model(10)
    result = await agent_with(model).generate("hi", max_steps=10, stop_when=step_count_is(3))
    assert len(result.steps) == 3


@pytest.mark.asyncio
async def test_stop_when_has_tool_call_stops_after_the_named_tool():
    model = ScriptedModel([tool_step(("c1", "ping", {})), tool_step(("c2", "finish", {})), text_step("never")])
    tools = {"ping": ping_tool(), "finish": create_tool(id="finish", execute=lambda i: "ok")}
    result = await agent_with(model, tools=tools).generate("hi", stop_when=has_tool_call("finish"))
    assert len(result.steps) == 2
    assert result.tool_results[-1]["payload"]["toolName"] == "finish"  # the tool still ran
    assert model.calls == 2


@pytest.mark.asyncio
async def test_stop_when_custom_callable_receives_the_steps():
    seen = []

    def stop(ctx):
        seen.append(len(ctx["steps"]))
        return ctx["steps"][-1].tool_calls[0]["payload"]["toolCallId"] == "c2"

    result = await agent_with(looping_model(5)).generate("hi", stop_when=stop)
    assert seen == [1, 2]
    assert len(result.steps) == 2


@pytest.mark.asyncio
async def test_stop_when_async_callable_is_awaited():
    async def stop(ctx):
        return len(ctx["steps"]) >= 1

    result = await agent_with(looping_model(5)).generate("hi", stop_when=stop)
    assert len(result.steps) == 1


@pytest.mark.asyncio
async def test_stop_when_list_stops_when_any_condition_holds():
    result = await agent_with(looping_model(5)).generate(
        "hi", stop_when=[has_tool_call("other"), step_count_is(2)])
    assert len(result.steps) == 2


@pytest.mark.asyncio
async def test_stop_when_must_be_callables():
    with pytest.raises(AgentConfigError) as info:
        await agent_with(ScriptedModel([])).generate("hi", stop_when=[3])
    assert info.value.field == "options.stop_when"


# -- on_iteration_complete -------------------------------------------------------------------

@pytest.mark.asyncio
async def test_on_iteration_complete_continue_false_stops_the_loop():
    model = looping_model(5)
    result = await agent_with(model).generate("hi", on_iteration_complete=lambda ctx: {"continue": False})
    assert len(result.steps) == 1
    assert model.calls == 1


@pytest.mark.asyncio
async def test_on_iteration_complete_feedback_is_a_user_message_in_the_next_request():
    model = ScriptedModel([text_step("draft"), text_step("final")])
    replies = iter([{"feedback": "Make it shorter."}, None])
    result = await agent_with(model).generate("hi", on_iteration_complete=lambda ctx: next(replies))
    last = model.requests[1].messages[-1]
    assert (last["role"], last["content"]) == ("user", "Make it shorter.")
    assert [m["role"] for m in model.requests[1].messages] == ["system", "user", "assistant", "user"]
    assert result.text == "final"


@pytest.mark.asyncio
async def test_on_iteration_complete_receives_the_iteration_context():
    seen = []
    model = ScriptedModel([tool_step(("c1", "ping", {})), text_step("done")])
    await agent_with(model).generate("hi", max_steps=4, on_iteration_complete=lambda ctx: seen.append(
        (ctx["iteration"], ctx["max_iterations"], ctx["text"], ctx["is_final"], ctx["finish_reason"],
         [c["payload"]["toolName"] for c in ctx["tool_calls"]])))
    assert seen == [(1, 4, "", False, "tool-calls", ["ping"]), (2, 4, "done", True, "stop", [])]


# -- callbacks -------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_on_chunk_sees_the_exact_chunk_sequence():
    chunks = []
    model = ScriptedModel([tool_step(("c1", "ping", {})), text_step("done")])
    await agent_with(model).generate("hi", on_chunk=chunks.append)
    assert types(chunks) == [
        "start",
        "step-start", "response-metadata", "tool-call", "tool-result", "step-finish",
        "step-start", "response-metadata", "text-start", "text-delta", "text-end", "step-finish",
        "finish",
    ]


@pytest.mark.asyncio
async def test_async_on_chunk_is_awaited_in_order():
    seen = []

    async def on_chunk(chunk):
        await asyncio.sleep(0)
        seen.append(chunk["type"])

    await agent_with(ScriptedModel([text_step("ok")])).generate("hi", on_chunk=on_chunk)
    assert seen[0] == "start" and seen[-1] == "finish"


@pytest.mark.asyncio
async def test_on_error_is_called_with_the_error():
    from agents.runtime import ModelError

    errors = []
    boom = ModelError("overloaded", code="overloaded", status=529)
    result = await agent_with(ScriptedModel([boom])).generate("hi", on_error=errors.append)
    assert errors == [{"error": boom}]
    assert result.error is boom


@pytest.mark.asyncio
async def test_on_step_finish_is_called_once_per_step_with_the_step_result():
    steps = []
    await agent_with(looping_model(1)).generate("hi", on_step_finish=steps.append)
    assert [type(s) for s in steps] == [StepResult, StepResult]
    assert [(s.step_number, s.finish_reason, s.text) for s in steps] == [(0, "tool-calls", ""), (1, "stop", "done")]


@pytest.mark.asyncio
async def test_on_finish_is_called_with_the_result():
    finished = []
    result = await agent_with(ScriptedModel([text_step("ok")])).generate("hi", on_finish=finished.append)
    assert finished == [result]
    assert isinstance(finished[0], GenerateResult)


@pytest.mark.asyncio
async def test_on_finish_errors_do_not_fail_the_run():
    def on_finish(result):
        raise RuntimeError("callback bug")

    result = await agent_with(ScriptedModel([text_step("ok")])).generate("hi", on_finish=on_finish)
    assert result.text == "ok"
    assert result.error is None


@pytest.mark.asyncio
async def test_callbacks_must_be_callable():
    with pytest.raises(AgentConfigError) as info:
        await agent_with(ScriptedModel([])).generate("hi", on_finish="print")
    assert info.value.field == "options.on_finish"


# -- abort -----------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_abort_signal_ends_a_hanging_step_with_finish_reason_abort():
    controller = AbortController()
    aborted = []
    chunks = []
    model = ScriptedModel([text_step("partial", hang=True)])

    def on_chunk(chunk):
        chunks.append(chunk)
        if chunk["type"] == "text-delta":
            asyncio.get_running_loop().call_later(0.01, controller.abort, "user pressed stop")

    result = await asyncio.wait_for(
        agent_with(model).generate("hi", abort_signal=controller.signal, on_chunk=on_chunk, on_abort=aborted.append),
        timeout=5)
    assert result.finish_reason == "abort"
    assert result.error is None
    assert aborted == [{"reason": "user pressed stop", "run_id": result.run_id}]
    assert types(chunks)[-2:] == ["abort", "finish"]
    assert chunks[-2]["payload"] == {"reason": "user pressed stop"}
    assert chunks[-1]["payload"]["stepResult"] == {"reason": "abort"}


@pytest.mark.asyncio
async def test_abort_during_a_tool_stops_the_run():
    controller = AbortController()
    started = []

    async def slow(input, ctx):
        started.append(True)
        controller.abort()
        await asyncio.sleep(10)
        return "late"

    model = ScriptedModel([tool_step(("c1", "slow", {})), text_step("never")])
    agent = agent_with(model, tools={"slow": create_tool(id="slow", execute=slow)})
    result = await asyncio.wait_for(agent.generate("hi", abort_signal=controller.signal), timeout=5)
    assert result.finish_reason == "abort"
    assert started == [True]
    assert model.calls == 1


@pytest.mark.asyncio
async def test_an_already_aborted_signal_runs_no_model_step():
    controller = AbortController()
    controller.abort("too late")
    model = ScriptedModel([hang_step()])
    result = await asyncio.wait_for(agent_with(model).generate("hi", abort_signal=controller.signal), timeout=5)
    assert result.finish_reason == "abort"


@pytest.mark.asyncio
async def test_abort_signal_must_be_an_abort_signal():
    with pytest.raises(AgentConfigError) as info:
        await agent_with(ScriptedModel([text_step("ok")])).generate("hi", abort_signal=AbortController())
    assert info.value.field == "options.abort_signal"


# -- prepare_step ----------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_prepare_step_changes_tool_choice_per_step():
    model = looping_model(1)

    def prepare(ctx):
        return {"tool_choice": "required"} if ctx["step_number"] == 0 else {"tool_choice": "none"}

    await agent_with(model).generate("hi", prepare_step=prepare)
    assert [r.tool_choice for r in model.requests] == ["required", "none"]
    assert [len(r.tools) for r in model.requests] == [1, 0]


@pytest.mark.asyncio
async def test_prepare_step_changes_the_model_per_step():
    first = ScriptedModel([tool_step(("c1", "ping", {}))], model_id="first")
    second = ScriptedModel([text_step("from second")], model_id="second")
    result = await agent_with(first).generate(
        "hi", prepare_step=lambda ctx: {"model": second} if ctx["step_number"] == 1 else None)
    assert (first.calls, second.calls) == (1, 1)
    assert result.text == "from second"
    assert result.steps[1].response["modelId"] == "second"


@pytest.mark.asyncio
async def test_prepare_step_model_may_be_a_model_string():
    first = ScriptedModel([tool_step(("c1", "ping", {}))])
    result = await agent_with(first).generate(
        "hi", prepare_step=lambda ctx: {"model": "local/echo"} if ctx["step_number"] == 1 else {})
    assert result.steps[1].response["modelId"] == "echo"


@pytest.mark.asyncio
async def test_prepare_step_changes_the_system_messages_per_step():
    model = looping_model(1)
    await agent_with(model).generate(
        "hi", prepare_step=lambda ctx: {"system": f"Step {ctx['step_number']}."} if ctx["step_number"] else {})
    assert model.requests[0].messages[0] == {"role": "system", "content": "Be brief."}
    assert model.requests[1].messages[0] == {"role": "system", "content": "Step 1."}


@pytest.mark.asyncio
async def test_prepare_step_changes_active_tools_per_step():
    model = looping_model(1)
    tools = {"ping": ping_tool(), "other": create_tool(id="other", execute=lambda i: 1)}
    await agent_with(model, tools=tools).generate(
        "hi", prepare_step=lambda ctx: {"active_tools": ["other"]} if ctx["step_number"] == 1 else {})
    assert [[t["name"] for t in r.tools] for r in model.requests] == [["ping", "other"], ["other"]]


# -- tools selection -------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_active_tools_limits_the_tools_sent_to_the_model():
    model = ScriptedModel([text_step("ok")])
    tools = {"ping": ping_tool(), "other": create_tool(id="other", execute=lambda i: 1)}
    await agent_with(model, tools=tools).generate("hi", active_tools=["other"])
    assert [t["name"] for t in model.requests[0].tools] == ["other"]


@pytest.mark.asyncio
async def test_tool_choice_none_sends_no_tools():
    model = ScriptedModel([text_step("ok")])
    await agent_with(model).generate("hi", tool_choice="none")
    assert (model.requests[0].tool_choice, model.requests[0].tools) == ("none", [])


@pytest.mark.asyncio
async def test_tool_choice_required_is_passed_to_the_model():
    model = ScriptedModel([text_step("ok")])
    await agent_with(model).generate("hi", tool_choice="required")
    assert model.requests[0].tool_choice == "required"
    assert [t["name"] for t in model.requests[0].tools] == ["ping"]


@pytest.mark.asyncio
async def test_tool_choice_auto_is_the_default():
    model = ScriptedModel([text_step("ok")])
    await agent_with(model).generate("hi")
    assert model.requests[0].tool_choice == "auto"


@pytest.mark.asyncio
async def test_tool_choice_specific_tool_is_passed_in_snake_case():
    model = ScriptedModel([text_step("ok")])
    await agent_with(model).generate("hi", tool_choice={"type": "tool", "toolName": "ping"})
    assert model.requests[0].tool_choice == {"type": "tool", "tool_name": "ping"}


@pytest.mark.asyncio
async def test_tool_choice_of_an_unknown_tool_is_rejected():
    model = ScriptedModel([text_step("ok")])
    with pytest.raises(AgentConfigError) as info:
        await agent_with(model).generate("hi", tool_choice={"type": "tool", "tool_name": "nope"})
    assert info.value.field == "options.tool_choice"
    assert model.calls == 0


@pytest.mark.asyncio
async def test_tool_choice_must_be_a_known_value():
    with pytest.raises(AgentConfigError) as info:
        await agent_with(ScriptedModel([])).generate("hi", tool_choice="sometimes")
    assert info.value.field == "options.tool_choice"


@pytest.mark.asyncio
async def test_toolsets_add_tools_for_the_call():
    calls = []
    model = ScriptedModel([tool_step(("c1", "lookup", {})), text_step("ok")])
    lookup = create_tool(id="lookup", execute=lambda i: calls.append(i) or "found")
    result = await agent_with(model).generate("hi", toolsets={"search": {"lookup": lookup}})
    assert [t["name"] for t in model.requests[0].tools] == ["ping", "lookup"]
    assert calls == [{}]
    assert result.tool_results[0]["payload"]["result"] == "found"


@pytest.mark.asyncio
async def test_client_tool_without_execute_ends_the_run_with_tool_calls():
    model = ScriptedModel([tool_step(("c1", "confirm", {"question": "Sure?"})), text_step("never")])
    confirm = create_tool(id="confirm", description="Ask the user.",
                          input_schema={"type": "object", "properties": {"question": {"type": "string"}}})
    result = await agent_with(model).generate("hi", client_tools={"confirm": confirm})
    assert result.finish_reason == "tool-calls"
    assert model.calls == 1
    assert [c["payload"] for c in result.tool_calls] == [
        {"toolCallId": "c1", "toolName": "confirm", "args": {"question": "Sure?"}}]
    assert result.tool_results == []


# -- tool concurrency ------------------------------------------------------------------------

def slow_tools(log):
    def make(name):
        async def execute(input):
            log.append(("start", name))
            await asyncio.sleep(0.05)
            log.append(("end", name))
            return name
        return create_tool(id=name, execute=execute)
    return {"one": make("one"), "two": make("two")}


def two_calls_model():
    return ScriptedModel([tool_step(("c1", "one", {}), ("c2", "two", {})), text_step("ok")])


@pytest.mark.asyncio
async def test_tool_calls_run_concurrently_by_default():
    log = []
    await agent_with(two_calls_model(), tools=slow_tools(log)).generate("hi")
    assert log == [("start", "one"), ("start", "two"), ("end", "one"), ("end", "two")]


@pytest.mark.asyncio
async def test_tool_calls_run_one_at_a_time_when_an_approval_may_be_needed():
    log = []
    tools = slow_tools(log)
    tools["guarded"] = create_tool(id="guarded", execute=lambda i: 1, require_approval=True)
    await agent_with(two_calls_model(), tools=tools).generate("hi")
    assert log == [("start", "one"), ("end", "one"), ("start", "two"), ("end", "two")]


@pytest.mark.asyncio
async def test_tool_call_concurrency_one_runs_calls_in_order():
    log = []
    await agent_with(two_calls_model(), tools=slow_tools(log)).generate("hi", tool_call_concurrency=1)
    assert log == [("start", "one"), ("end", "one"), ("start", "two"), ("end", "two")]


@pytest.mark.asyncio
async def test_tool_call_concurrency_must_be_positive():
    with pytest.raises(AgentConfigError) as info:
        await agent_with(ScriptedModel([])).generate("hi", tool_call_concurrency=0)
    assert info.value.field == "options.tool_call_concurrency"


# -- messages and system ---------------------------------------------------------------------

@pytest.mark.asyncio
async def test_context_messages_come_before_the_input():
    model = ScriptedModel([text_step("ok")])
    await agent_with(model).generate("What did I say?", context=[
        {"role": "user", "content": "My name is Ada."}, {"role": "assistant", "content": "Hello Ada."}])
    assert model.requests[0].messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "My name is Ada."},
        {"role": "assistant", "content": "Hello Ada."},
        {"role": "user", "content": "What did I say?"},
    ]


@pytest.mark.asyncio
async def test_context_messages_are_not_part_of_the_result_messages():
    model = ScriptedModel([text_step("ok")])
    result = await agent_with(model).generate("hi", context=["background"])
    assert [(m["role"], m["content"]) for m in result.messages] == [
        ("user", "hi"), ("assistant", [{"type": "text", "text": "ok"}])]


@pytest.mark.asyncio
async def test_instructions_option_replaces_the_agents_instructions():
    model = ScriptedModel([text_step("ok")])
    await agent_with(model).generate("hi", instructions=["Talk like a pirate.", "Be loud."])
    assert model.requests[0].messages[:2] == [{"role": "system", "content": "Talk like a pirate."},
                                              {"role": "system", "content": "Be loud."}]
    assert model.requests[0].messages[2] == {"role": "user", "content": "hi"}


@pytest.mark.asyncio
async def test_system_option_adds_to_the_agents_instructions():
    model = ScriptedModel([text_step("ok")])
    await agent_with(model).generate("hi", system={"role": "system", "content": "Today is Monday.",
                                                   "providerOptions": {"anthropic": {"cache": True}}})
    assert model.requests[0].messages[:2] == [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "Today is Monday.", "providerOptions": {"anthropic": {"cache": True}}}]


@pytest.mark.asyncio
async def test_input_may_be_a_list_of_strings_and_message_dicts():
    model = ScriptedModel([text_step("ok")])
    await agent_with(model).generate(["first", {"role": "user", "content": [{"type": "text", "text": "second"}]}])
    assert model.requests[0].messages[1:] == [
        {"role": "user", "content": "first"}, {"role": "user", "content": [{"type": "text", "text": "second"}]}]


# -- model settings and provider options -----------------------------------------------------

@pytest.mark.asyncio
async def test_model_settings_are_passed_through_in_snake_case():
    model = ScriptedModel([text_step("ok")])
    await agent_with(model).generate("hi", model_settings={"temperature": 0.3, "maxOutputTokens": 50,
                                                           "stopSequences": ["END"], "topP": 0.9})
    assert model.requests[0].settings == {"temperature": 0.3, "max_output_tokens": 50, "stop_sequences": ["END"],
                                          "top_p": 0.9}


@pytest.mark.asyncio
async def test_unknown_model_setting_is_rejected():
    model = ScriptedModel([text_step("ok")])
    with pytest.raises(AgentConfigError) as info:
        await agent_with(model).generate("hi", model_settings={"maxTokens": 50})
    assert info.value.field == "options.model_settings.max_tokens"
    assert model.calls == 0


@pytest.mark.asyncio
async def test_model_setting_of_the_wrong_type_is_rejected():
    with pytest.raises(AgentConfigError) as info:
        await agent_with(ScriptedModel([])).generate("hi", model_settings={"temperature": "hot"})
    assert info.value.field == "options.model_settings.temperature"


@pytest.mark.asyncio
async def test_provider_options_are_passed_through():
    model = ScriptedModel([text_step("ok")])
    await agent_with(model).generate("hi", provider_options={"openai": {"reasoningEffort": "low"}})
    assert model.requests[0].provider_options == {"openai": {"reasoningEffort": "low"}}


@pytest.mark.asyncio
async def test_provider_options_must_be_a_dict():
    with pytest.raises(AgentConfigError) as info:
        await agent_with(ScriptedModel([])).generate("hi", provider_options=["openai"])
    assert info.value.field == "options.provider_options"


# -- hooks -----------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_call_hooks_override_the_agents_hooks():
    seen = []
    model = ScriptedModel([tool_step(("c1", "ping", {})), text_step("ok")])
    agent = agent_with(model, hooks={"before_tool_call": lambda e: seen.append("agent")})
    await agent.generate("hi", hooks={"before_tool_call": lambda e: seen.append("call")})
    assert seen == ["call"]


@pytest.mark.asyncio
async def test_before_tool_call_can_skip_the_tool_with_an_output():
    calls = []
    model = ScriptedModel([tool_step(("c1", "ping", {"x": 1})), text_step("ok")])
    result = await agent_with(model, tools={"ping": ping_tool(calls)}).generate(
        "hi", hooks={"before_tool_call": lambda e: {"proceed": False, "output": {"cached": True}}})
    assert calls == []
    assert result.tool_results[0]["payload"] == {"toolCallId": "c1", "toolName": "ping", "result": {"cached": True}}
    assert model.requests[1].messages[-1]["content"] == [
        {"type": "tool-result", "toolCallId": "c1", "toolName": "ping", "result": {"cached": True}, "input": {"x": 1}}]


@pytest.mark.asyncio
async def test_agent_hook_still_runs_for_the_hook_the_call_does_not_override():
    seen = []
    model = ScriptedModel([tool_step(("c1", "ping", {})), text_step("ok")])
    agent = agent_with(model, hooks={"after_tool_call": lambda e: seen.append(("agent-after", e["output"]))})
    await agent.generate("hi", hooks={"before_tool_call": lambda e: seen.append(("call-before", e["tool_name"]))})
    assert seen == [("call-before", "ping"), ("agent-after", "pong")]


# -- memory persistence per step --------------------------------------------------------------

@pytest.mark.asyncio
async def test_save_per_step_saves_messages_after_each_step():
    memory = InMemoryMemory()
    snapshots = []

    async def second_step(request):
        stored = await memory.store.list_messages(resource_id="u1", thread_id="t1")
        snapshots.append([m["role"] for m in stored])
        return text_step("ok")

    model = ScriptedModel([tool_step(("c1", "ping", {})), second_step])
    await agent_with(model, memory=memory).generate("hi", memory={"resource": "u1", "thread": "t1"},
                                                    save_per_step=True)
    assert snapshots == [["user", "assistant"]]  # the tool result is on the assistant message
    stored = await memory.store.list_messages(resource_id="u1", thread_id="t1")
    assert [m["role"] for m in stored] == ["user", "assistant", "assistant"]
    assert stored[1]["content"]["parts"][0]["toolInvocation"]["state"] == "result"


@pytest.mark.asyncio
async def test_without_save_per_step_messages_are_saved_at_the_end():
    memory = InMemoryMemory()
    snapshots = []

    async def second_step(request):
        snapshots.append(len(await memory.store.list_messages(resource_id="u1", thread_id="t1")))
        return text_step("ok")

    model = ScriptedModel([tool_step(("c1", "ping", {})), second_step])
    await agent_with(model, memory=memory).generate("hi", memory={"resource": "u1", "thread": "t1"})
    assert snapshots == [0]
    assert len(await memory.store.list_messages(resource_id="u1", thread_id="t1")) == 3  # user, call+result, text


# -- run id, request context, raw chunks -----------------------------------------------------

@pytest.mark.asyncio
async def test_run_id_is_used_for_the_result_and_every_chunk():
    chunks = []
    result = await agent_with(looping_model(1)).generate("hi", run_id="run-42", on_chunk=chunks.append)
    assert result.run_id == "run-42"
    assert {c["runId"] for c in chunks} == {"run-42"}
    assert {c["runId"] for c in result.tool_calls + result.tool_results} == {"run-42"}


@pytest.mark.asyncio
async def test_run_id_is_generated_when_not_given():
    a = await agent_with(ScriptedModel([text_step("ok")])).generate("hi")
    b = await agent_with(ScriptedModel([text_step("ok")])).generate("hi")
    assert a.run_id and b.run_id and a.run_id != b.run_id


@pytest.mark.asyncio
async def test_run_id_must_be_a_non_empty_string():
    with pytest.raises(AgentConfigError) as info:
        await agent_with(ScriptedModel([])).generate("hi", run_id="")
    assert info.value.field == "options.run_id"


@pytest.mark.asyncio
async def test_request_context_reaches_tools_and_callable_instructions():
    seen = []
    model = ScriptedModel([tool_step(("c1", "whoami", {})), text_step("ok")])
    whoami = create_tool(id="whoami", execute=lambda i, ctx: seen.append(ctx.request_context) or ctx.request_context["user"])
    agent = Agent(id="a", instructions=lambda rc: f"User is {rc['user']}.", model=model, tools={"whoami": whoami})
    result = await agent.generate("hi", request_context={"user": "ada"})
    assert model.requests[0].messages[0] == {"role": "system", "content": "User is ada."}
    assert seen == [{"user": "ada"}]
    assert result.tool_results[0]["payload"]["result"] == "ada"


@pytest.mark.asyncio
async def test_request_context_must_be_a_dict():
    with pytest.raises(AgentConfigError) as info:
        await agent_with(ScriptedModel([])).generate("hi", request_context=["user"])
    assert info.value.field == "options.request_context"


def raw_model():
    return ScriptedModel([[
        {"type": "response-metadata", "id": "r1", "model_id": None, "timestamp": None, "headers": {}},
        {"type": "raw", "raw_value": {"choices": [{"delta": {"content": "ok"}}]}},
        {"type": "text-delta", "text": "ok"},
        {"type": "finish", "finish_reason": "stop", "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}},
    ]])


@pytest.mark.asyncio
async def test_include_raw_chunks_emits_raw_chunks():
    chunks = []
    model = raw_model()
    await agent_with(model).generate("hi", include_raw_chunks=True, on_chunk=chunks.append)
    assert model.requests[0].include_raw is True
    assert [c["payload"] for c in chunks if c["type"] == "raw"] == [
        {"rawValue": {"choices": [{"delta": {"content": "ok"}}]}}]


@pytest.mark.asyncio
async def test_raw_chunks_are_not_emitted_by_default():
    chunks = []
    model = raw_model()
    await agent_with(model).generate("hi", on_chunk=chunks.append)
    assert model.requests[0].include_raw is False
    assert "raw" not in types(chunks)


# -- model override --------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_model_option_overrides_the_agents_model():
    agent_model = ScriptedModel([])
    call_model = ScriptedModel([text_step("call model")])
    result = await agent_with(agent_model).generate("hi", model=call_model)
    assert result.text == "call model"
    assert agent_model.calls == 0


@pytest.mark.asyncio
async def test_abort_reaches_a_running_sub_agent():
    controller = AbortController()
    sub_model = ScriptedModel([hang_step()])
    helper = Agent(id="helper", instructions="x", model=sub_model)
    model = ScriptedModel([tool_step(("c1", "agent-helper", {"prompt": "work"})), text_step("never")])
    boss = Agent(id="boss", instructions="x", model=model, agents={"helper": helper})

    def on_chunk(chunk):
        if chunk["type"] == "tool-call":
            asyncio.get_running_loop().call_later(0.02, controller.abort, "stop all")

    result = await asyncio.wait_for(boss.generate("hi", abort_signal=controller.signal, on_chunk=on_chunk), timeout=5)
    assert result.finish_reason == "abort"
    assert sub_model.calls == 1
    assert model.calls == 1
