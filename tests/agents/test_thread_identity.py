"""One identity for a thread: its ``Thread`` row. Ids are checked before anything is stored, and
the row's resource is checked on every access."""

import pytest

from agents.memory import Memory
from agents.models import Message, Run, Thread, ThreadEvent, ThreadInput, ThreadLease
from agents.runtime import Agent
from agents.runtime.errors import AgentConfigError, SignalError
from tests.agents.thread_harness import bounded, counts, db, make_agent, settle

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
async def _drain():
    yield
    await settle()


async def test_two_resources_cannot_share_a_thread_through_the_key_separator():
    agent = make_agent()
    before = await counts()
    for resource_id, thread_id in (("acme", "team\x1fgeneral"), ("acme\x1fteam", "general")):
        with pytest.raises(SignalError) as info:
            await agent.send_message("hi", resource_id=resource_id, thread_id=thread_id)
        assert info.value.code == "invalid_id"
        with pytest.raises(SignalError) as info:
            await agent.subscribe_to_thread(resource_id=resource_id, thread_id=thread_id)
        assert info.value.code == "invalid_id"
    assert str(info.value) == "a thread is named by a resource id and a thread id without control characters"
    assert await counts() == before == {"inputs": 0, "messages": 0, "events": 0, "leases": 0}
    assert await db(lambda: Thread.objects.count()) == 0


@pytest.mark.parametrize("resource_id, thread_id, message", [
    ("acme", "general\x00", "thread_id must not contain control characters"),
    ("ac\nme", "general", "resource_id must not contain control characters"),
    ("acme", "t" * 256, "thread_id must be at most 255 characters"),
    ("r" * 256, "general", "resource_id must be at most 255 characters"),
])
async def test_ids_with_control_characters_or_too_long_are_refused(resource_id, thread_id, message):
    agent = make_agent()
    with pytest.raises(SignalError) as info:
        await agent.send_message("hi", resource_id=resource_id, thread_id=thread_id)
    assert (info.value.code, info.value.message) == ("invalid_id", message)
    with pytest.raises(AgentConfigError) as config:
        await agent.generate("hi", memory={"resource": resource_id, "thread": thread_id})
    assert config.value.code == "invalid_id"
    assert await counts() == {"inputs": 0, "messages": 0, "events": 0, "leases": 0}


async def test_agent_run_and_signal_ids_are_checked():
    with pytest.raises(AgentConfigError) as info:
        Agent(id="bot\x1f", instructions="x", model="local/echo", memory=Memory())
    assert (info.value.code, info.value.message) == ("invalid_id", "id: must not contain control characters")
    agent = make_agent()
    with pytest.raises(AgentConfigError) as info:
        await agent.generate("hi", run_id="r" * 65)
    assert (info.value.code, info.value.message) == ("invalid_id", "options.run_id: must be at most 64 characters")
    with pytest.raises(SignalError) as signal_error:
        await agent.send_message("hi", run_id="run\x00")
    assert signal_error.value.code == "invalid_id"
    assert await counts() == {"inputs": 0, "messages": 0, "events": 0, "leases": 0}


async def test_another_resources_thread_of_the_same_id_is_another_thread_on_every_access():
    agent = make_agent()
    r = await agent.send_message("mine", resource_id="acme", thread_id="general")
    await bounded(r.output.get_full_output())
    await settle()

    def acme_rows():
        return (list(Message.objects.filter(thread_id="acme\x1fgeneral").values_list("id", flat=True)),
                list(ThreadEvent.objects.filter(thread_id="acme\x1fgeneral").values_list("seq", flat=True)))

    before = await db(acme_rows)
    assert await agent.list_queued_inputs(resource_id="intruder", thread_id="general") == []
    assert await agent.abort_thread(resource_id="intruder", thread_id="general") is False
    sub = await agent.subscribe_to_thread(resource_id="intruder", thread_id="general", after_seq=0)
    assert sub.active_run_id() is None
    sub.unsubscribe()
    theirs = await agent.send_message("theirs", resource_id="intruder", thread_id="general")
    assert theirs.action == "wake"  # a thread of its own, idle and new
    await bounded(theirs.output.get_full_output())
    await settle()
    assert await db(acme_rows) == before  # acme's thread is untouched
    assert await db(lambda: sorted(Thread.objects.values_list("resource_id", "thread_id"))) == [
        ("acme", "general"), ("intruder", "general")]


async def test_every_runtime_row_points_at_the_thread_row():
    agent = make_agent()
    r = await agent.send_message("hello", resource_id="acme", thread_id="general")
    await bounded(r.output.get_full_output())
    await settle()

    def rows():
        lease = ThreadLease.objects.select_related("thread").get()
        run = Run.objects.select_related("thread").get(id=r.run_id)
        thread_input = ThreadInput.objects.select_related("thread").get()
        events = {e.thread.pk for e in ThreadEvent.objects.select_related("thread")}
        return ((lease.thread.thread_id, lease.thread.resource_id, lease.resource_id),
                (run.thread.thread_id, run.thread.resource_id, run.resource_id),
                (thread_input.thread.pk, thread_input.input_id == r.signal["id"]), events,
                set(Message.objects.values_list("thread_id", flat=True)), Thread.objects.count())

    key = "acme\x1fgeneral"
    assert await db(rows) == (("general", "acme", "acme"), ("general", "acme", "acme"), (key, True), {key},
                              {key}, 1)
