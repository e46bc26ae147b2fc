"""A thread run's end, suspension, resumption and abort, each one transaction on the locked lease.

:func:`run_finish` is the run's last write: its final events, messages and run record, then the
lease goes to the next run for waiting inputs (:func:`run_next_start`) or is released. A
fenced-out owner changes nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from agents.models import Run, ThreadInput, ThreadLease, ToolApproval
from agents.runtime.chunks import abort_chunk
from agents.runtime.signal import echo_chunk
from agents.runtime.threads.decision import next_run
from agents.runtime.threads.store import AbortRequest, RunEnd, RunLease
from agents.store import messages_save_locked, run_record

from .activity import lease_is_active
from .events import events_append_locked, events_number
from .inputs import input_persist_history, inputs_mark_consumed
from .retries import inputs_retry_or_park
from .leases import (lease_lock, lease_release, lease_save, lease_seq_trim, lease_take,
                     lease_run)

logger = logging.getLogger(__name__)


def run_next_start(lease: ThreadLease, *, new_run_id: str, process_id: str, ttl_ms: int, now: datetime,
                   events: list[dict]) -> RunLease | None:
    """Give the (locked) lease to the next run for waiting inputs, or release it.

    Which inputs the next run takes is the decision table's (``decision.next_run``): a queued one
    alone (under its own run id), or the deliver inputs up to the next queued one (under
    ``new_run_id``). Echo chunks of inputs persisted while the ending run was active are written and
    added to ``events``. Returns the new run's lease, or None when the thread is idle now."""
    rows = ThreadInput.objects.select_rows({"thread_id": lease.thread_id, "status": ThreadInput.Status.PENDING},
                                           order_by=("id",))
    plan = next_run([r.kind for r in rows])
    if plan.echoes:  # persisted while the run was active and not taken by it: into history now, echoed
        echoes = [rows[i] for i in plan.echoes]
        for row in echoes:
            input_persist_history(lease, row.signal)
        inputs_mark_consumed(echoes, lease.owner_run_id, now)
        chunks = events_number(lease, [echo_chunk(r.signal, lease.owner_run_id) for r in echoes])
        events_append_locked(lease, chunks)
        events.extend(chunks)
    if not plan.taken:
        lease_release(lease)
        lease_save(lease)
        return None
    taken = [rows[i] for i in plan.taken]
    first = taken[0]
    run_id = first.run_id if plan.own_run_id else new_run_id
    lease_take(lease, run_id=run_id, agent_id=first.agent_id, process_id=process_id, ttl_ms=ttl_ms, now=now)
    lease_save(lease)
    inputs_mark_consumed(taken, run_id, now)
    started = {"agent_id": first.agent_id, "thread_id": lease.thread_id, "resource_id": lease.resource_id,
               "status": Run.Status.RUNNING, "started_at": now}
    if not Run.objects.update_rows({"id": run_id}, started):
        Run.objects.insert_rows([{"id": run_id, **started}])
    return lease_run(lease, [r.signal for r in taken], first.stream_options)


def run_finish(*, key: str, run_id: str, token: int, last_seq: int, new_run_id: str, process_id: str,
               ttl_ms: int, events: list[dict] | None = None, messages: list[dict] | None = None,
               record: dict | None = None) -> RunEnd:
    """End the owner's run in one transaction: write its final events, the messages it adds to the
    thread's history and its run record, then hand the lease to the next run for waiting inputs or
    release it (the runtime's ``RunEnd``: ``next``, and the echo chunks written for inputs persisted
    during the run). A fenced-out owner changes nothing (``fenced``): the inputs it took wait again
    for the lease's new owner, which answers them.

    When that write fails (a value the database refuses, a lost connection), the run ends failed
    instead (:func:`run_fail`, ``failed``): the thread is never left leased to a run that stays
    ``running``."""
    try:
        with transaction.atomic():
            lease = lease_lock(key)
            if lease is None or lease.owner_run_id != run_id or lease.token != token:
                return RunEnd(fenced=True)
            if events:
                events_append_locked(lease, events)
            if messages:
                messages_save_locked(resource_id=lease.resource_id, thread_id=lease.thread_name, messages=messages)
            if record is not None:
                # the run's row was written when it took the lease: update it; insert it otherwise
                run_record(record, existing=True)
            lease_seq_trim(lease, last_seq)
            echoes: list[dict] = []
            nxt = run_next_start(lease, new_run_id=new_run_id, process_id=process_id, ttl_ms=ttl_ms,
                                 now=timezone.now(), events=echoes)
            return RunEnd(next=nxt, events=echoes)
    except Exception as exc:
        logger.exception("could not save the end of thread run %s", run_id)
        return run_fail(key=key, run_id=run_id, token=token, last_seq=last_seq, new_run_id=new_run_id,
                        process_id=process_id, ttl_ms=ttl_ms, error=f"could not save the run's end: "
                                                                     f"{type(exc).__name__}")


