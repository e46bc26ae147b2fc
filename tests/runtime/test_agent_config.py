"""The Agent constructor: every parameter, its dynamic forms and its validation."""

import pytest

from agents.runtime import Agent, AgentConfigError, InMemoryMemory, create_tool
from agents.runtime.delegation import SUB_AGENT_INPUT
from agents.runtime.errors import RequestContextError
from agents.runtime.testing import ScriptedModel, text_step, tool_step


def sys_of(request):
    return [m for m in request.messages if m["role"] == "system"]


def echo_tool(calls=None):
    def execute(input, context):
        if calls is not None:
            calls.append(input)
        return {"echo": input["value"]}

    return create_tool(id="echo", description="Echo a value.",
                       input_schema={"type": "object", "properties": {"value": {"type": "string"}},
                                     "required": ["value"]},
                       execute=execute)


# -- identity --------------------------------------------------------------------------------

def test_id_name_description_are_kept():
    agent = Agent(id="support", name="Support Agent", description="Helps users.", instructions="x",
                  model=ScriptedModel([]))
    assert (agent.id, agent.name, agent.description) == ("support", "Support Agent", "Helps users.")


def test_name_defaults_to_id():
    agent = Agent(id="support", instructions="x", model=ScriptedModel([]))
    assert agent.name == "support"
    assert agent.description == ""


@pytest.mark.parametrize("kwargs, field", [
    ({"id": ""}, "id"),
    ({"id": "  "}, "id"),
    ({"id": 3}, "id"),
    ({"name": 5}, "name"),
    ({"description": 5}, "description"),
    ({"metadata": 5}, "metadata"),
    ({"instructions": None}, "instructions"),
    ({"instructions": 5}, "instructions"),
    ({"instructions": [5]}, "instructions"),
    ({"instructions": {"role": "user", "content": "x"}}, "instructions"),
    ({"instructions": {"role": "system", "content": "x", "provider_options": 3}}, "instructions"),
    ({"model": None}, "model"),
    ({"model": 5}, "model"),
    ({"model": "gpt-4o"}, "model"),
    ({"model": "nope/model"}, "model"),
    ({"model": {"id": "local/echo", "bogus": 1}}, "model"),
    ({"tools": ["echo"]}, "tools"),
    ({"tools": {"echo": "not a tool"}}, "tools.echo"),
    ({"hooks": {"on_tool": print}}, "hooks.on_tool"),
    ({"hooks": {"before_tool_call": 3}}, "hooks.before_tool_call"),
    ({"hooks": "x"}, "hooks"),
    ({"agents": {"helper": "not an agent"}}, "agents"),
    ({"default_options": 3}, "default_options"),
    ({"memory": "memory"}, "memory"),
    ({"input_processors": "p"}, "input_processors"),
    ({"output_processors": 3}, "output_processors"),
    ({"max_processor_retries": -1}, "max_processor_retries"),
    ({"max_processor_retries": True}, "max_processor_retries"),
    ({"request_context_schema": 3}, "request_context_schema"),
    ({"request_context_schema": {"type": "no-such-type"}}, "request_context_schema"),
    ({"notifications": {"bogus": 1}}, "notifications"),
    ({"notifications": "x"}, "notifications"),
    ({"editor": "x"}, "editor"),
    ({"editor": {"bogus": True}}, "editor.bogus"),
    ({"editor": {"instructions": "yes"}}, "editor.instructions"),
    ({"editor": {"tools": {"name": True}}}, "editor.tools"),
])
def test_invalid_config_names_the_field(kwargs, field):
    base = {"id": "a", "instructions": "x", "model": ScriptedModel([])}
    base.update(kwargs)
    with pytest.raises(AgentConfigError) as info:
        Agent(**base)
    assert info.value.field == field
    assert info.value.code == "agent_config_error"


def test_an_unknown_keyword_is_a_config_error_naming_it():
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model=ScriptedModel([]), temprature=0.2)
    assert (info.value.field, info.value.code, info.value.message) == (
        "temprature", "agent_config_error", "temprature: unknown option")


