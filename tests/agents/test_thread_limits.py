"""Limits on what a thread accepts (docs/security.md): pending inputs per thread, signal ids used
once. A refused input is a clear SignalError and stores nothing."""

import pytest

from agents.models import Message, ThreadInput
from agents.runtime.errors import SignalError
from agents.runtime.limits import configure_limits, current_limits
from tests.agents.thread_harness import bounded, db, make_agent, settle

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

R, T = "user-1", "thread-1"


@pytest.fixture
def two_pending_inputs():
    previous = current_limits()
    configure_limits(max_pending_inputs=2)
    yield
    configure_limits(max_pending_inputs=previous.max_pending_inputs)


async def test_an_input_over_the_pending_limit_is_refused_and_nothing_is_stored(two_pending_inputs):
    agent = make_agent(gate=1)  # the run holds after its first event
    wake = await agent.send_message("first", resource_id=R, thread_id=T)
    assert wake.action == "wake"
    # queued inputs wait for the active run to end
    accepted = [await agent.queue_message(text, resource_id=R, thread_id=T) for text in ("a", "b")]
    assert [r.action for r in accepted] == ["deliver", "deliver"]
    with pytest.raises(SignalError) as info:
        await agent.queue_message("c", resource_id=R, thread_id=T)
    assert info.value.code == "too_many_pending_inputs"
    assert str(info.value) == "the thread already has 2 inputs waiting (the limit is 2)"
    pending = await db(lambda: sorted(ThreadInput.objects.filter(thread__thread_id=T, status="pending")
                                      .values_list("input_id", flat=True)))
    assert pending == sorted(r.signal["id"] for r in accepted)
    agent.model.open()
    await bounded(wake.output.get_full_output())
    await settle()


async def test_a_signal_id_is_used_once():
    agent = make_agent()
    first = await agent.send_signal({"type": "reactive", "id": "sig-1", "contents": "one"}, resource_id=R,
                                    thread_id=T, if_idle={"behavior": "persist"})
    assert first.action == "persist"
    with pytest.raises(SignalError) as info:
        await agent.send_signal({"type": "reactive", "id": "sig-1", "contents": "two"}, resource_id=R,
                                thread_id=T, if_idle={"behavior": "persist"})
    assert (info.value.code, str(info.value)) == ("duplicate_signal_id", "signal id 'sig-1' is already used")
    assert await db(lambda: [(m.message_id, m.seen_by_model()) for m in Message.objects.filter(thread__thread_id=T)]) == [
        ("sig-1", "<system-reminder>one</system-reminder>")]
    await settle()
