"""The memory option with InMemoryMemory: history, read-only, threads, last_messages, titles."""

import asyncio

import pytest

from agents.runtime import Agent, AgentConfigError, InMemoryMemory

from agents.runtime.testing import ScriptedModel, text_step

MEM = {"resource": "user-1", "thread": "thread-1"}


def conversation(*texts, **memory_kwargs):
    memory = InMemoryMemory(**memory_kwargs)
    model = ScriptedModel([text_step(t) for t in texts])
    return Agent(id="a", instructions="x", model=model, memory=memory), model, memory


def seen(request):
    """(role, text) of what the model received, without the system messages."""
    out = []
    for m in request.messages:
        if m["role"] == "system":
            continue
        content = m["content"]
        out.append((m["role"], content if isinstance(content, str) else content[0].get("text")))
    return out


async def stored(memory, thread="thread-1", resource="user-1"):
    return [(m["role"], m["content"]["parts"][0].get("text"))
            for m in await memory.store.list_messages(resource_id=resource, thread_id=thread)]


@pytest.mark.asyncio
async def test_second_call_sees_the_history_of_the_thread():
    agent, model, _ = conversation("Hi Ada.", "Your name is Ada.")
    await agent.generate("My name is Ada.", memory=MEM)
    await agent.generate("What is my name?", memory=MEM)
    assert seen(model.requests[1]) == [("user", "My name is Ada."), ("assistant", "Hi Ada."),
                                       ("user", "What is my name?")]


@pytest.mark.asyncio
async def test_messages_are_saved_with_thread_and_resource():
    agent, _, memory = conversation("Hello.")
    await agent.generate("Hi", memory=MEM)
    messages = await memory.store.list_messages(resource_id="user-1", thread_id="thread-1")
    assert [(m["role"], m["threadId"], m["resourceId"]) for m in messages[:1]] == [("user", "thread-1", "user-1")]
    assert await stored(memory) == [("user", "Hi"), ("assistant", "Hello.")]


@pytest.mark.asyncio
async def test_other_threads_do_not_share_history():
    agent, model, _ = conversation("one", "two")
    await agent.generate("first thread", memory=MEM)
    await agent.generate("second thread", memory={"resource": "user-1", "thread": "thread-2"})
    assert seen(model.requests[1]) == [("user", "second thread")]


@pytest.mark.asyncio
async def test_another_resources_thread_of_the_same_id_is_another_thread():
    agent, model, _ = conversation("one", "two")
    await agent.generate("mine", memory=MEM)
    await agent.generate("theirs", memory={"resource": "user-2", "thread": "thread-1"})
    assert seen(model.requests[1]) == [("user", "theirs")]  # none of user-1's history


@pytest.mark.asyncio
async def test_read_only_memory_reads_history_but_writes_nothing():
    agent, model, memory = conversation("Hello.", "Still here.")
    await agent.generate("Hi", memory=MEM)
    await agent.generate("Peek", memory={**MEM, "options": {"read_only": True}})
    assert seen(model.requests[1]) == [("user", "Hi"), ("assistant", "Hello."), ("user", "Peek")]
    assert await stored(memory) == [("user", "Hi"), ("assistant", "Hello.")]


@pytest.mark.asyncio
async def test_read_only_memory_does_not_create_the_thread():
    agent, _, memory = conversation("Hello.")
    await agent.generate("Hi", memory={**MEM, "options": {"readOnly": True}})
    assert await memory.store.get_thread(resource_id="user-1", thread_id="thread-1") is None


@pytest.mark.asyncio
async def test_read_only_memory_configured_on_the_memory_object():
    agent, _, memory = conversation("Hello.", read_only=True)
    await agent.generate("Hi", memory=MEM)
    assert memory.store.messages == {}


@pytest.mark.asyncio
async def test_thread_dict_creates_the_thread_with_title_and_metadata():
    agent, _, memory = conversation("Hello.")
    await agent.generate("Hi", memory={"resource": "user-1",
                                       "thread": {"id": "thread-1", "title": "Support", "metadata": {"plan": "pro"}}})
    thread = await memory.store.get_thread(resource_id="user-1", thread_id="thread-1")
    assert (thread["id"], thread["resourceId"], thread["title"], thread["metadata"]) == (
        "thread-1", "user-1", "Support", {"plan": "pro"})


