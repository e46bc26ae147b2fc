"""Memory on the Django models: history, limits, read-only, thread records, ownership, titles,
saving per step. Every check looks at the rows in the database."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async

from agents.memory import Memory
from agents.runtime.stored_messages import to_model_messages
from agents.models import Message, Thread
from agents.runtime import Agent, create_tool

from agents.runtime.testing import ScriptedModel, text_step, tool_step

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

SYSTEM = {"role": "system", "content": "Be brief."}


def make_agent(model, memory=None, **kwargs) -> Agent:
    return Agent(id="mem-agent", instructions="Be brief.", model=model,
                 memory=memory if memory is not None else Memory(), **kwargs)


@sync_to_async
def rows(thread_id: str) -> list[tuple[str, object]]:
    """The thread's history as the model is shown it (read from Mastra's stored format)."""
    stored = [m.to_dict() for m in Message.objects.filter(thread__thread_id=thread_id).order_by("id")]
    return [(m["role"], m["content"]) for m in to_model_messages(stored)]


@sync_to_async
def thread_row(thread_id: str) -> Thread | None:
    return Thread.objects.filter(thread_id=thread_id).first()


@sync_to_async
def counts() -> tuple[int, int]:
    return Thread.objects.count(), Message.objects.count()


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


# -- history ---------------------------------------------------------------------------------

async def test_second_generate_on_the_thread_sees_the_first_exchange():
    model = ScriptedModel([text_step("Hi, Ann."), text_step("You are Ann.")])
    agent = make_agent(model)
    mem = {"resource": "user-1", "thread": "thread-1"}

    first = await agent.generate("My name is Ann.", memory=mem)
    assert first.text == "Hi, Ann."
    assert first.remembered_messages == []
    second = await agent.generate("What is my name?", memory=mem)

    assert second.text == "You are Ann."
    assert model.requests[0].messages == [SYSTEM, {"role": "user", "content": "My name is Ann."}]
    assert model.requests[1].messages == [
        SYSTEM,
        {"role": "user", "content": "My name is Ann."},
        assistant("Hi, Ann."),
        {"role": "user", "content": "What is my name?"},
    ]
    assert [(m["role"], m["threadId"], m["resourceId"]) for m in second.remembered_messages] == [
        ("user", "thread-1", "user-1"), ("assistant", "thread-1", "user-1")]
    assert await rows("thread-1") == [
        ("user", "My name is Ann."),
        ("assistant", [{"type": "text", "text": "Hi, Ann."}]),
        ("user", "What is my name?"),
        ("assistant", [{"type": "text", "text": "You are Ann."}]),
    ]
    thread = await thread_row("thread-1")
    assert (thread.resource_id, thread.title, thread.metadata) == ("user-1", "", {})
    model.assert_done()


async def test_threads_do_not_share_history():
    model = ScriptedModel([text_step("one"), text_step("two")])
    agent = make_agent(model)
    await agent.generate("first thread", memory={"resource": "user-1", "thread": "a"})
    await agent.generate("second thread", memory={"resource": "user-1", "thread": "b"})
    assert model.requests[1].messages == [SYSTEM, {"role": "user", "content": "second thread"}]
    assert [r[1] for r in await rows("a")] == ["first thread", [{"type": "text", "text": "one"}]]
    assert [r[1] for r in await rows("b")] == ["second thread", [{"type": "text", "text": "two"}]]


async def test_last_messages_limits_the_history_the_model_sees():
    model = ScriptedModel([text_step("a1"), text_step("a2"), text_step("a3")])
    agent = make_agent(model, Memory(last_messages=2))
    mem = {"resource": "user-1", "thread": "thread-1"}
    await agent.generate("q1", memory=mem)
    await agent.generate("q2", memory=mem)
    await agent.generate("q3", memory=mem)

    assert model.requests[2].messages == [SYSTEM, {"role": "user", "content": "q2"}, assistant("a2"),
                                          {"role": "user", "content": "q3"}]
    # everything is stored; only the model's view is limited
    assert [r[0] for r in await rows("thread-1")] == ["user", "assistant"] * 3


async def test_last_messages_per_call_override_and_zero():
    model = ScriptedModel([text_step("a1"), text_step("a2"), text_step("a3")])
    agent = make_agent(model, Memory(last_messages=10))
    mem = {"resource": "user-1", "thread": "thread-1"}
    await agent.generate("q1", memory=mem)
    await agent.generate("q2", memory={**mem, "options": {"last_messages": 1}})
    await agent.generate("q3", memory={**mem, "options": {"last_messages": 0}})

    assert model.requests[1].messages == [SYSTEM, assistant("a1"), {"role": "user", "content": "q2"}]
    assert model.requests[2].messages == [SYSTEM, {"role": "user", "content": "q3"}]
    assert len(await rows("thread-1")) == 6


async def test_read_only_writes_no_thread_and_no_message_rows():
    model = ScriptedModel([text_step("hello")])
    agent = make_agent(model, Memory(read_only=True))
    result = await agent.generate("hi", memory={"resource": "user-1", "thread": "ro-thread"})
    assert result.text == "hello"
    assert await counts() == (0, 0)
    assert await thread_row("ro-thread") is None


async def test_read_only_call_sees_history_but_stores_nothing_new():
    model = ScriptedModel([text_step("stored answer"), text_step("read-only answer")])
    agent = make_agent(model)
    mem = {"resource": "user-1", "thread": "thread-1"}
    await agent.generate("stored question", memory=mem)
    before = (await thread_row("thread-1")).updated_at

    await agent.generate("peek", memory={**mem, "thread": {"id": "thread-1", "title": "ignored"},
                                         "options": {"read_only": True}})

    assert model.requests[1].messages == [SYSTEM, {"role": "user", "content": "stored question"},
                                          assistant("stored answer"), {"role": "user", "content": "peek"}]
    assert await rows("thread-1") == [("user", "stored question"),
                                      ("assistant", [{"type": "text", "text": "stored answer"}])]
    thread = await thread_row("thread-1")
    assert (thread.title, thread.updated_at) == ("", before)
    assert await counts() == (1, 2)


# -- the thread record -----------------------------------------------------------------------

async def test_thread_dict_creates_then_updates_title_and_merges_metadata():
    model = ScriptedModel([text_step("one"), text_step("two"), text_step("three")])
    agent = make_agent(model)
    await agent.generate("hi", memory={"resource": "user-1",
                                       "thread": {"id": "t-meta", "title": "First title",
                                                  "metadata": {"a": 1, "b": "x"}}})
    thread = await thread_row("t-meta")
    assert (thread.resource_id, thread.title, thread.metadata) == ("user-1", "First title", {"a": 1, "b": "x"})

    await agent.generate("again", memory={"resource": "user-1",
                                          "thread": {"id": "t-meta", "title": "Second title",
                                                     "metadata": {"b": "y", "c": [1, 2]}}})
    thread = await thread_row("t-meta")
    assert (thread.title, thread.metadata) == ("Second title", {"a": 1, "b": "y", "c": [1, 2]})

    # a plain id leaves title and metadata alone
    await agent.generate("third", memory={"resource": "user-1", "thread": "t-meta"})
    thread = await thread_row("t-meta")
    assert (thread.title, thread.metadata) == ("Second title", {"a": 1, "b": "y", "c": [1, 2]})
    assert await counts() == (1, 6)


async def test_another_resources_thread_of_the_same_id_is_another_thread():
    model = ScriptedModel([text_step("mine"), text_step("yours")])
    agent = make_agent(model)
    await agent.generate("owner's message", memory={"resource": "owner", "thread": "shared-id"})

    await agent.generate("intruder", memory={"resource": "intruder", "thread": {"id": "shared-id", "title": "x"}})

    assert model.calls == 2
    theirs = await sync_to_async(lambda: Thread.objects.get(resource_id="intruder", thread_id="shared-id"))()
    their_rows = await sync_to_async(lambda: [(m.role, m.content) for m in theirs.messages.order_by("id")])()
    answer_meta = their_rows[1][1].pop("metadata")
    assert answer_meta["agentId"] == "mem-agent" and set(answer_meta) == {"agentId", "runId", "modelId", "provider"}
    assert (theirs.title, their_rows) == ("x", [
        ("user", {"format": 2, "parts": [{"type": "text", "text": "intruder"}], "content": "intruder"}),
        ("assistant", {"format": 2, "parts": [{"type": "text", "text": "yours"}], "content": "yours"})])
    owner = await sync_to_async(lambda: Thread.objects.get(resource_id="owner", thread_id="shared-id"))()
    assert owner.title == ""
    owner_rows = await sync_to_async(lambda: [(m.role, m.seen_by_model()) for m in owner.messages.order_by("id")])()
    assert owner_rows == [("user", "owner's message"), ("assistant", [{"type": "text", "text": "mine"}])]


# -- titles ----------------------------------------------------------------------------------

async def wait_for(predicate, timeout: float = 5.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met within the time limit")
        await asyncio.sleep(0.02)


async def test_generate_title_stores_a_title_and_calls_on_title_generated():
    title_model = ScriptedModel([text_step("  Weather   in Lagos \n")], model_id="titles")
    model = ScriptedModel([text_step("It is sunny.")])
    agent = make_agent(model, Memory(generate_title={"model": title_model, "instructions": "Title it."}))
    titles: list[str] = []

    async def on_title(title: str) -> None:
        titles.append(title)

    result = await agent.generate("What is the weather in Lagos?",
                                  memory={"resource": "user-1", "thread": "t-title", "on_title_generated": on_title})
    assert result.text == "It is sunny."

    await wait_for(lambda: sync_to_async(lambda: Thread.objects.get(thread_id="t-title").title)())
    await wait_for(lambda: asyncio.sleep(0, result=bool(titles)))
    assert titles == ["Weather in Lagos"]
    assert (await thread_row("t-title")).title == "Weather in Lagos"
    assert title_model.requests[0].messages == [{"role": "system", "content": "Title it."},
                                                {"role": "user", "content": "What is the weather in Lagos?"}]
    model.assert_done()


async def test_generate_title_uses_the_agent_model_and_only_once():
    model = ScriptedModel([text_step("Sure."), text_step("Greeting chat"), text_step("Again.")])
    agent = make_agent(model, Memory(generate_title=True))
    mem = {"resource": "user-1", "thread": "t-title2"}
    await agent.generate("Hello there", memory=mem)
    await wait_for(lambda: sync_to_async(lambda: Thread.objects.get(thread_id="t-title2").title)())
    assert (await thread_row("t-title2")).title == "Greeting chat"
    assert model.requests[1].messages[-1] == {"role": "user", "content": "Hello there"}

    await agent.generate("Second", memory=mem)  # titled already: no title call (the script has none left)
    await asyncio.sleep(0.05)
    model.assert_done()
    assert model.calls == 3
    assert (await thread_row("t-title2")).title == "Greeting chat"


async def test_a_given_title_is_not_overwritten_by_generate_title():
    model = ScriptedModel([text_step("ok")])
    agent = make_agent(model, Memory(generate_title=True))
    await agent.generate("hi", memory={"resource": "user-1", "thread": {"id": "t-named", "title": "Mine"}})
    await asyncio.sleep(0.05)
    assert model.calls == 1
    assert (await thread_row("t-named")).title == "Mine"


# -- saving per step -------------------------------------------------------------------------

def counter_tool(log: list):
    def execute(input):
        log.append(input["n"])
        return {"n": input["n"] + 1}

    return create_tool(id="inc", description="Add one.",
                       input_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
                       execute=execute)


def tool_loop_model(seen: list, thread_id: str) -> ScriptedModel:
    """Three steps (tool, tool, text); steps 2 and 3 record how many messages are stored."""

    def recording(step):
        async def play(request):
            seen.append(len(await rows(thread_id)))
            return step
        return play

    return ScriptedModel([tool_step(("c1", "inc", {"n": 1})),
                          recording(tool_step(("c2", "inc", {"n": 2}))),
                          recording(text_step("done"))])


async def test_save_per_step_writes_messages_after_each_step():
    seen: list[int] = []
    log: list[int] = []
    model = tool_loop_model(seen, "t-steps")
    agent = make_agent(model, tools={"inc": counter_tool(log)})
    result = await agent.generate("count", memory={"resource": "user-1", "thread": "t-steps"}, save_per_step=True)

    assert result.text == "done" and log == [1, 2]
    # before step 2: user, assistant(call 1), tool(result 1); before step 3: + assistant(call 2), tool(result 2)
    assert seen == [3, 5]
    stored = await rows("t-steps")
    assert [r[0] for r in stored] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert stored[2][1] == [{"type": "tool-result", "toolCallId": "c1", "toolName": "inc", "result": {"n": 2}}]
    assert stored[5][1] == [{"type": "text", "text": "done"}]


async def test_without_save_per_step_messages_are_written_at_the_end():
    seen: list[int] = []
    model = tool_loop_model(seen, "t-end")
    agent = make_agent(model, tools={"inc": counter_tool([])})
    await agent.generate("count", memory={"resource": "user-1", "thread": "t-end"})
    assert seen == [0, 0]
    assert [r[0] for r in await rows("t-end")] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


async def test_messages_keep_their_ids_and_order_across_runs():
    model = ScriptedModel([text_step("a"), text_step("b")])
    agent = make_agent(model)
    mem = {"resource": "user-1", "thread": "t-ids"}
    r1 = await agent.generate("x", memory=mem)
    r2 = await agent.generate("y", memory=mem)
    ids = await sync_to_async(lambda: list(Message.objects.filter(thread__thread_id="t-ids").order_by("id")
                                           .values_list("message_id", flat=True)))()
    assert ids == [m["id"] for m in r1.messages] + [m["id"] for m in r2.messages[2:]]
    assert [m["id"] for m in r2.remembered_messages] == [m["id"] for m in r1.messages]
