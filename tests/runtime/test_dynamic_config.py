"""Dynamic configuration: instructions, model, tools, sub-agents, default options and processors
as callables of the request context (sync or async), resolved for each run."""

import pytest

from agents.runtime import Agent, AgentConfigError, create_tool
from agents.runtime.testing import ScriptedModel, text_step, tool_step


def echo():
    return create_tool(id="echo", description="Echo.", execute=lambda i: "pong")


class Tag:
    def __init__(self, tag):
        self.id = f"tag-{tag}"
        self.tag = tag

    def process_input(self, *, messages):
        return [{**m, "content": f"[{self.tag}] {m['content']}"} for m in messages]


@pytest.mark.asyncio
async def test_every_part_is_resolved_per_run_from_the_request_context():
    pro = ScriptedModel([text_step("pro answer")])
    free = ScriptedModel([text_step("free answer")])
    helper = Agent(id="helper", instructions="x", model=ScriptedModel([]))

    async def model(rc):
        return pro if rc["tier"] == "pro" else free

    async def tools(rc):
        return {"echo": echo()} if rc["tier"] == "pro" else {}

    async def agents(rc):
        return {"research": helper} if rc["tier"] == "pro" else {}

    async def processors(rc):
        return [Tag(rc["tier"])]

    async def defaults(rc):
        return {"model_settings": {"temperature": 0.1 if rc["tier"] == "pro" else 0.9}}

    async def instructions(rc):
        return f"Serve a {rc['tier']} user."

    agent = Agent(id="a", instructions=instructions, model=model, tools=tools, agents=agents,
                  input_processors=processors, default_options=defaults)
    first = await agent.generate("hi", request_context={"tier": "pro"})
    second = await agent.generate("hi", request_context={"tier": "free"})
    assert (first.text, second.text) == ("pro answer", "free answer")
    assert [t["name"] for t in pro.requests[0].tools] == ["echo", "agent-research"]
    assert free.requests[0].tools == []
    assert pro.requests[0].messages == [{"role": "system", "content": "Serve a pro user."},
                                        {"role": "user", "content": "[pro] hi"}]
    assert free.requests[0].messages == [{"role": "system", "content": "Serve a free user."},
                                         {"role": "user", "content": "[free] hi"}]
    assert (pro.requests[0].settings, free.requests[0].settings) == ({"temperature": 0.1}, {"temperature": 0.9})


@pytest.mark.asyncio
async def test_sync_callables_work_the_same():
    model = ScriptedModel([tool_step(("c1", "echo", {})), text_step("done")])
    agent = Agent(id="a", instructions=lambda rc: "x", model=lambda rc: model, tools=lambda rc: {"echo": echo()},
                  output_processors=lambda rc: [], agents=lambda rc: {})
    result = await agent.generate("hi")
    assert result.tool_results[0]["payload"]["result"] == "pong"


@pytest.mark.asyncio
@pytest.mark.parametrize("kwargs, field", [
    ({"agents": lambda rc: {"x": "not an agent"}}, "agents"),
    ({"input_processors": lambda rc: [object()]}, "input_processors[0]"),
    ({"output_processors": lambda rc: "nope"}, "output_processors"),
    ({"tools": lambda rc: ["echo"]}, "tools"),
])
async def test_a_callable_returning_a_bad_value_is_a_config_error(kwargs, field):
    model = ScriptedModel([text_step("ok")])
    agent = Agent(id="a", instructions="x", model=model, **kwargs)
    with pytest.raises(AgentConfigError) as info:
        await agent.generate("hi")
    assert info.value.field == field
    assert model.calls == 0
