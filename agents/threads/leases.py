"""The lease row of a thread (invariant 2): lock, take, release, renew and reclaim.

One row per thread decides who runs it. Every change is made on the row locked in the caller's
transaction (``SELECT … FOR UPDATE``; SQLite locks the database on ``BEGIN IMMEDIATE``) or as a
compare-and-set on the owner run id and the fencing ``token``, so a stale owner changes nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from agents.models import Thread, ThreadLease
from agents.runtime.threads.events import SEQ_BLOCK
from agents.runtime.threads.store import Renewal, RunLease

from .identity import thread_ref

#: what :func:`lease_save` writes back
LEASE_FIELDS = ("agent_id", "owner_run_id", "owner_process", "status", "token", "expires_at", "abort_requested",
                "last_seq", "reserved_seq")


def lease_lock(key: str) -> ThreadLease | None:
    """The lease row of the thread ``key`` names, locked in the caller's transaction, or None."""
    thread_ref(key)
    return ThreadLease.objects.select_row({"thread_id": key}, for_update=True)


def lease_lock_or_create(thread: Thread, *, created: bool = False) -> ThreadLease:
    """The lease row of ``thread`` (a row the caller read and checked), locked; created idle on the
    thread's first input.

    A thread whose row the caller's transaction has just ``created`` has no lease row (a lease row
    points at its thread's, and no other transaction can see that row before this one commits):
    its lease is returned unwritten, and :func:`lease_save` inserts it with what the caller made
    of it (a wake writes its new thread's lease, taken, in one statement instead of three).

    The lease names its thread by key, not by ``thread``'s instance: Django caches a one-to-one
    relation both ways, so the lease would hold the thread and the thread the lease, a reference
    cycle that only a collection of its generation frees (``agents.heap``)."""
    if created:
        return ThreadLease(thread_id=thread.key)
    lease = ThreadLease.objects.select_row({"thread_id": thread.key}, for_update=True)
    if lease is None:
        # another process may create it at the same moment: its insert wins, ours does nothing
        if ThreadLease.objects.insert_rows([{"thread_id": thread.key}], ignore_conflicts=True):
            lease = ThreadLease(thread_id=thread.key)  # ours, locked
            lease._state.adding = False  # written
            return lease
        lease = ThreadLease.objects.select_row({"thread_id": thread.key}, for_update=True)
    return lease


def lease_lock_by_run(run_id: str) -> ThreadLease | None:
    """The lease held by ``run_id``, locked, or None."""
    return ThreadLease.objects.select_row({"owner_run_id": run_id}, for_update=True)


def lease_save(lease: ThreadLease) -> None:
    """Write the lease row the caller locked and changed (insert a new thread's lease, still
    unwritten: :func:`lease_lock_or_create`)."""
    values = {f: getattr(lease, f) for f in LEASE_FIELDS}
    if lease._state.adding:
        ThreadLease.objects.insert_rows([{"thread_id": lease.thread_id, **values}])
        lease._state.adding = False
        return
    ThreadLease.objects.update_rows({"thread_id": lease.thread_id}, values)


def lease_take(lease: ThreadLease, *, run_id: str, agent_id: str, process_id: str, ttl_ms: int,
               now: datetime) -> None:
    """Give the (locked) lease to ``run_id``: a new fencing token, an expiry ``ttl_ms`` away, and the
    next :data:`SEQ_BLOCK` seqs, reserved (:func:`lease_seq_reserve`)."""
    lease_seq_reserve(lease)
    lease.owner_run_id = run_id
    lease.agent_id = agent_id
    lease.owner_process = process_id
    lease.status = ThreadLease.Status.RUNNING
    lease.token += 1
    lease.expires_at = now + timedelta(milliseconds=ttl_ms)
    lease.abort_requested = False


def lease_seq_reserve(lease: ThreadLease) -> None:
    """A new owner's seqs (the lease is locked): its events come after every seq written or reserved
    so far — a dead owner may have handed its reserved seqs to subscribers without logging them,
    and they are skipped — and it may hand out the next :data:`SEQ_BLOCK` before they are logged
    (it reserves more as it goes: ``events.events_append``)."""
    lease.last_seq = max(lease.last_seq, lease.reserved_seq)
    lease.reserved_seq = lease.last_seq + SEQ_BLOCK


def lease_seq_trim(lease: ThreadLease, last_seq: int) -> None:
    """The owner ended (or paused) its run and names the last seq it handed out: the seqs it
    reserved beyond are free again, so the next run follows on without a gap."""
    lease.last_seq = max(lease.last_seq, last_seq)
    lease.reserved_seq = lease.last_seq


def lease_release(lease: ThreadLease) -> None:
    """The (locked) lease's thread goes idle."""
    lease.owner_run_id = None
    lease.owner_process = ""
    lease.status = ThreadLease.Status.IDLE
    lease.expires_at = None
    lease.abort_requested = False


def lease_run(lease: ThreadLease, signals: list[dict], stream_options: dict | None = None) -> RunLease:
    """What the runtime gets for a run it starts under ``lease`` (the runtime's ``RunLease``)."""
    return RunLease(key=lease.thread_id, run_id=lease.owner_run_id, token=lease.token, last_seq=lease.last_seq,
                    reserved_seq=lease.reserved_seq, agent_id=lease.agent_id, resource_id=lease.resource_id,
                    thread_id=lease.thread_name, signals=signals, stream_options=stream_options or {})


def lease_renew(*, key: str, run_id: str, token: int, ttl_ms: int) -> Renewal:
    """Push the running owner's expiry ``ttl_ms`` away (compare-and-set): ``ok`` False when the
    caller lost the lease; ``abort`` when an abort was requested.

    The expiry is timed once the row is locked: a renewal that waited for the lock behind a slow
    transaction (a commit waiting for the disk) would otherwise leave its lease that much closer
    to expiring, and another process could take the thread over while its run goes on."""
    thread_ref(key)
    with transaction.atomic():
        lease = lease_lock(key)
        if (lease is None or lease.owner_run_id != run_id or lease.token != token
                or lease.status != ThreadLease.Status.RUNNING):
            return Renewal(ok=False)
        ThreadLease.objects.update_rows({"thread_id": key},
                                        {"expires_at": timezone.now() + timedelta(milliseconds=ttl_ms)})
        return Renewal(ok=True, abort=lease.abort_requested)
