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
    Thread.objects.create(thread_id="t-alice", resource_id="alice")
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


def test_another_users_thread_id_is_a_thread_of_ones_own(users):
    alice, bob, staff = users
    assert alice.existing_thread("t-alice").resource_id == "alice"
    assert bob.thread("t-alice") is None  # bob's own t-alice: free, exactly as an unused id
    assert bob.thread("t-alice") == bob.thread("never-used")
    with pytest.raises(ThreadNotFound) as missing:
        bob.existing_thread("t-alice")
    with pytest.raises(ThreadNotFound) as free:
        bob.existing_thread("free-id")
    assert missing.value.code == free.value.code == "thread_not_found"
    assert staff.thread("t-alice") is None  # staff act as their own resource unless they name one
    assert staff.existing_thread("t-alice", "alice").thread_id == "t-alice"
    with pytest.raises(ThreadNotFound):
        alice.existing_thread("missing")


def test_two_resources_may_each_have_a_thread_of_the_same_id(users):
    alice, bob, _ = users
    Thread.objects.create(thread_id="t-alice", resource_id="bob")
    assert alice.existing_thread("t-alice").resource_id == "alice"
    assert bob.existing_thread("t-alice").resource_id == "bob"
    assert Thread.objects.filter(thread_id="t-alice").count() == 2


def test_naming_another_resource_is_forbidden_to_a_user(users):
    alice, _, _ = users
    with pytest.raises(AccessDenied) as error:
        alice.thread("t-alice", "bob")
    assert error.value.code == "resource_forbidden"


def test_targets(users):
    alice, bob, staff = users
    assert alice.target("t-alice") == ("alice", "t-alice")
    assert bob.target("t-alice") == ("bob", "t-alice")
    assert bob.target("new") == ("bob", "new")
    assert staff.target("t-alice") == ("ops", "t-alice")
    assert staff.target("t-alice", "alice") == ("alice", "t-alice")
    with pytest.raises(SignalError):
        alice.target("bad\x1fid")


def test_visible_threads(users):
    alice, bob, staff = users
    Thread.objects.create(thread_id="t-bob", resource_id="bob")
    assert sorted(t.thread_id for t in alice.visible_threads()) == ["t-alice"]
    assert sorted(t.thread_id for t in staff.visible_threads()) == ["t-alice", "t-bob"]
    assert sorted(t.thread_id for t in staff.visible_threads("bob")) == ["t-bob"]
    with pytest.raises(AccessDenied):
        bob.visible_threads("alice")


async def test_async_twins(users):
    alice, bob, _ = users
    assert (await alice.atarget("t-alice")) == ("alice", "t-alice")
    with pytest.raises(ThreadNotFound):
        await bob.aexisting_thread("t-alice")


def test_a_run_belongs_to_its_resource(users):
    from django.utils import timezone

    from agents.access import RunNotFound
    from agents.models import Run

    alice, bob, staff = users
    Run.objects.create(id="run-a", agent_id="bot", thread_id="alice\x1ft-alice", resource_id="alice",
                       started_at=timezone.now())
    Run.objects.create(id="run-free", agent_id="bot", started_at=timezone.now())
    assert alice.run_thread("run-a").thread_id == "t-alice"
    assert staff.run_thread("run-a").thread_id == "t-alice"
    for caller, run_id in ((bob, "run-a"), (bob, "run-free"), (alice, "run-free"), (bob, "missing")):
        with pytest.raises(RunNotFound) as error:
            caller.run_thread(run_id)
        assert (error.value.code, error.value.message) == ("run_not_found", f"run {run_id!r} not found")
    assert staff.run("run-free").id == "run-free"
