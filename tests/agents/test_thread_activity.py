"""``agents.threads.activity``: the one rule for whether a thread is active, and the thread's state."""

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import Thread, ThreadLease
from agents.runtime.errors import SignalError
from agents.threads.activity import lease_is_active, thread_state_get, thread_states_get

NOW = timezone.now()


@pytest.mark.parametrize("owner, status, expires, active", [
    (None, "idle", None, False),
    ("run-1", "running", NOW + timedelta(seconds=1), True),
    ("run-1", "running", NOW, False),  # expired at this very moment: its owner is presumed dead
    ("run-1", "running", None, False),
    ("run-1", "suspended", None, True),  # a tool approval holds the thread without expiry
])
def test_a_thread_is_active_while_a_live_or_suspended_run_holds_its_lease(owner, status, expires, active):
    lease = ThreadLease(thread_id="t", owner_run_id=owner, status=status, expires_at=expires)
    assert lease_is_active(lease, NOW) is active


@pytest.mark.django_db
def test_thread_states_of_one_or_several_threads():
    now = timezone.now()
    for thread_id in ("a", "b"):
        Thread.objects.create(thread_id=thread_id, resource_id="u")
    ThreadLease.objects.create(thread_id="u\x1fa", agent_id="bot", owner_run_id="run-a", status="running",
                               expires_at=now + timedelta(minutes=1), last_seq=7)
    ThreadLease.objects.create(thread_id="u\x1fb", agent_id="bot", owner_run_id="run-b", status="running",
                               expires_at=now - timedelta(minutes=1), last_seq=2)
    running = {"active_run_id": "run-a", "status": "running", "agent_id": "bot", "last_seq": 7}
    expired = {"active_run_id": None, "status": "idle", "agent_id": "bot", "last_seq": 2}
    assert thread_state_get(key="u\x1fa") == running
    assert thread_state_get(key="u\x1fb") == expired
    assert thread_state_get(key="u\x1fc") is None
    assert thread_states_get(keys={"u\x1fa", "u\x1fb", "u\x1fc"}) == {"u\x1fa": running, "u\x1fb": expired,
                                                                    "u\x1fc": None}
    assert thread_states_get(keys=set()) == {}


@pytest.mark.django_db
def test_another_resources_thread_of_the_same_id_is_another_thread():
    Thread.objects.create(thread_id="a", resource_id="u")
    ThreadLease.objects.create(thread_id="u\x1fa", agent_id="bot", owner_run_id="run-a", status="suspended")
    assert thread_state_get(key="u\x1fa")["active_run_id"] == "run-a"
    assert thread_state_get(key="intruder\x1fa") is None  # as for any free id
    assert thread_states_get(keys={"intruder\x1fa"}) == {"intruder\x1fa": None}