def test_a_camel_case_keyword_names_its_snake_case_spelling():
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model=ScriptedModel([]), defaultOptions={"max_steps": 2})
    assert (info.value.field, info.value.code, info.value.message) == (
        "defaultOptions", "agent_config_error", "defaultOptions: unknown option (the keyword is 'default_options')")


@pytest.mark.parametrize("keyword", ["default_generate_options_legacy", "defaultStreamOptionsLegacy"])
def test_a_mastra_option_not_supported_yet_says_so(keyword):
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model=ScriptedModel([]), **{keyword: {}})
    assert (info.value.field, info.value.code, info.value.message) == (
        keyword, "unsupported_option", f"{keyword}: is a Mastra option this runtime does not support yet")


def test_invalid_default_options_name_the_option():
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model=ScriptedModel([]), default_options={"bogus": 1})
    assert info.value.field == "default_options.bogus"


def test_invalid_default_option_value_names_the_option():
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model=ScriptedModel([]), default_options={"max_steps": 0})
    assert info.value.field == "default_options.max_steps"


# -- metadata --------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_static_metadata_is_returned_as_given():
    agent = Agent(id="a", instructions="x", model=ScriptedModel([]), metadata={"team": "billing"})
    assert await agent.get_metadata() == {"team": "billing"}


@pytest.mark.asyncio
async def test_callable_metadata_receives_request_context():
    agent = Agent(id="a", instructions="x", model=ScriptedModel([]),
                  metadata=lambda rc: {"tier": rc.get("tier", "free")})
    assert await agent.get_metadata({"tier": "pro"}) == {"tier": "pro"}
    assert await agent.get_metadata() == {"tier": "free"}


@pytest.mark.asyncio
async def test_async_callable_metadata_is_awaited():
    async def metadata(rc):
        return {"user": rc["user"]}

    agent = Agent(id="a", instructions="x", model=ScriptedModel([]), metadata=metadata)
    assert await agent.get_metadata({"user": "u1"}) == {"user": "u1"}


# -- instructions ----------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_string_instructions_become_one_system_message():
    model = ScriptedModel([text_step("ok")])
    await Agent(id="a", instructions="Be brief.", model=model).generate("hi")
    assert model.requests[0].messages == [{"role": "system", "content": "Be brief."},
                                          {"role": "user", "content": "hi"}]


@pytest.mark.asyncio
async def test_list_of_string_instructions_become_system_messages_in_order():
    model = ScriptedModel([text_step("ok")])
    await Agent(id="a", instructions=["Be brief.", "Answer in French."], model=model).generate("hi")
    assert sys_of(model.requests[0]) == [{"role": "system", "content": "Be brief."},
                                         {"role": "system", "content": "Answer in French."}]


@pytest.mark.asyncio
async def test_system_dict_instructions_keep_provider_options():
    model = ScriptedModel([text_step("ok")])
    instructions = {"role": "system", "content": "Be brief.",
                    "provider_options": {"anthropic": {"cacheControl": {"type": "ephemeral"}}}}
    await Agent(id="a", instructions=instructions, model=model).generate("hi")
    assert sys_of(model.requests[0]) == [{"role": "system", "content": "Be brief.",
                                          "providerOptions": {"anthropic": {"cacheControl": {"type": "ephemeral"}}}}]


@pytest.mark.asyncio
async def test_list_of_system_dicts_become_system_messages():
    model = ScriptedModel([text_step("ok")])
    instructions = [{"role": "system", "content": "One."},
                    {"role": "system", "content": "Two.", "providerOptions": {"openai": {"x": 1}}}]
    await Agent(id="a", instructions=instructions, model=model).generate("hi")
    assert sys_of(model.requests[0]) == [{"role": "system", "content": "One."},
                                         {"role": "system", "content": "Two.", "providerOptions": {"openai": {"x": 1}}}]


@pytest.mark.asyncio
async def test_sync_callable_instructions_receive_request_context():
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="a", instructions=lambda rc: f"Speak {rc['language']}.", model=model)
    await agent.generate("hi", request_context={"language": "Yoruba"})
    assert sys_of(model.requests[0]) == [{"role": "system", "content": "Speak Yoruba."}]


