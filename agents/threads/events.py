"""The thread's event log (invariant 3): every chunk with its per-thread ``seq``.

Subscribers resume from the log; the channel layer only wakes them. Old events are pruned past
:data:`EVENT_RETENTION`; a subscriber further behind gets a snapshot of the thread's messages first.
"""

from __future__ import annotations

from django.db import transaction

from django.conf import settings

from agents.models import Message, ThreadEvent, ThreadLease
from agents.runtime.chunks import snapshot_chunk

from .identity import thread_ref
from .leases import lease_lock

#: events kept per thread for resumable subscriptions (``MASTRA_EVENT_RETENTION``); older ones are pruned
EVENT_RETENTION = 2000
#: the log is pruned when ``last_seq`` crosses a multiple of this, not on every write
PRUNE_EVERY = 200


def event_retention() -> int:
    return getattr(settings, "MASTRA_EVENT_RETENTION", EVENT_RETENTION)


def events_append_locked(lease: ThreadLease, chunks: list[dict]) -> None:
    """Write ``chunks`` (numbered already) under the lease the caller locked; ``lease.last_seq``
    follows (the caller saves the lease). The last :func:`event_retention` events are kept."""
    ThreadEvent.objects.insert_rows(event_rows(lease, chunks))
    lease.last_seq = max(lease.last_seq, chunks[-1]["seq"])
    events_prune(lease, len(chunks))


def event_rows(lease: ThreadLease, chunks: list[dict]) -> list[dict]:
    """The ``ThreadEvent`` rows of ``chunks`` (numbered already) on ``lease``'s thread."""
    return [{"thread_id": lease.thread_id, "seq": c["seq"], "run_id": c.get("runId") or "", "chunk": c}
            for c in chunks]


def events_prune(lease: ThreadLease, written: int) -> None:
    """After ``written`` events up to ``lease.last_seq``: delete the thread's events past the last
    :func:`event_retention` ones, now and then (when ``last_seq`` crossed a multiple of
    :data:`PRUNE_EVERY`), not on every write."""
    retention = event_retention()
    if lease.last_seq % min(PRUNE_EVERY, retention) < written:
        ThreadEvent.objects.filter(thread_id=lease.thread_id, seq__lte=lease.last_seq - retention).delete()


def events_number(lease: ThreadLease, chunks: list[dict]) -> list[dict]:
    """Give ``chunks`` the thread's next sequence numbers (in place) and return them: after every
    seq written or reserved (a run that lost its lease may have handed its reserved ones out)."""
    base = max(lease.last_seq, lease.reserved_seq)
    for offset, chunk in enumerate(chunks, start=1):
        chunk["seq"] = base + offset
    return chunks


def events_append(*, key: str, token: int, events: list[dict], reserve: int | None = None) -> bool:
    """Write the owner's buffered chunks, fenced by ``token``, and reserve the seqs up to ``reserve``
    for it (it may hand them to subscribers before they are logged). False: the writer lost the
    lease."""
    with transaction.atomic():
        lease = lease_lock(key)
        if lease is None or lease.token != token:
            return False
        if events:
            events_append_locked(lease, events)
        if reserve is not None:
            lease.reserved_seq = max(lease.reserved_seq, reserve)
        ThreadLease.objects.update_rows({"thread_id": lease.thread_id},
                                        {"last_seq": lease.last_seq, "reserved_seq": lease.reserved_seq})
        return True


def events_append_many(*, key: str, writes: list[dict]) -> list[bool]:
    """Several threads' :func:`events_append` in one transaction (a process's runs write their
    events together: ``agents.runtime.threads.events.EventLogWriter``). Each write is
    ``{"key", "token", "events", "reserve"}``, fenced by its own token: one whose owner lost the
    lease writes nothing and gets False, the others are written. The lease rows are locked in
    the order of their keys (two processes' groups never wait for each other in a circle).
    ``key``: the thread whose database queue carries the call (``agents.connections.KEYED``)."""
    keys = sorted({w["key"] for w in writes})
    for k in keys:
        thread_ref(k)
    with transaction.atomic():
        leases = {lease.thread_id: lease for lease in ThreadLease.objects.select_rows(
            {"thread_id": keys}, order_by=("thread_id",), for_update=True)}
        results: list[bool] = []
        rows: list[dict] = []
        changed: dict[str, ThreadLease] = {}
        written: dict[str, int] = {}  # events written per thread
        for write in writes:
            lease = leases.get(write["key"])
            if lease is None or lease.token != write["token"]:
                results.append(False)
                continue
            events = write["events"]
            if events:
                rows.extend(event_rows(lease, events))
                lease.last_seq = max(lease.last_seq, events[-1]["seq"])
                written[lease.thread_id] = written.get(lease.thread_id, 0) + len(events)
            if write.get("reserve") is not None:
                lease.reserved_seq = max(lease.reserved_seq, write["reserve"])
            changed[lease.thread_id] = lease
            results.append(True)
        if rows:
            ThreadEvent.objects.insert_rows(rows)
        for lease in changed.values():
            events_prune(lease, written.get(lease.thread_id, 0))
        # one executemany (one round trip on PostgreSQL), not an UPDATE per thread
        ThreadLease.objects.update_instances(list(changed.values()), ("last_seq", "reserved_seq"))
        return results


def events_read(*, key: str, after_seq: int | None = None, run_id: str | None = None) -> list[dict]:
    """The logged chunks after ``after_seq`` (preceded by a snapshot when some were pruned), or
    those of ``run_id``, in ``seq`` order."""
    thread_ref(key)
    rows = ThreadEvent.objects.filter(thread_id=key)
    if after_seq is not None:
        rows = rows.filter(seq__gt=after_seq)
        first = ThreadEvent.objects.filter(thread_id=key).order_by("seq").values_list("seq", flat=True).first()
        if first is None or first > after_seq + 1:
            lease = ThreadLease.objects.filter(thread_id=key).first()
            # pruning deletes seqs up to ``last_seq - retention`` at most, the retention sweeper up to
            # ``swept_seq``; a gap above both is one of seqs a dead run reserved (never logged), not
            # a pruned stretch
            if lease is not None and (after_seq < lease.swept_seq
                                      or (first is not None and after_seq < lease.last_seq - event_retention())):
                snapshot = thread_snapshot(lease, lease.swept_seq if first is None else first - 1)
                return [snapshot] + [e.chunk for e in rows.order_by("seq")]
    if run_id is not None:
        rows = rows.filter(run_id=run_id)
    return [e.chunk for e in rows.order_by("seq")]


def thread_snapshot(lease: ThreadLease, seq: int) -> dict:
    """Past the retention window: the thread's messages as one ``data-thread-snapshot`` chunk."""
    messages = [m.to_dict() for m in Message.objects.filter(thread_id=lease.thread_id).order_by("id")]
    return snapshot_chunk(thread_id=lease.thread_name, resource_id=lease.resource_id, messages=messages, seq=seq)
