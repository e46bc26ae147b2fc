"""A thread run whose final write fails ends failed and frees its thread; an input that fails
``MASTRA_INPUT_MAX_ATTEMPTS`` times is parked as failed and the thread serves the next one."""

import pytest

from agents.models import Run, ThreadInput, ThreadLease
from agents.runtime.threads import get_thread_runtime
from agents.store import messages_save_locked
from agents.threads import runs
from tests.agents.thread_harness import bounded, collect, db, ends_run, history, make_agent, settle, wait_idle

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

R, T = "user-1", "thread-1"


@pytest.fixture(autouse=True)
async def _drain():
    yield
    await settle()


@pytest.fixture
def poisoned(monkeypatch):
    """The final write of a run that answers "poison" fails, as a value the database refuses would."""

    def save(*, resource_id, thread_id, messages):
        if any(part.get("text") == "poison" for m in messages for part in m["content"]["parts"]):  # stored format
            raise ValueError("Out of range float values are not JSON compliant")
        messages_save_locked(resource_id=resource_id, thread_id=thread_id, messages=messages)

    monkeypatch.setattr(runs, "messages_save_locked", save)


async def test_a_poison_input_is_parked_after_three_attempts_and_the_next_input_runs(poisoned):
    agent = make_agent(gate=0)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    poison = await agent.send_message("poison", resource_id=R, thread_id=T)
    after = await agent.queue_message("after", resource_id=R, thread_id=T)
    assert (poison.action, after.action) == ("wake", "deliver")
    agent.model.open()
    await bounded(poison.output.get_full_output())
    chunks = await collect(sub, ends_run, n=4)
    await wait_idle(R, T)

    def state():
        rows = {i.input_id: (i.status, i.attempts, i.last_error) for i in ThreadInput.objects.all()}
        run_rows = [(r.status, r.error) for r in Run.objects.order_by("started_at", "id")]
        lease = ThreadLease.objects.get()
        return rows, run_rows, (lease.owner_run_id, lease.status)

    rows, run_rows, lease = await db(state)
    error = "could not save the run's end: ValueError"
    assert rows == {poison.signal["id"]: ("failed", 3, error), after.signal["id"]: ("consumed", 0, "")}
    assert run_rows == [("failed", error)] * 3 + [("completed", "")]
    assert lease == (None, "idle")
    # three runs tried the poison input, then the queued input ran under its own run id
    assert [c["runId"] for c in chunks if c["type"] == "start"][-1] == after.run_id
    assert [(m["role"], m["content"]) for m in await history(T)] == [
        ("user", "after"), ("assistant", [{"type": "text", "text": "echo: after"}])]
    # parked means never retried silently: recovery finds nothing to run
    assert await get_thread_runtime().recover() == []


async def test_a_failed_final_write_frees_the_thread_for_the_next_wake(poisoned, settings):
    settings.MASTRA_INPUT_MAX_ATTEMPTS = 1
    agent = make_agent()
    poison = await agent.send_message("poison", resource_id=R, thread_id=T)
    await bounded(poison.output.get_full_output())
    await wait_idle(R, T)
    assert await db(lambda: ThreadInput.objects.get(input_id=poison.signal["id"]).status) == "failed"
    nxt = await agent.send_message("fine", resource_id=R, thread_id=T)
    assert nxt.action == "wake"
    assert (await bounded(nxt.output.get_full_output())).text == "echo: fine"
