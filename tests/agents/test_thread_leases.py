"""``agents.threads.leases`` and recovery, called directly on the database of the run: the row lock
of the lease and the takeover of a dead owner's inputs."""

import threading
import uuid
from datetime import timedelta

import pytest
from django.db import OperationalError, connections, models, transaction
from django.utils import timezone

from agents.models import Message, Run, ThreadInput, ThreadLease
from agents.runtime.threads import Acceptance, Renewal, message_to_signal, thread_key
from agents.runtime.threads.events import SEQ_BLOCK
from agents.threads.inputs import input_accept
from agents.threads.leases import lease_lock
from agents.threads.recovery import threads_recover
from tests.garbage import cyclic_garbage

TTL_MS = 15_000
BRANCH_ACTIVE = {"behavior": "deliver", "attributes": {}, "stream_options": None}
BRANCH_IDLE = {"behavior": "wake", "attributes": {}, "stream_options": None}
R = "user-lease"


def accept(thread_id: str, text: str, *, run_id: str | None = None) -> Acceptance:
    return input_accept(key=thread_key(R, thread_id), agent_id="worker", resource_id=R, thread_id=thread_id,
                        signal=message_to_signal(text), mode="send", if_active=BRANCH_ACTIVE, if_idle=BRANCH_IDLE,
                        target_run_id=None, new_run_id=run_id or uuid.uuid4().hex, stream_options={},
                        ttl_ms=TTL_MS, process_id="p1", state=None)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("existing", [False, True], ids=["new thread", "existing thread"])
def test_an_accepted_input_leaves_no_reference_cycle(existing):
    """The rows an input's transaction reads and writes are freed when it returns. A lease that
    names its thread's model instance is cached by Django both ways (a one-to-one relation): the
    lease held the thread and the thread held the lease, and every input left that pair to wait for
    a collection of its generation, in a serving process often a full one (``agents.heap``)."""
    if existing:
        assert accept("t-cycle", "before").action == "wake"  # the thread and its lease exist
    with cyclic_garbage() as garbage:
        accepted = accept("t-cycle", "hi")
    assert accepted.action == ("deliver" if existing else "wake")
    assert [type(o).__name__ for o in garbage if isinstance(o, models.Model)] == []


@pytest.mark.django_db(transaction=True)
def test_a_takeover_never_runs_again_an_input_the_dead_run_saved_to_history():
    woke = accept("t-saved", "answered", run_id="dead")
    waiting = accept("t-saved", "waiting")
    assert (woke.action, waiting.action, waiting.run_id) == ("wake", "deliver", "dead")
    # the dead run saved its input and its answer (a run that saves per step), then its process died
    now = timezone.now()
    Message.objects.create(message_id=woke.signal["id"], thread_id=f"{R}\x1ft-saved", resource_id=R, role="user",
                           content="answered", created_at=now)
    Message.objects.create(message_id="answer", thread_id=f"{R}\x1ft-saved", resource_id=R, role="assistant",
                           content=[{"type": "text", "text": "echo: answered"}], created_at=now)
    ThreadLease.objects.filter(thread__thread_id="t-saved").update(expires_at=now - timedelta(seconds=1))
    [taken] = threads_recover(process_id="p2", ttl_ms=TTL_MS, new_run_id=lambda: "takeover")
    assert (taken.run_id, [s["id"] for s in taken.signals]) == ("takeover", [waiting.signal["id"]])
    rows = {i.input_id: (i.status, i.consumed_by, i.attempts) for i in ThreadInput.objects.all()}
    assert rows == {woke.signal["id"]: ("consumed", "dead", 0),
                    waiting.signal["id"]: ("consumed", "takeover", 0)}
    assert Run.objects.get(id="dead").status == "failed"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("behavior, action, lease", [
    ("wake", "wake", ("running", "r-new", "worker", "p1", 1, 0, SEQ_BLOCK)),
    ("persist", "persist", ("idle", None, "", "", 0, 3, 0)),
    ("discard", "discard", ("idle", None, "", "", 0, 0, 0)),
])
def test_a_new_threads_first_input_writes_its_lease(behavior, action, lease):
    """The lease row of a thread created by its first input is written once, with what that input
    made of it: taken by a wake, numbered past a persisted input's events, idle otherwise."""
    key = thread_key(R, "t-first")
    done = input_accept(key=key, agent_id="worker", resource_id=R, thread_id="t-first",
                        signal=message_to_signal("hi"), mode="send", if_active=BRANCH_ACTIVE,
                        if_idle={**BRANCH_IDLE, "behavior": behavior}, target_run_id=None, new_run_id="r-new",
                        stream_options={}, ttl_ms=TTL_MS, process_id="p1", state=None)
    assert done.action == action
    row = ThreadLease.objects.get(thread_id=key)
    assert (row.status, row.owner_run_id, row.agent_id, row.owner_process, row.token, row.last_seq,
            row.reserved_seq) == lease
    assert (row.expires_at is not None) == (action == "wake")
    if action == "wake":  # and the lease it hands the run is that row
        assert (done.lease.token, done.lease.last_seq, done.lease.reserved_seq) == (1, 0, SEQ_BLOCK)
    # the next input finds that row as any thread's
    assert accept("t-first", "again").action == {"wake": "deliver", "persist": "wake", "discard": "wake"}[action]


