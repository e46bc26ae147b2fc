"""The overrides hook of the runtime: a ``Mastra`` overrides provider asked at the start of each run."""

import pytest

from agents.runtime import Agent, AgentConfigError, Mastra, create_tool
from agents.runtime.overrides import AgentOverrides
from agents.runtime.testing import ScriptedModel, text_step, tool_step


class Provider:
    """Overrides by (agent id, selection status); records every question."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    async def agent_overrides(self, agent, selection):
        self.calls.append((agent.id, selection))
        return self.answers.get((agent.id, (selection or {}).get("status", "published")))


def tool(name):
    return create_tool(id=name, description=f"The {name} tool.", execute=lambda i: {"ok": name})


def system_of(request):
    return [m["content"] for m in request.messages if m["role"] == "system"]


async def test_the_published_overrides_replace_instructions_tools_and_descriptions():
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="bot", instructions="Code.", model=model, tools={"a": tool("a"), "b": tool("b")})
    provider = Provider({("bot", "published"): AgentOverrides(instructions="Edited.", tools=("b", "site"),
                                                              tool_descriptions={"b": "Edited b."})})
    Mastra(agents={"bot": agent}, tools={"site": tool("site")}, overrides=provider)
    await agent.generate("hi")
    request = model.requests[0]
    assert system_of(request) == ["Edited."]
    assert [(t["name"], t["description"]) for t in request.tools] == [("b", "Edited b."), ("site", "The site tool.")]
    assert provider.calls == [("bot", None)]


async def test_no_overrides_runs_the_code_definition():
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="bot", instructions="Code.", model=model, tools={"a": tool("a")})
    Mastra(agents={"bot": agent}, overrides=Provider({}))
    await agent.generate("hi")
    assert system_of(model.requests[0]) == ["Code."]
    assert [(t["name"], t["description"]) for t in model.requests[0].tools] == [("a", "The a tool.")]


async def test_the_call_selects_a_draft_and_the_instructions_option_still_wins():
    model = ScriptedModel([text_step("one"), text_step("two")])
    agent = Agent(id="bot", instructions="Code.", model=model)
    provider = Provider({("bot", "draft"): AgentOverrides(instructions="Draft.")})
    Mastra(agents={"bot": agent}, overrides=provider)
    await agent.generate("hi", versions={"agents": {"bot": {"status": "draft"}}})
    await agent.generate("hi", versions={"agents": {"bot": {"status": "draft"}}}, instructions="Call.")
    assert [system_of(r) for r in model.requests] == [["Draft."], ["Call."]]


async def test_versions_reach_a_sub_agent_call():
    sub_model = ScriptedModel([text_step("sub answer")])
    sub = Agent(id="helper", instructions="Helper code.", model=sub_model)
    model = ScriptedModel([tool_step(("c1", "agent-helper", {"prompt": "go"})), text_step("done")])
    boss = Agent(id="boss", instructions="Boss.", model=model, agents={"helper": sub})
    provider = Provider({("helper", "draft"): AgentOverrides(instructions="Helper draft.")})
    Mastra(agents={"boss": boss, "helper": sub}, overrides=provider)
    result = await boss.generate("hi", versions={"agents": {"helper": {"status": "draft"}}})
    assert result.text == "done"
    assert system_of(sub_model.requests[0]) == ["Helper draft."]
    assert provider.calls == [("boss", None), ("helper", {"status": "draft"})]


@pytest.mark.parametrize("versions, field", [
    ("x", "options.versions"),
    ({"bogus": {}}, "options.versions.bogus"),
    ({"agents": {"bot": {"status": "old"}}}, "options.versions.agents.bot.status"),
    ({"agents": {"bot": {"version_id": ""}}}, "options.versions.agents.bot.version_id"),
    ({"agents": {"bot": {"version_id": "1", "status": "draft"}}}, "options.versions.agents.bot"),
])
async def test_a_malformed_versions_option_names_the_field(versions, field):
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="bot", instructions="Code.", model=model)
    with pytest.raises(AgentConfigError) as info:
        await agent.generate("hi", versions=versions)
    assert info.value.field == field
    assert model.calls == 0


async def test_selecting_a_version_without_an_editor_is_refused():
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="bot", instructions="Code.", model=model)
    Mastra(agents={"bot": agent})
    with pytest.raises(AgentConfigError) as info:
        await agent.generate("hi", versions={"agents": {"bot": {"versionId": 3}}})
    assert info.value.message == ("options.versions.agents.bot: this agent's Mastra has no editor: "
                                  "there are no versions to select")


def test_the_site_tools_are_the_registered_ones_then_each_agents():
    a, b, c = tool("a"), tool("b"), tool("c")
    first = Agent(id="one", instructions="x", model=ScriptedModel([]), tools={"b": b, "a": tool("a")})
    second = Agent(id="two", instructions="x", model=ScriptedModel([]), tools={"c": c})
    site = Mastra(agents={"one": first, "two": second}, tools={"a": a})
    assert site.get_tools() == {"a": a, "b": b, "c": c}


def test_an_overrides_provider_needs_the_method():
    with pytest.raises(AgentConfigError) as info:
        Mastra(overrides=object())
    assert info.value.field == "overrides"


# -- the effective definition: one call for runs and for the API ------------------------------------
async def test_the_effective_definition_is_the_code_under_the_published_overrides():
    agent = Agent(id="bot", instructions="Code.", model=ScriptedModel([]), tools={"a": tool("a"), "b": tool("b")})
    provider = Provider({("bot", "published"): AgentOverrides(instructions="Edited.", tools=("b", "site"),
                                                              tool_descriptions={"b": "Edited b."}, version_id="7")})
    Mastra(agents={"bot": agent}, tools={"site": tool("site")}, overrides=provider)
    definition = await agent.get_definition()
    assert definition.instructions == [{"role": "system", "content": "Edited."}]
    assert list(definition.tools) == ["b", "site"]
    assert definition.tool_descriptions == {"b": "Edited b.", "site": "The site tool."}
    assert definition.version_id == "7"
    draft = await agent.get_definition(versions={"agents": {"bot": {"status": "draft"}}})
    assert draft.instructions == [{"role": "system", "content": "Code."}] and list(draft.tools) == ["a", "b"]
    assert draft.tool_descriptions == {"a": "The a tool.", "b": "The b tool."} and draft.version_id is None


@pytest.mark.parametrize("editor, system, tools", [
    (None, "Edited.", [("b", "Edited b.")]),
    (False, "Code.", [("a", "The a tool."), ("b", "The b tool.")]),
    ({"instructions": True}, "Edited.", [("a", "The a tool."), ("b", "The b tool.")]),
    ({"tools": {"description": True}}, "Code.", [("a", "The a tool."), ("b", "Edited b.")]),
    ({"tools": True}, "Code.", [("b", "Edited b.")]),
])
async def test_the_locks_apply_to_whatever_the_provider_answers(editor, system, tools):
    """A provider answering fields the agent's ``editor`` locks: the run and the definition drop them."""
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="bot", instructions="Code.", model=model, tools={"a": tool("a"), "b": tool("b")}, editor=editor)
    provider = Provider({("bot", "published"): AgentOverrides(instructions="Edited.", tools=("b",),
                                                              tool_descriptions={"b": "Edited b."})})
    Mastra(agents={"bot": agent}, overrides=provider)
    definition = await agent.get_definition()
    assert [m["content"] for m in definition.instructions] == [system]
    assert [(name, definition.tool_descriptions[name]) for name in definition.tools] == tools
    await agent.generate("hi")
    assert system_of(model.requests[0]) == [system]
    assert [(t["name"], t["description"]) for t in model.requests[0].tools] == tools