@pytest.mark.asyncio
async def test_async_callable_instructions_are_awaited():
    async def instructions(rc):
        return ["Hello " + rc["user"], {"role": "system", "content": "Second"}]

    model = ScriptedModel([text_step("ok")])
    await Agent(id="a", instructions=instructions, model=model).generate("hi", request_context={"user": "Ada"})
    assert sys_of(model.requests[0]) == [{"role": "system", "content": "Hello Ada"},
                                         {"role": "system", "content": "Second"}]


@pytest.mark.asyncio
async def test_callable_instructions_returning_a_bad_shape_raise_config_error():
    agent = Agent(id="a", instructions=lambda rc: 42, model=ScriptedModel([text_step("ok")]))
    with pytest.raises(AgentConfigError) as info:
        await agent.generate("hi")
    assert info.value.field == "instructions"


# -- model -----------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_model_string_resolves_a_provider_model():
    result = await Agent(id="a", instructions="x", model="local/echo").generate("hello")
    assert result.text == "echo: hello"
    assert result.response["modelId"] == "echo"


@pytest.mark.asyncio
async def test_model_instance_is_used_as_given():
    model = ScriptedModel([text_step("from the script")])
    result = await Agent(id="a", instructions="x", model=model).generate("hi")
    assert result.text == "from the script"
    assert model.calls == 1


@pytest.mark.asyncio
async def test_model_config_dict_is_resolved():
    agent = Agent(id="a", instructions="x", model={"id": "local/echo", "chunk_size": 4})
    out = await agent.stream("hello")
    deltas = [c["payload"]["text"] async for c in out.full_stream if c["type"] == "text-delta"]
    assert deltas == ["echo", ": he", "llo"]


@pytest.mark.asyncio
async def test_callable_model_is_chosen_per_request_context():
    fast = ScriptedModel([text_step("fast")], model_id="fast")
    smart = ScriptedModel([text_step("smart")], model_id="smart")
    agent = Agent(id="a", instructions="x", model=lambda rc: smart if rc.get("tier") == "pro" else fast)
    assert (await agent.generate("hi", request_context={"tier": "pro"})).text == "smart"
    assert (await agent.generate("hi")).text == "fast"


@pytest.mark.asyncio
async def test_callable_model_may_return_a_string():
    agent = Agent(id="a", instructions="x", model=lambda rc: "local/echo")
    assert (await agent.generate("ping")).text == "echo: ping"


# -- tools, hooks, sub-agents ----------------------------------------------------------------

@pytest.mark.asyncio
async def test_tools_dict_keys_are_the_names_the_model_sees():
    model = ScriptedModel([text_step("ok")])
    await Agent(id="a", instructions="x", model=model, tools={"say_back": echo_tool()}).generate("hi")
    assert model.requests[0].tools == [{
        "name": "say_back", "description": "Echo a value.",
        "parameters": {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"],
                       "additionalProperties": False},
    }]


@pytest.mark.asyncio
async def test_callable_tools_receive_request_context():
    model = ScriptedModel([text_step("ok"), text_step("ok")])
    agent = Agent(id="a", instructions="x", model=model,
                  tools=lambda rc: {"echo": echo_tool()} if rc.get("admin") else {})
    await agent.generate("hi", request_context={"admin": True})
    await agent.generate("hi")
    assert [t["name"] for t in model.requests[0].tools] == ["echo"]
    assert model.requests[1].tools == []


@pytest.mark.asyncio
async def test_agent_hooks_run_around_tool_calls():
    seen = []
    model = ScriptedModel([tool_step(("c1", "echo", {"value": "v"})), text_step("done")])
    agent = Agent(id="a", instructions="x", model=model, tools={"echo": echo_tool()}, hooks={
        "before_tool_call": lambda e: seen.append(("before", e["tool_name"], e["input"])),
        "after_tool_call": lambda e: seen.append(("after", e["tool_name"], e["output"], e["error"])),
    })
    await agent.generate("hi")
    assert seen == [("before", "echo", {"value": "v"}), ("after", "echo", {"echo": "v"}, None)]


@pytest.mark.asyncio
async def test_camel_case_hook_names_are_accepted():
    seen = []
    model = ScriptedModel([tool_step(("c1", "echo", {"value": "v"})), text_step("done")])
    agent = Agent(id="a", instructions="x", model=model, tools={"echo": echo_tool()},
                  hooks={"beforeToolCall": lambda e: seen.append(e["tool_name"])})
    await agent.generate("hi")
    assert seen == ["echo"]