@pytest.mark.django_db(transaction=True)
def test_the_lease_row_is_locked_until_the_transaction_ends(postgres_db):
    accept("t-lock", "hi", run_id="r1")
    other: dict = {}

    def take():  # another connection, as another process would
        try:
            with connections["default"].cursor() as cursor:
                cursor.execute("SELECT token FROM agents_threadlease WHERE thread_id = %s FOR UPDATE NOWAIT",
                               [thread_key(R, "t-lock")])
                other["outcome"] = cursor.fetchone()
        except OperationalError as exc:
            other["outcome"] = str(exc).splitlines()[0]
        finally:
            connections.close_all()

    with transaction.atomic():
        assert lease_lock(thread_key(R, "t-lock")).owner_run_id == "r1"
        reader = threading.Thread(target=take)
        reader.start()
        reader.join(5)
    assert other["outcome"] == 'could not obtain lock on row in relation "agents_threadlease"'
    reader = threading.Thread(target=take)  # once committed, the row is free
    reader.start()
    reader.join(5)
    assert other["outcome"] == (1,)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_renewal_does_not_wait_behind_the_worker_thread():
    """Requests and runs do their sync work on Django's one worker thread; a renewal queued behind
    a backlog there longer than the TTL would let another process take the thread over while its
    run goes on. The renewal runs on the lease thread: it is done while the worker thread is held."""
    import asyncio

    from asgiref.sync import sync_to_async

    from agents.threads.store import DjangoThreadStore

    woke = await sync_to_async(accept)("t-busy", "hi", run_id="r1")
    before = await sync_to_async(lambda: ThreadLease.objects.get(thread__thread_id="t-busy").expires_at)()
    release = threading.Event()
    held = asyncio.ensure_future(sync_to_async(release.wait)())  # the worker thread, busy
    try:
        renewed = await asyncio.wait_for(DjangoThreadStore().renew(
            key=thread_key(R, "t-busy"), run_id="r1", token=woke.lease.token, ttl_ms=TTL_MS), 10)
        assert renewed == Renewal(ok=True)
        assert not held.done()
    finally:
        release.set()
        await held
    after = await sync_to_async(lambda: ThreadLease.objects.get(thread__thread_id="t-busy").expires_at)()
    assert after > before


class LaggingLocks:
    """A clock for ``timezone.now`` that moves on by twice the TTL whenever a lease row is locked,
    as if each wait for the lock took that long (a busy database); ``locked_at`` is the time each
    thread key's lock was granted."""

    def __init__(self, monkeypatch, module, name: str):
        self.now = timezone.now()
        self.locked_at: dict[str, object] = {}
        lock = getattr(module, name)

        def lagging(target, **kwargs):
            self.now += timedelta(milliseconds=2 * TTL_MS)
            lease = lock(target, **kwargs)
            self.locked_at[lease.thread_id] = self.now
            return lease

        monkeypatch.setattr(module, name, lagging)
        monkeypatch.setattr(timezone, "now", lambda: self.now)


@pytest.mark.django_db(transaction=True)
def test_recovery_times_each_lease_it_takes_from_when_it_locked_it(monkeypatch):
    """Recovery takes threads one transaction after the other: a lease taken with the time the pass
    began would already be expired when the takeover commits, and be taken over again. A pass stops
    taking threads once a third of the TTL has gone by, so that the runs of the leases it took start
    renewing them before they expire; the next pass takes the rest."""
    from agents.threads import recovery

    for n in (1, 2):
        accept(f"t-lag-{n}", "hi", run_id=f"dead-{n}")
    ThreadLease.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    clock = LaggingLocks(monkeypatch, recovery, "lease_lock")
    passes = [threads_recover(process_id="p2", ttl_ms=TTL_MS, new_run_id=lambda: uuid.uuid4().hex)
              for _ in range(2)]
    assert [len(taken) for taken in passes] == [1, 1]
    expiries = {lease.thread_id: lease.expires_at for lease in ThreadLease.objects.all()}
    assert expiries == {key: at + timedelta(milliseconds=TTL_MS) for key, at in clock.locked_at.items()}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("thread", ["new", "existing"])
def test_a_wake_times_its_lease_from_when_it_locked_it(monkeypatch, thread):
    from agents.threads import inputs
    from agents.threads.identity import threads_ensure

    if thread == "existing":
        threads_ensure({(R, "t-lag-wake")})
    clock = LaggingLocks(monkeypatch, inputs, "lease_lock_or_create")
    woke = accept("t-lag-wake", "hi", run_id="r1")
    assert woke.action == "wake"
    lease = ThreadLease.objects.get(thread__thread_id="t-lag-wake")
    assert lease.expires_at == clock.locked_at[thread_key(R, "t-lag-wake")] + timedelta(milliseconds=TTL_MS)


@pytest.mark.django_db(transaction=True)
def test_a_renewal_times_the_lease_from_when_it_locked_it(monkeypatch):
    """A renewal waits for the lease row's lock behind other transactions of the thread (another
    process's input, the run's own event writes). Timed from before that wait, a long one would
    leave the lease about to expire when the renewal commits, and another process would take the
    thread over while its run goes on."""
    from agents.threads import leases

    accept("t-lag-renew", "hi", run_id="r1")
    clock = LaggingLocks(monkeypatch, leases, "lease_lock")
    assert leases.lease_renew(key=thread_key(R, "t-lag-renew"), run_id="r1", token=1, ttl_ms=TTL_MS) == Renewal(ok=True)
    lease = ThreadLease.objects.get(thread__thread_id="t-lag-renew")
    assert lease.expires_at == clock.locked_at[thread_key(R, "t-lag-renew")] + timedelta(milliseconds=TTL_MS)
