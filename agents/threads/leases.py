"""The lease row of a thread (invariant 2): lock, take, release, renew and reclaim.

One row per thread decides who runs it. Every change is made on the row locked in the caller's
transaction (``SELECT … FOR UPDATE``; SQLite locks the database on ``BEGIN IMMEDIATE``) or as a
compare-and-set on the owner run id and the fencing ``token``, so a stale owner changes nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from agents.models import Message, Run, ThreadInput, ThreadLease

#: what :func:`lease_save` writes back
LEASE_FIELDS = ("agent_id", "owner_run_id", "owner_process", "status", "token", "expires_at", "abort_requested",
                "last_seq")


def lease_lock(key: str) -> ThreadLease | None:
    """The thread's lease row locked in the caller's transaction, or None."""
    return ThreadLease.objects.select_row({"thread_key": key}, for_update=True)


def lease_lock_or_create(key: str, *, resource_id: str, thread_id: str) -> ThreadLease:
    """The thread's lease row, locked; created idle on the thread's first input."""
    lease = lease_lock(key)
    if lease is None:
        # another process may create it at the same moment: its insert wins, ours does nothing
        if ThreadLease.objects.insert_rows([{"thread_key": key, "resource_id": resource_id, "thread_id": thread_id}],
                      ignore_conflicts=True):
            return ThreadLease(thread_key=key, resource_id=resource_id, thread_id=thread_id)  # ours, locked
        lease = lease_lock(key)
    return lease


def lease_lock_by_run(run_id: str) -> ThreadLease | None:
    """The lease held by ``run_id``, locked, or None."""
    return ThreadLease.objects.select_row({"owner_run_id": run_id}, for_update=True)


def lease_save(lease: ThreadLease) -> None:
    """Write the lease row the caller locked and changed."""
    ThreadLease.objects.update_rows({"thread_key": lease.thread_key}, {f: getattr(lease, f) for f in LEASE_FIELDS})


def lease_take(lease: ThreadLease, *, run_id: str, agent_id: str, process_id: str, ttl_ms: int,
               now: datetime) -> None:
    """Give the (locked) lease to ``run_id``: a new fencing token, an expiry ``ttl_ms`` away."""
    lease.owner_run_id = run_id
    lease.agent_id = agent_id
    lease.owner_process = process_id
    lease.status = ThreadLease.Status.RUNNING
    lease.token += 1
    lease.expires_at = now + timedelta(milliseconds=ttl_ms)
    lease.abort_requested = False


def lease_release(lease: ThreadLease) -> None:
    """The (locked) lease's thread goes idle."""
    lease.owner_run_id = None
    lease.owner_process = ""
    lease.status = ThreadLease.Status.IDLE
    lease.expires_at = None
    lease.abort_requested = False


def lease_to_dict(lease: ThreadLease, signals: list[dict], stream_options: dict | None = None) -> dict:
    """What the runtime gets for a run it starts under ``lease``: ``{"key", "run_id", "token",
    "last_seq", "agent_id", "resource_id", "thread_id", "signals", "stream_options"}``."""
    return {"key": lease.thread_key, "run_id": lease.owner_run_id, "token": lease.token, "last_seq": lease.last_seq,
            "agent_id": lease.agent_id, "resource_id": lease.resource_id, "thread_id": lease.thread_id,
            "signals": signals, "stream_options": stream_options or {}}


def lease_renew(*, key: str, run_id: str, token: int, ttl_ms: int) -> dict:
    """Push the running owner's expiry ``ttl_ms`` away (compare-and-set). ``{"ok", "abort"}``:
    ``ok`` False when the caller lost the lease; ``abort`` when an abort was requested."""
    now = timezone.now()
    updated = ThreadLease.objects.filter(thread_key=key, owner_run_id=run_id, token=token,
                                         status=ThreadLease.Status.RUNNING).update(
        expires_at=now + timedelta(milliseconds=ttl_ms))
    if updated != 1:
        return {"ok": False, "abort": False}
    abort = ThreadLease.objects.filter(thread_key=key, abort_requested=True).exists()
    return {"ok": True, "abort": abort}


def lease_reclaim(lease: ThreadLease, now: datetime) -> None:
    """The lease's owner died (its lease expired; the row is locked): the inputs it took but never
    saved to history are waiting again, ahead of later ones (ids keep their order); its run failed."""
    dead_run = lease.owner_run_id
    consumed = ThreadInput.objects.filter(thread_key=lease.thread_key, consumed_by=dead_run,
                                          status=ThreadInput.Status.CONSUMED)
    saved = set(Message.objects.filter(thread_id=lease.thread_id, message_id__in=[
        i.input_id for i in consumed]).values_list("message_id", flat=True))
    consumed.exclude(input_id__in=saved).update(status=ThreadInput.Status.PENDING, consumed_by=None,
                                               consumed_at=None)
    Run.objects.filter(id=dead_run, status=Run.Status.RUNNING).update(
        status=Run.Status.FAILED, finish_reason="error", error="the process running it stopped",
        finished_at=now)
