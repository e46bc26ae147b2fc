"""The memory thread API (Mastra's ``Memory``: threads and messages), written once and run against
every memory backend: subclass :class:`MemoryThreadContract` and give it ``make_memory(**options)``.

``tests/runtime/test_memory_threads.py`` runs it on ``InMemoryMemory``,
``tests/agents/test_memory_threads.py`` on the Django ``Memory`` (the test database).
"""

from __future__ import annotations

import asyncio

import pytest

from agents.runtime import Agent, AgentConfigError, MemoryThread, ThreadNotFoundError
from agents.runtime.signal import create_signal, render_signal
from agents.runtime.testing import ScriptedModel, text_step, tool_step
from agents.runtime.tools import create_tool

R, T = "alice", "t1"


def texts(messages: list[dict]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]["parts"][0].get("text", "")) for m in messages]


class MemoryThreadContract:
    """The behaviour every ``Memory`` shares (see the module docstring)."""

    def make_memory(self, **options):
        raise NotImplementedError

    async def tick(self) -> None:
        """Let the clock move, so that two writes get two ``updatedAt`` values."""
        await asyncio.sleep(0.002)

    # -- threads ---------------------------------------------------------------------------------

    async def test_create_get_update_delete_a_thread(self):
        memory = self.make_memory()
        created = await memory.create_thread(resource_id=R, thread_id=T, title="First", metadata={"k": 1})
        assert isinstance(created, MemoryThread)
        assert (created.id, created.resource_id, created.title, created.metadata) == (T, R, "First", {"k": 1})
        assert created.to_dict() == {"id": T, "resourceId": R, "title": "First", "metadata": {"k": 1},
                                     "createdAt": created.created_at, "updatedAt": created.updated_at}
        assert await memory.get_thread_by_id(resource_id=R, thread_id=T) == created
        updated = await memory.update_thread(resource_id=R, thread_id=T, title="Renamed", metadata={"j": 2})
        assert (updated.title, updated.metadata) == ("Renamed", {"k": 1, "j": 2})  # merged, as Mastra's
        await memory.delete_thread(resource_id=R, thread_id=T)
        assert await memory.get_thread_by_id(resource_id=R, thread_id=T) is None
        await memory.delete_thread(resource_id=R, thread_id=T)  # nothing to delete: no error

    async def test_a_new_thread_gets_an_id_and_threads_are_per_resource(self):
        memory = self.make_memory()
        thread = await memory.create_thread(resource_id=R)
        assert len(thread.id) == 36 and thread.title == "" and thread.metadata == {}
        assert await memory.get_thread_by_id(resource_id="bob", thread_id=thread.id) is None

    async def test_updating_a_missing_thread_raises_thread_not_found(self):
        memory = self.make_memory()
        with pytest.raises(ThreadNotFoundError) as caught:
            await memory.update_thread(resource_id=R, thread_id="nope", title="x")
        assert caught.value.code == "thread_not_found"
        assert await memory.get_thread_by_id(resource_id=R, thread_id="nope") is None

    async def test_list_threads_pages_a_resource_newest_first(self):
        memory = self.make_memory()
        for n in range(3):
            await memory.create_thread(resource_id=R, thread_id=f"a{n}", metadata={"team": "x" if n else "y"})
            await self.tick()
        await memory.create_thread(resource_id="bob", thread_id="b0")
        page = await memory.list_threads(filter={"resource_id": R}, per_page=2)
        assert [t.id for t in page.threads] == ["a2", "a1"]
        assert (page.total, page.page, page.per_page, page.has_more) == (3, 0, 2, True)
        last = await memory.list_threads(filter={"resource_id": R}, per_page=2, page=1)
        assert [t.id for t in last.threads] == ["a0"] and last.has_more is False
        oldest = await memory.list_threads(filter={"resource_id": R}, order_by={"field": "createdAt",
                                                                                "direction": "ASC"})
        assert [t.id for t in oldest.threads] == ["a0", "a1", "a2"]
        team = await memory.list_threads(filter={"resource_id": R, "metadata": {"team": "x"}}, per_page=False)
        assert sorted(t.id for t in team.threads) == ["a1", "a2"] and team.per_page is False
        everyone = await memory.list_threads()
        assert everyone.total == 4 and everyone.per_page == 100

    async def test_bad_arguments_raise_agent_config_errors(self):
        memory = self.make_memory()
        for call in (memory.list_threads(page=-1), memory.list_threads(per_page=0),
                     memory.list_threads(filter={"owner": R}),
                     memory.list_threads(order_by={"field": "title"}),
                     memory.create_thread(resource_id=R, thread_id="bad\x00id"),
                     memory.recall(resource_id=R, thread_id=T, per_page=True)):
            with pytest.raises(AgentConfigError):
                await call

    # -- messages --------------------------------------------------------------------------------

    async def test_a_run_stores_mastras_format_and_recall_pages_it_newest_first(self):
        memory = self.make_memory(last_messages=10)
        add = create_tool(id="add", description="Add", input_schema={"type": "object"},
                          execute=lambda input: {"sum": input["a"] + input["b"]})
        model = ScriptedModel([tool_step(("c1", "add", {"a": 2, "b": 3})), text_step("It is 5.")])
        agent = Agent(id="calc", instructions="x", model=model, tools={"add": add}, memory=memory)
        result = await agent.generate("2+3?", memory={"resource": R, "thread": T})
        # each answer names its agent, its run and the model that answered its step
        stamp = {"agentId": "calc", "runId": result.run_id, "modelId": "scripted", "provider": "test"}
        recalled = await memory.recall(resource_id=R, thread_id=T)
        assert (recalled.total, recalled.page, recalled.per_page, recalled.has_more) == (3, 0, 10, False)
        user, call, answer = recalled.messages
        assert (user["role"], user["threadId"], user["resourceId"]) == ("user", T, R)
        assert user["content"] == {"format": 2, "parts": [{"type": "text", "text": "2+3?"}], "content": "2+3?"}
        assert call["role"] == "assistant" and call["content"] == {"format": 2, "parts": [{
            "type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "c1", "toolName": "add",
                                                          "args": {"a": 2, "b": 3}, "result": {"sum": 5}}}],
            "metadata": stamp}
        assert answer["content"] == {"format": 2, "parts": [{"type": "text", "text": "It is 5."}],
                                     "content": "It is 5.", "metadata": stamp}
        newest = await memory.recall(resource_id=R, thread_id=T, per_page=2)
        assert [m["id"] for m in newest.messages] == [call["id"], answer["id"]] and newest.has_more is True
        older = await memory.recall(resource_id=R, thread_id=T, per_page=2, page=1)
        assert [m["id"] for m in older.messages] == [user["id"]] and older.has_more is False
        assert (await memory.recall(resource_id=R, thread_id="nope")).messages == []

    async def test_save_messages_stores_mastra_messages_and_replaces_by_id(self):
        memory = self.make_memory()
        message = {"id": "m1", "role": "user", "createdAt": "2026-01-02T03:04:05+00:00", "resourceId": R,
                   "threadId": T, "content": {"format": 2, "parts": [{"type": "text", "text": "saved by hand"}]}}
        saved = await memory.save_messages(messages=[message])
        assert saved == [message]
        assert (await memory.get_thread_by_id(resource_id=R, thread_id=T)).id == T  # created with it
        edited = {**message, "content": {"format": 2, "parts": [{"type": "text", "text": "edited"}]}}
        await memory.save_messages(messages=[edited])
        assert texts((await memory.recall(resource_id=R, thread_id=T)).messages) == [("user", "edited")]
        # model messages are converted; a transient signal is never stored
        kept = create_signal({"type": "notification", "contents": "CI failed", "attributes": {"b": 1, "a": 2}})
        dropped = create_signal({"type": "reactive", "contents": "gone", "transient": True})
        await memory.save_messages(messages=[render_signal(kept), render_signal(dropped)], resource_id=R, thread_id=T)
        stored = (await memory.recall(resource_id=R, thread_id=T)).messages
        assert texts(stored) == [("user", "edited"), ("signal", "CI failed")]
        assert stored[1]["type"] == "notification"
        assert stored[1]["content"]["metadata"]["signal"] == {
            "id": kept["id"], "type": "notification", "tagName": "notification", "createdAt": kept["createdAt"],
            "attributes": {"b": 1, "a": 2}}
        assert list(stored[1]["content"]["metadata"]["signal"]["attributes"]) == ["b", "a"]  # their order
        with pytest.raises(AgentConfigError):
            await memory.save_messages(messages=[{"id": "x", "role": "user", "content": "no thread"}])

    async def test_recall_leaves_out_reactive_signals_unless_asked(self):
        memory = self.make_memory()
        reminder = render_signal(create_signal({"type": "reactive", "tag_name": "memory-reply", "contents": "psst"}))
        note = render_signal(create_signal({"type": "notification", "tag_name": "system-reminder", "contents": "hi"}))
        await memory.save_messages(messages=[reminder, note], resource_id=R, thread_id=T)
        shown = await memory.recall(resource_id=R, thread_id=T)
        assert texts(shown.messages) == [("signal", "hi")] and shown.total == 1
        everything = await memory.recall(resource_id=R, thread_id=T, include_system_reminders=True)
        assert texts(everything.messages) == [("signal", "psst"), ("signal", "hi")]

    async def test_a_stored_signal_reaches_the_model_as_it_was_accepted(self):
        memory = self.make_memory()
        signal = create_signal({"type": "user", "contents": "Use <care> & speed",
                                "attributes": {"name": "Jane", "n": 3, "ok": True, "skipped": None}})
        await memory.save_messages(messages=[render_signal(signal)], resource_id=R, thread_id=T)
        model = ScriptedModel([text_step("ok")])
        agent = Agent(id="a", instructions="x", model=model, memory=memory)
        await agent.generate("next", memory={"resource": R, "thread": T})
        shown = [m["content"] for m in model.requests[0].messages if m["role"] == "user"]
        assert shown == ['<user name="Jane" n="3" ok="true">Use &lt;care&gt; &amp; speed</user>', "next"]