def test_the_editor_and_the_runtime_share_one_lock_rule():
    from agents.editor import locks
    from agents.runtime import overrides

    assert locks.EditorLocks is overrides.EditorLocks
    assert locks.OVERRIDE_FIELDS == overrides.OVERRIDE_FIELDS == ("instructions", "tools", "tool_descriptions",
                                                                  "model")


CHAIN = ({"model": "openai/gpt-4o", "max_retries": 0}, {"model": "local/echo", "max_retries": 1, "enabled": True})


@pytest.mark.parametrize("editor,editable", [(None, False), (False, False), ({"instructions": True}, False),
                                             ({"model": True}, True), ({"model": False, "tools": True}, False)])
def test_the_model_is_editable_only_where_the_code_says_model_true(editor, editable):
    from agents.runtime.overrides import EditorLocks

    locks = EditorLocks.of(editor)
    assert locks.editable("model") is editable
    assert locks.restrict(AgentOverrides(model=CHAIN)).model == (CHAIN if editable else None)


def test_editor_model_must_be_a_bool():
    with pytest.raises(AgentConfigError) as refused:
        Agent(id="bot", instructions="x", model="local/echo", editor={"model": "yes"})
    assert str(refused.value) == "editor.model: must be a bool"


async def test_a_published_chain_replaces_the_codes_model_and_fails_over(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code_model = ScriptedModel([text_step("from code")])
    agent = Agent(id="bot", instructions="x", model=code_model, editor={"model": True})
    Mastra(agents={"bot": agent}, overrides=Provider({("bot", "published"): AgentOverrides(model=CHAIN)}))
    result = await agent.generate("hello")
    # no OpenAI key: the first entry is skipped, the run answers on the chain's next model
    assert (result.text, result.models) == ("echo: hello", ["local/echo"])
    assert code_model.requests == []


async def test_a_locked_model_keeps_the_code_model_whatever_is_stored():
    code_model = ScriptedModel([text_step("from code")])
    agent = Agent(id="bot", instructions="x", model=code_model, editor={"instructions": True})
    Mastra(agents={"bot": agent}, overrides=Provider({("bot", "published"): AgentOverrides(model=CHAIN)}))
    assert (await agent.generate("hello")).text == "from code"


async def test_a_calls_own_model_wins_over_the_published_chain():
    agent = Agent(id="bot", instructions="x", model="local/echo", editor={"model": True})
    call_model = ScriptedModel([text_step("from the call")])
    Mastra(agents={"bot": agent}, overrides=Provider({("bot", "published"): AgentOverrides(model=CHAIN)}))
    assert (await agent.generate("hello", model=call_model)).text == "from the call"
