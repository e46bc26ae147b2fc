"""An idle ``persist`` on a thread that was never created stores the input and creates no thread
(Mastra: "thread row exists after persist: false", behaviour.out.txt 4); the thread is created by its
first run, whose prompt then starts with what was persisted (4b)."""

import pytest
from asgiref.sync import sync_to_async

from agents.access import Caller
from agents.runtime.testing import ScriptedModel, text_step
from tests.agents.thread_harness import collect, history, make_agent, settle

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

R, T = "user-1", "thread-1"
CI = {"type": "notification", "contents": "GitHub CI failed on PR #123: 3 tests failed.",
      "attributes": {"source": "github"}}


@pytest.fixture(autouse=True)
async def _drain():
    yield
    await settle()


@sync_to_async
def seen_by_the_owner() -> tuple[bool, list[str]]:
    """Whether the owner's API finds the thread, and the thread ids it lists."""
    caller = Caller(resource_id=R, is_staff=False)
    return caller.thread(T) is not None, [t.thread_id for t in caller.visible_threads()]


async def test_an_idle_persist_on_a_new_thread_stores_the_signal_without_creating_the_thread():
    model = ScriptedModel([text_step("Looking at it.")])
    agent = make_agent(model=model)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    persisted = await agent.send_signal(CI, resource_id=R, thread_id=T, if_idle={"behavior": "persist"})
    assert persisted.action == "persist"
    # subscribers still see the short synthetic run, and the signal is stored
    assert [c["type"] for c in await collect(sub)] == ["start", "data-signal", "finish"]
    assert [(m["id"], m["role"]) for m in await history(T)] == [(persisted.signal["id"], "user")]
    # ... but there is no thread yet: memory does not find it and the API neither lists nor shows it
    assert await agent.memory.store.get_thread(resource_id=R, thread_id=T) is None
    assert await seen_by_the_owner() == (False, [])

    woke = await agent.send_message("What happened?", resource_id=R, thread_id=T)
    assert woke.action == "wake"
    await woke.output.get_full_output()
    sub.unsubscribe()
    # the run created the thread; its prompt has the persisted signal before the new message
    assert (await agent.memory.store.get_thread(resource_id=R, thread_id=T))["id"] == T
    assert await seen_by_the_owner() == (True, [T])
    assert [(m["role"], m["content"]) for m in model.requests[0].messages if m["role"] != "system"] == [
        ("user", '<notification source="github">GitHub CI failed on PR #123: 3 tests failed.</notification>'),
        ("user", "What happened?")]


async def test_a_persist_on_an_existing_thread_keeps_it():
    agent = make_agent()
    first = await agent.send_message("hello", resource_id=R, thread_id=T)
    await first.output.get_full_output()
    await settle()
    persisted = await agent.send_signal(CI, resource_id=R, thread_id=T, if_idle={"behavior": "persist"})
    assert persisted.action == "persist"
    assert await seen_by_the_owner() == (True, [T])


async def test_creating_the_thread_over_the_api_after_a_persist_keeps_what_was_persisted():
    from agents.memory_threads import memory_thread_save

    agent = make_agent()
    persisted = await agent.send_signal(CI, resource_id=R, thread_id=T, if_idle={"behavior": "persist"})
    thread = await sync_to_async(memory_thread_save)(resource_id=R, thread_id=T, title="CI", metadata=None)
    assert (thread["id"], thread["title"]) == (T, "CI")
    assert await seen_by_the_owner() == (True, [T])
    assert [m["id"] for m in await history(T)] == [persisted.signal["id"]]