@pytest.mark.asyncio
async def test_sub_agent_is_exposed_as_an_agent_tool():
    helper = Agent(id="helper", description="Knows facts.", instructions="You help.",
                   model=ScriptedModel([text_step("Paris")]))
    model = ScriptedModel([text_step("ok")])
    await Agent(id="boss", instructions="x", model=model, agents={"helper": helper}).generate("hi")
    assert model.requests[0].tools == [{
        "name": "agent-helper", "description": "Knows facts.",
        "parameters": {**SUB_AGENT_INPUT, "additionalProperties": False}}]
    assert SUB_AGENT_INPUT["required"] == ["prompt"]
    assert sorted(SUB_AGENT_INPUT["properties"]) == ["instructions", "maxSteps", "prompt"]


@pytest.mark.asyncio
async def test_sub_agent_tool_runs_the_sub_agent_and_returns_its_text():
    helper_model = ScriptedModel([text_step("Paris")])
    helper = Agent(id="helper", instructions="You help.", model=helper_model)
    model = ScriptedModel([tool_step(("c1", "agent-helper", {"prompt": "Capital of France?"})), text_step("Paris it is")])
    result = await Agent(id="boss", instructions="x", model=model, agents={"helper": helper}).generate("hi")
    # the sub-agent gets the supervisor's conversation (without tool parts) as context, then its task
    assert helper_model.requests[0].messages == [{"role": "system", "content": "You help."},
                                                 {"role": "user", "content": "hi"},
                                                 {"role": "user", "content": "Capital of France?"}]
    assert result.tool_results[0]["payload"]["result"] == {"text": "Paris"}
    assert result.text == "Paris it is"


# -- default options -------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_default_options_apply_when_the_call_does_not_set_them():
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="a", instructions="x", model=model, default_options={"model_settings": {"temperature": 0.2},
                                                                          "provider_options": {"openai": {"user": "d"}}})
    await agent.generate("hi")
    assert model.requests[0].settings == {"temperature": 0.2}
    assert model.requests[0].provider_options == {"openai": {"user": "d"}}


@pytest.mark.asyncio
async def test_call_options_override_default_options():
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="a", instructions="x", model=model,
                  default_options={"model_settings": {"temperature": 0.2}, "provider_options": {"openai": {"user": "d"}}})
    await agent.generate("hi", model_settings={"temperature": 0.9})
    assert model.requests[0].settings == {"temperature": 0.9}
    assert model.requests[0].provider_options == {"openai": {"user": "d"}}


@pytest.mark.asyncio
async def test_default_max_steps_limits_the_loop():
    model = ScriptedModel([tool_step(("c1", "echo", {"value": "v"})), text_step("never")])
    agent = Agent(id="a", instructions="x", model=model, tools={"echo": echo_tool()},
                  default_options={"maxSteps": 1})
    result = await agent.generate("hi")
    assert len(result.steps) == 1
    assert model.calls == 1


@pytest.mark.asyncio
async def test_callable_default_options_receive_request_context():
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="a", instructions="x", model=model,
                  default_options=lambda rc: {"model_settings": {"seed": rc["seed"]}})
    await agent.generate("hi", request_context={"seed": 7})
    assert model.requests[0].settings == {"seed": 7}


# -- processors ------------------------------------------------------------------------------

class Upper:
    id = "upper"

    def process_input(self, *, messages, abort, request_context):
        return [{**m, "content": m["content"].upper()} if m["role"] == "user" else m for m in messages]


class Suffix:
    id = "suffix"

    def process_output_result(self, *, messages, text, abort):
        return text + " [checked]"


@pytest.mark.asyncio
async def test_input_processors_change_what_the_model_sees():
    model = ScriptedModel([text_step("ok")])
    await Agent(id="a", instructions="x", model=model, input_processors=[Upper()]).generate("hello")
    assert model.requests[0].messages[-1] == {"role": "user", "content": "HELLO"}


@pytest.mark.asyncio
async def test_output_processors_change_the_result_text():
    model = ScriptedModel([text_step("ok")])
    result = await Agent(id="a", instructions="x", model=model, output_processors=[Suffix()]).generate("hi")
    assert result.text == "ok [checked]"