@pytest.mark.asyncio
async def test_thread_dict_updates_title_and_merges_metadata():
    agent, _, memory = conversation("one", "two")
    await agent.generate("Hi", memory={"resource": "user-1",
                                       "thread": {"id": "thread-1", "title": "Old", "metadata": {"plan": "pro"}}})
    await agent.generate("Again", memory={"resource": "user-1",
                                          "thread": {"id": "thread-1", "title": "New", "metadata": {"seat": 3}}})
    thread = await memory.store.get_thread(resource_id="user-1", thread_id="thread-1")
    assert (thread["title"], thread["metadata"]) == ("New", {"plan": "pro", "seat": 3})


@pytest.mark.asyncio
async def test_last_messages_limits_the_history():
    agent, model, _ = conversation("a1", "a2", "a3")
    await agent.generate("u1", memory=MEM)
    await agent.generate("u2", memory=MEM)
    await agent.generate("u3", memory={**MEM, "options": {"last_messages": 2}})
    assert seen(model.requests[2]) == [("user", "u2"), ("assistant", "a2"), ("user", "u3")]


@pytest.mark.asyncio
async def test_last_messages_zero_sends_no_history():
    agent, model, _ = conversation("a1", "a2")
    await agent.generate("u1", memory=MEM)
    await agent.generate("u2", memory={**MEM, "options": {"lastMessages": 0}})
    assert seen(model.requests[1]) == [("user", "u2")]


@pytest.mark.asyncio
async def test_last_messages_false_sends_the_whole_history():
    agent, model, _ = conversation("a1", "a2", "a3", last_messages=1)
    await agent.generate("u1", memory=MEM)
    await agent.generate("u2", memory=MEM)
    await agent.generate("u3", memory={**MEM, "options": {"last_messages": False}})
    assert len(seen(model.requests[2])) == 5


@pytest.mark.asyncio
async def test_memory_default_last_messages_is_ten():
    assert InMemoryMemory().last_messages == 10


@pytest.mark.asyncio
async def test_generate_title_runs_in_the_background_and_calls_back():
    titles = []
    done = asyncio.Event()

    def on_title(title):
        titles.append(title)
        done.set()

    memory = InMemoryMemory(generate_title=True)
    model = ScriptedModel([text_step("Sure, here is a plan."), text_step("  Trip   to Lagos  ")])
    agent = Agent(id="a", instructions="x", model=model, memory=memory)
    result = await agent.generate("Plan a trip to Lagos", memory={**MEM, "on_title_generated": on_title})
    assert result.text == "Sure, here is a plan."
    await asyncio.wait_for(done.wait(), timeout=5)
    assert titles == ["Trip to Lagos"]
    assert (await memory.store.get_thread(resource_id="user-1", thread_id="thread-1"))["title"] == "Trip to Lagos"
    title_request = model.requests[1]
    assert title_request.messages[-1] == {"role": "user", "content": "Plan a trip to Lagos"}
    assert title_request.messages[0]["role"] == "system"


@pytest.mark.asyncio
async def test_generate_title_can_be_asked_per_call():
    done = asyncio.Event()
    agent, model, memory = conversation("answer", "Per call title")
    await agent.generate("hello", memory={**MEM, "options": {"generate_title": True},
                                          "on_title_generated": lambda t: done.set()})
    await asyncio.wait_for(done.wait(), timeout=5)
    assert (await memory.store.get_thread(resource_id="user-1", thread_id="thread-1"))["title"] == "Per call title"


@pytest.mark.asyncio
async def test_generate_title_uses_its_own_model_and_instructions():
    done = asyncio.Event()
    title_model = ScriptedModel([text_step("Custom title")])
    memory = InMemoryMemory(generate_title={"model": title_model, "instructions": "Title it."})
    model = ScriptedModel([text_step("answer")])
    agent = Agent(id="a", instructions="x", model=model, memory=memory)
    await agent.generate("hello", memory={**MEM, "on_title_generated": lambda t: done.set()})
    await asyncio.wait_for(done.wait(), timeout=5)
    assert title_model.requests[0].messages == [{"role": "system", "content": "Title it."},
                                                {"role": "user", "content": "hello"}]
    assert model.calls == 1


