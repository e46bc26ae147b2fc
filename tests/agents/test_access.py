"""The isolation selector: one rule set for HTTP, SSE and websockets."""

import pytest
from django.contrib.auth import get_user_model

from agents.access import AccessDenied, Caller, ThreadNotFound
from agents.models import Thread
from agents.runtime.errors import SignalError

pytestmark = pytest.mark.django_db


@pytest.fixture
def users():
    User = get_user_model()
    alice = User.objects.create_user("alice", password="pw")
    bob = User.objects.create_user("bob", password="pw")
    staff = User.objects.create_user("ops", password="pw", is_staff=True)
    Thread.objects.create(id="t-alice", resource_id="alice")
    return Caller.of(alice), Caller.of(bob), Caller.of(staff)


def test_a_user_acts_as_their_own_resource(users):
    alice, _, _ = users
    assert alice.resource(None) == "alice"
    assert alice.resource("alice") == "alice"
    with pytest.raises(AccessDenied) as error:
        alice.resource("bob")
    assert error.value.code == "resource_forbidden"


def test_staff_may_act_for_any_resource(users):
    _, _, staff = users
    assert staff.resource("bob") == "bob"
    assert staff.resource(None) == "ops"


def test_another_users_thread_is_not_found(users):
    alice, bob, staff = users
    assert alice.existing_thread("t-alice").resource_id == "alice"
    with pytest.raises(ThreadNotFound):
        bob.thread("t-alice")
    assert staff.existing_thread("t-alice").id == "t-alice"
    with pytest.raises(ThreadNotFound):
        alice.existing_thread("missing")


def test_naming_another_resource_for_an_existing_thread_is_forbidden(users):
    _, _, staff = users
    with pytest.raises(AccessDenied) as error:
        staff.thread("t-alice", "bob")
    assert error.value.code == "thread_resource_mismatch"


def test_targets(users):
    alice, bob, staff = users
    assert alice.target("t-alice") == ("alice", "t-alice")
    assert bob.target("new") == ("bob", "new")
    assert staff.target("t-alice") == ("alice", "t-alice")
    with pytest.raises(SignalError):
        alice.target("bad\x1fid")


def test_visible_threads(users):
    alice, bob, staff = users
    Thread.objects.create(id="t-bob", resource_id="bob")
    assert sorted(t.id for t in alice.visible_threads()) == ["t-alice"]
    assert sorted(t.id for t in staff.visible_threads()) == ["t-alice", "t-bob"]
    assert sorted(t.id for t in staff.visible_threads("bob")) == ["t-bob"]
    with pytest.raises(AccessDenied):
        bob.visible_threads("alice")


async def test_async_twins(users):
    alice, bob, _ = users
    assert (await alice.atarget("t-alice")) == ("alice", "t-alice")
    with pytest.raises(ThreadNotFound):
        await bob.aexisting_thread("t-alice")


def test_a_runs_thread_is_checked_as_its_thread(users):
    from django.utils import timezone

    from agents.models import Run

    alice, bob, staff = users
    Run.objects.create(id="run-a", agent_id="bot", thread_id="t-alice", started_at=timezone.now())
    Run.objects.create(id="run-free", agent_id="bot", started_at=timezone.now())
    assert alice.run_thread("run-a").id == "t-alice"
    assert staff.run_thread("run-a").id == "t-alice"
    with pytest.raises(ThreadNotFound):
        bob.run_thread("run-a")
    assert bob.run_thread("run-free") is None
    assert bob.run_thread("missing") is None