class Exclaim:
    id = "exclaim"

    def process_input(self, *, messages, abort, request_context):
        return [{**m, "content": m["content"] + "!"} if m["role"] == "user" else m for m in messages]


@pytest.mark.asyncio
async def test_call_processors_replace_the_agents_processors():
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="a", instructions="x", model=model, input_processors=[Upper()])
    await agent.generate("hello", input_processors=[Exclaim()])
    assert model.requests[0].messages[-1] == {"role": "user", "content": "hello!"}


@pytest.mark.asyncio
async def test_an_empty_call_processor_list_disables_the_agents_processors():
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="a", instructions="x", model=model, input_processors=[Upper()])
    await agent.generate("hello", input_processors=[])
    assert model.requests[0].messages[-1] == {"role": "user", "content": "hello"}


class RetryOnBad:
    id = "no-bad-words"

    def process_output_stream(self, *, chunk, abort):
        if chunk["type"] == "text-delta" and "bad" in chunk["payload"]["text"]:
            abort("Please answer politely.", retry=True)
        return chunk


@pytest.mark.asyncio
async def test_max_processor_retries_lets_a_processor_retry_the_step_with_feedback():
    model = ScriptedModel([text_step("bad answer"), text_step("good answer")])
    agent = Agent(id="a", instructions="x", model=model, output_processors=[RetryOnBad()], max_processor_retries=1)
    result = await agent.generate("hi")
    assert result.text == "good answer"
    assert result.tripwire is None
    assert model.requests[1].messages[-1]["role"] == "user"
    assert model.requests[1].messages[-1]["content"] == "Please answer politely."


@pytest.mark.asyncio
async def test_without_processor_retries_the_retry_request_ends_in_a_tripwire():
    model = ScriptedModel([text_step("bad answer")])
    result = await Agent(id="a", instructions="x", model=model, output_processors=[RetryOnBad()]).generate("hi")
    assert result.tripwire["reason"] == "Please answer politely."
    assert result.tripwire["processorId"] == "no-bad-words"
    assert model.calls == 1


# -- request context schema ------------------------------------------------------------------

@pytest.mark.asyncio
async def test_invalid_request_context_raises_before_any_model_call():
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="a", instructions="x", model=model,
                  request_context_schema={"type": "object", "properties": {"user_id": {"type": "string"}},
                                          "required": ["user_id"]})
    with pytest.raises(RequestContextError) as info:
        await agent.generate("hi", request_context={"user_id": 5})
    assert info.value.code == "request_context_invalid"
    assert model.calls == 0


@pytest.mark.asyncio
async def test_missing_request_context_fails_the_schema():
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="a", instructions="x", model=model,
                  request_context_schema={"type": "object", "required": ["user_id"]})
    with pytest.raises(RequestContextError):
        await agent.generate("hi")
    assert model.calls == 0


@pytest.mark.asyncio
async def test_valid_request_context_passes_the_schema():
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="a", instructions="x", model=model,
                  request_context_schema={"type": "object", "required": ["user_id"]})
    assert (await agent.generate("hi", request_context={"user_id": "u1"})).text == "ok"


@pytest.mark.asyncio
async def test_request_context_schema_may_be_a_pydantic_model():
    import pydantic

    class Ctx(pydantic.BaseModel):
        user_id: str

    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="a", instructions="x", model=model, request_context_schema=Ctx)
    with pytest.raises(RequestContextError):
        await agent.generate("hi", request_context={})
    assert model.calls == 0


# -- memory, notifications, editor -----------------------------------------------------------

def test_memory_instance_is_kept():
    memory = InMemoryMemory()
    assert Agent(id="a", instructions="x", model=ScriptedModel([]), memory=memory).memory is memory


def test_notifications_keep_the_delivery_policy_in_snake_case():
    policy = {"urgent": "deliver"}
    agent = Agent(id="a", instructions="x", model=ScriptedModel([]), notifications={"deliveryPolicy": policy})
    assert agent.notifications == {"delivery_policy": policy}


def test_editor_shape_is_kept():
    editor = {"instructions": True, "tools": {"description": True}}
    assert Agent(id="a", instructions="x", model=ScriptedModel([]), editor=editor).editor == editor