@pytest.mark.asyncio
async def test_no_title_is_generated_when_the_thread_has_one():
    memory = InMemoryMemory(generate_title=True)
    model = ScriptedModel([text_step("answer")])
    agent = Agent(id="a", instructions="x", model=model, memory=memory)
    await agent.generate("hello", memory={"resource": "user-1", "thread": {"id": "thread-1", "title": "Given"}})
    await asyncio.sleep(0.05)
    assert model.calls == 1
    assert (await memory.store.get_thread(resource_id="user-1", thread_id="thread-1"))["title"] == "Given"


@pytest.mark.asyncio
async def test_memory_option_without_agent_memory_is_a_config_error():
    model = ScriptedModel([text_step("x")])
    with pytest.raises(AgentConfigError) as info:
        await Agent(id="a", instructions="x", model=model).generate("hi", memory=MEM)
    assert info.value.field == "memory"
    assert model.calls == 0


@pytest.mark.parametrize("memory, field", [
    ("thread-1", "options.memory"),
    ({"thread": "t"}, "options.memory.resource"),
    ({"resource": "u"}, "options.memory.thread"),
    ({"resource": "u", "thread": {"title": "x"}}, "options.memory.thread.id"),
    ({"resource": "u", "thread": "t", "bogus": 1}, "options.memory.bogus"),
    ({"resource": "u", "thread": "t", "options": {"semantic": True}}, "options.memory.options.semantic"),
    ({"resource": "u", "thread": "t", "options": {"last_messages": -1}}, "options.memory.options.last_messages"),
    ({"resource": "u", "thread": "t", "on_title_generated": "cb"}, "options.memory.on_title_generated"),
])
@pytest.mark.asyncio
async def test_invalid_memory_option_names_the_field(memory, field):
    agent, model, _ = conversation("x")
    with pytest.raises(AgentConfigError) as info:
        await agent.generate("hi", memory=memory)
    assert info.value.field == field


def test_invalid_memory_configuration_names_the_field():
    with pytest.raises(AgentConfigError) as info:
        InMemoryMemory(last_messages=-1)
    assert info.value.field == "memory.last_messages"
    with pytest.raises(AgentConfigError) as info:
        InMemoryMemory(generate_title="yes")
    assert info.value.field == "memory.generate_title"


@pytest.mark.asyncio
async def test_tool_context_carries_thread_and_resource():
    from agents.runtime import create_tool
    from agents.runtime.testing import tool_step

    contexts = []
    model = ScriptedModel([tool_step(("c1", "t", {})), text_step("ok")])
    tool = create_tool(id="t", execute=lambda i, ctx: contexts.append((ctx.thread_id, ctx.resource_id)) or 1)
    agent = Agent(id="a", instructions="x", model=model, tools={"t": tool}, memory=InMemoryMemory())
    await agent.generate("hi", memory=MEM)
    assert contexts == [("thread-1", "user-1")]


@pytest.mark.asyncio
async def test_a_failed_run_still_saves_its_input():
    from agents.runtime import ModelError

    memory = InMemoryMemory()
    agent = Agent(id="a", instructions="x", model=ScriptedModel([ModelError("down")]), memory=memory)
    result = await agent.generate("Do not lose me", memory=MEM)
    assert result.finish_reason == "error"
    saved = await memory.store.list_messages(resource_id="user-1", thread_id="thread-1")
    assert [(m["role"], m["content"]["parts"]) for m in saved] == [
        ("user", [{"type": "text", "text": "Do not lose me"}]), ("assistant", [])]
    assert saved[1]["content"]["metadata"] == {"runId": result.run_id, "agentId": "a",
                                               "error": {"code": "model_error", "message": "down"}}
    # the failure is for the thread's readers: the model of the next run does not see it
    model = ScriptedModel([text_step("back")])
    await Agent(id="a", instructions="x", model=model, memory=memory).generate("again", memory=MEM)
    assert seen(model.requests[0]) == [("user", "Do not lose me"), ("user", "again")]