def run_fail(*, key: str, run_id: str, token: int, last_seq: int, new_run_id: str, process_id: str, ttl_ms: int,
             error: str) -> RunEnd:
    """End the owner's run as failed, in a transaction of its own, after its final write failed:
    nothing of its end is stored (events, messages), the run is ``failed`` with ``error``, each
    input it took counts an attempt and waits again or is parked as failed
    (``retries.inputs_retry_or_park``), and the lease goes to the next run for waiting inputs or is
    released. Returns :func:`run_finish`'s ``RunEnd``, ``failed`` (``fenced`` as there)."""
    now = timezone.now()
    with transaction.atomic():
        lease = lease_lock(key)
        if lease is None or lease.owner_run_id != run_id or lease.token != token:
            return RunEnd(fenced=True)
        lease_seq_trim(lease, last_seq)
        inputs_retry_or_park(lease, run_id, error=error)
        Run.objects.filter(id=run_id).update(status=Run.Status.FAILED, finish_reason="error", error=error,
                                             error_code="run_end_not_saved", finished_at=now)
        echoes: list[dict] = []
        nxt = run_next_start(lease, new_run_id=new_run_id, process_id=process_id, ttl_ms=ttl_ms, now=now,
                             events=echoes)
        return RunEnd(next=nxt, events=echoes, failed=True)


def run_suspend(*, key: str, run_id: str, token: int, last_seq: int, events: list[dict] | None = None) -> None:
    """The run waits on a tool approval: the thread stays held, with no expiry (fenced)."""
    with transaction.atomic():
        lease = lease_lock(key)
        if lease is None or lease.owner_run_id != run_id or lease.token != token:
            return
        if events:
            events_append_locked(lease, events)
        lease_seq_trim(lease, last_seq)
        lease.status = ThreadLease.Status.SUSPENDED
        lease.expires_at = None
        lease_save(lease)


def run_resume(*, run_id: str, process_id: str, ttl_ms: int) -> RunLease | None:
    """Take the lease of the suspended ``run_id`` for this process (a new token); None when the run
    is not suspended (any more)."""
    now = timezone.now()
    with transaction.atomic():
        lease = ThreadLease.objects.select_for_update().filter(
            owner_run_id=run_id, status=ThreadLease.Status.SUSPENDED).first()
        if lease is None:
            return None
        lease_take(lease, run_id=run_id, agent_id=lease.agent_id, process_id=process_id, ttl_ms=ttl_ms, now=now)
        lease_save(lease)
        return lease_run(lease, [])


def run_abort_request(*, key: str) -> AbortRequest | None:
    """Flag the thread's active run for abort; None when the thread is idle. A suspended run is
    ended here (its approvals declined, its lease released, ``released``)."""
    now = timezone.now()
    with transaction.atomic():
        lease = lease_lock(key)
        if lease is None or not lease_is_active(lease, now):
            return None
        run_id = lease.owner_run_id
        if lease.status == ThreadLease.Status.SUSPENDED:
            ToolApproval.objects.filter(run_id=run_id, status=ToolApproval.Status.PENDING).update(
                status=ToolApproval.Status.DECLINED, decided_at=now)
            Run.objects.filter(id=run_id).update(status=Run.Status.ABORTED, finish_reason="abort", finished_at=now)
            chunks = [abort_chunk(run_id, lease.last_seq + 1)]
            events_append_locked(lease, chunks)
            lease_release(lease)
            lease_save(lease)
            return AbortRequest(run_id, events=chunks, released=True)
        lease.abort_requested = True
        lease.save(update_fields=["abort_requested", "updated_at"])
        return AbortRequest(run_id)