@pytest.mark.asyncio
async def test_editor_instruction_override_replaces_the_instructions():
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="a", instructions="Old.", model=model, editor={"instructions": True})
    agent.apply_editor_overrides(instructions="New.")
    await agent.generate("hi")
    assert sys_of(model.requests[0]) == [{"role": "system", "content": "New."}]


def test_editor_lock_refuses_instruction_overrides():
    agent = Agent(id="a", instructions="Old.", model=ScriptedModel([]), editor={"tools": True})
    with pytest.raises(AgentConfigError) as info:
        agent.apply_editor_overrides(instructions="New.")
    assert info.value.field == "editor.instructions"


def test_editor_false_refuses_every_override():
    agent = Agent(id="a", instructions="Old.", model=ScriptedModel([]), editor=False)
    for kwargs, field in (({"instructions": "x"}, "editor.instructions"), ({"tools": []}, "editor.tools"),
                          ({"tool_descriptions": {"echo": "d"}}, "editor.tools.description")):
        with pytest.raises(AgentConfigError) as info:
            agent.apply_editor_overrides(**kwargs)
        assert info.value.field == field


def test_editor_description_only_lock_refuses_tool_list_overrides():
    agent = Agent(id="a", instructions="x", model=ScriptedModel([]), tools={"echo": echo_tool()},
                  editor={"tools": {"description": True}})
    with pytest.raises(AgentConfigError) as info:
        agent.apply_editor_overrides(tools=[])
    assert info.value.field == "editor.tools"


@pytest.mark.asyncio
async def test_editor_tool_description_override_reaches_the_model():
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="a", instructions="x", model=model, tools={"echo": echo_tool()},
                  editor={"tools": {"description": True}})
    agent.apply_editor_overrides(tool_descriptions={"echo": "Repeat the value back."})
    await agent.generate("hi")
    assert model.requests[0].tools[0]["description"] == "Repeat the value back."


@pytest.mark.asyncio
async def test_editor_tools_override_limits_the_tools():
    model = ScriptedModel([text_step("ok")])
    other = create_tool(id="other", execute=lambda i: i)
    agent = Agent(id="a", instructions="x", model=model, tools={"echo": echo_tool(), "other": other},
                  editor={"tools": True})
    agent.apply_editor_overrides(tools=["other"])
    await agent.generate("hi")
    assert [t["name"] for t in model.requests[0].tools] == ["other"]


@pytest.mark.asyncio
async def test_clear_editor_overrides_restores_the_code_definition():
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="a", instructions="Old.", model=model, editor={"instructions": True})
    agent.apply_editor_overrides(instructions="New.")
    agent.clear_editor_overrides()
    await agent.generate("hi")
    assert sys_of(model.requests[0]) == [{"role": "system", "content": "Old."}]


# -- caller_models: the model ids a caller over HTTP or the websocket may pick ----------------------
def test_caller_models_default_to_none_and_keep_their_order():
    assert Agent(id="a", instructions="i", model="local/echo").caller_models == ()
    agent = Agent(id="a", instructions="i", model="local/echo", caller_models=["openai/gpt-4o-mini", "local/echo"])
    assert agent.caller_models == ("openai/gpt-4o-mini", "local/echo")


@pytest.mark.parametrize("value,message", [
    ("openai/gpt-4o", "caller_models: must be a list of model ids ('provider/model' strings)"),
    (["gpt-4o"], "caller_models[0]: 'gpt-4o' is not a model id; expected 'provider/model', e.g. 'openai/gpt-4o' "
                 "(known providers: anthropic, google, local, openai)"),
    ([{"id": "openai/gpt-4o", "baseURL": "http://x"}], "caller_models[0]: a model id must be a string "
     "'provider/model', not dict {'id': 'openai/gpt-4o', 'baseURL': 'http://x'} (known providers: anthropic, google, "
     "local, openai)"),
])
def test_caller_models_are_model_id_strings(value, message):
    with pytest.raises(AgentConfigError) as caught:
        Agent(id="a", instructions="i", model="local/echo", caller_models=value)
    assert caught.value.code == "agent_config_error" and str(caught.value) == message
