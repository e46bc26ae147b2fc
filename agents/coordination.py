"""Thread coordination on the database (leases, inputs, event log) and pub/sub on the channel layer.

``DjangoThreadStore`` implements ``agents.runtime.threads.ThreadStore``. Every method is one
transaction; every lease change is a compare-and-set (owner run id and fencing token), so two
processes can never both own a thread (invariant 2) and an accepted input is stored before the call
returns (invariant 1). ``ChannelLayerPubSub`` carries chunks and abort requests between processes;
losing one of its messages loses nothing, since subscribers fill gaps from ``ThreadEvent``.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any, Callable

from asgiref.sync import sync_to_async
from django.db import transaction
from django.utils import timezone

from agents import sql
from agents.models import Message, Run, Thread, ThreadEvent, ThreadInput, ThreadLease, ToolApproval
from agents.runtime.errors import SignalError
from agents.runtime.signal import echo_chunk, render_content, render_signal
from agents.runtime.threads import group_name
from agents.store import _parse_time, _thread_row, messages_save_locked, run_record, thread_prepare_locked

logger = logging.getLogger(__name__)

#: events kept per thread for resumable subscriptions; older ones are pruned
EVENT_RETENTION = 2000


def _lease_for_update(key: str, resource_id: str, thread_id: str) -> ThreadLease:
    """The thread's lease row, locked; created idle on the thread's first input."""
    lease = _locked_lease(key)
    if lease is None:
        # another process may create it at the same moment: its insert wins, ours does nothing
        if sql.insert(ThreadLease, [{"thread_key": key, "resource_id": resource_id, "thread_id": thread_id}],
                      ignore_conflicts=True):
            return ThreadLease(thread_key=key, resource_id=resource_id, thread_id=thread_id)  # ours, locked
        lease = _locked_lease(key)
    return lease


def _locked_lease(key: str) -> ThreadLease | None:
    return sql.select_one(ThreadLease, {"thread_key": key}, for_update=True)


_LEASE_FIELDS = ("agent_id", "owner_run_id", "owner_process", "status", "token", "expires_at", "abort_requested",
                 "last_seq")


def _save_lease(lease: ThreadLease) -> None:
    """Write the lease row the caller locked and changed."""
    sql.update(ThreadLease, {"thread_key": lease.thread_key}, {f: getattr(lease, f) for f in _LEASE_FIELDS})


def _is_active(lease: ThreadLease, now) -> bool:
    if not lease.owner_run_id:
        return False
    if lease.status == ThreadLease.Status.SUSPENDED:
        return True
    return lease.expires_at is not None and lease.expires_at > now


def _take(lease: ThreadLease, *, run_id: str, agent_id: str, process_id: str, ttl_ms: int, now) -> None:
    lease.owner_run_id = run_id
    lease.agent_id = agent_id
    lease.owner_process = process_id
    lease.status = ThreadLease.Status.RUNNING
    lease.token += 1
    lease.expires_at = now + timedelta(milliseconds=ttl_ms)
    lease.abort_requested = False


def _release(lease: ThreadLease) -> None:
    lease.owner_run_id = None
    lease.owner_process = ""
    lease.status = ThreadLease.Status.IDLE
    lease.expires_at = None
    lease.abort_requested = False


def _lease_dict(lease: ThreadLease, signals: list[dict], stream_options: dict | None = None) -> dict:
    return {"key": lease.thread_key, "run_id": lease.owner_run_id, "token": lease.token, "last_seq": lease.last_seq,
            "agent_id": lease.agent_id, "resource_id": lease.resource_id, "thread_id": lease.thread_id,
            "signals": signals, "stream_options": stream_options or {}}


def _store_history(lease: ThreadLease, signal: dict) -> None:
    """Persist an input straight into the thread's history (behavior ``persist``)."""
    thread = Thread.objects.filter(pk=lease.thread_id).first()
    if thread is None:
        Thread.objects.create(id=lease.thread_id, resource_id=lease.resource_id)
    message = render_signal(signal)
    Message.objects.get_or_create(message_id=message["id"], defaults={
        "thread_id": lease.thread_id, "resource_id": lease.resource_id, "role": "user", "type": "signal",
        "content": message["content"], "metadata": message.get("metadata") or {},
        "created_at": _parse_time(signal.get("createdAt")),
    })


def _append(lease: ThreadLease, chunks: list[dict]) -> None:
    sql.insert(ThreadEvent, [{"thread_key": lease.thread_key, "seq": c["seq"], "run_id": c.get("runId") or "",
                              "chunk": c} for c in chunks])
    lease.last_seq = max(lease.last_seq, chunks[-1]["seq"])
    if lease.last_seq % 200 < len(chunks):  # prune now and then, not on every write
        ThreadEvent.objects.filter(thread_key=lease.thread_key, seq__lte=lease.last_seq - EVENT_RETENTION).delete()


def _state_unchanged(thread: Thread | None, state: dict) -> bool:
    if thread is None:
        return False
    current = (thread.metadata.get("stateSignals") or {}).get(state["id"])
    return bool(current) and current.get("cacheKey") == state["cache_key"] and current.get("mode") == state["mode"]


def _record_state(lease: ThreadLease, state: dict, signal: dict, now) -> None:
    thread = Thread.objects.select_for_update().filter(pk=lease.thread_id).first()
    if thread is None:
        thread = Thread.objects.create(id=lease.thread_id, resource_id=lease.resource_id)
    tracking = dict(thread.metadata.get("stateSignals") or {})
    previous = tracking.get(state["id"]) or {}
    tracking[state["id"]] = {"cacheKey": state["cache_key"], "mode": state["mode"], "signalId": signal["id"],
                             "version": int(previous.get("version", 0)) + 1, "updatedAt": now.isoformat()}
    thread.metadata = {**thread.metadata, "stateSignals": tracking}
    thread.save(update_fields=["metadata", "updated_at"])


def accept_input(*, key: str | None, agent_id: str, resource_id: str | None, thread_id: str | None, signal: dict,
                 mode: str, if_active: dict, if_idle: dict, target_run_id: str | None, new_run_id: str,
                 stream_options: dict, ttl_ms: int, process_id: str, state: dict | None,
                 prepare: dict | None = None) -> dict:
    """Decide what happens to one input and store it, in one transaction (DESIGN §4 table).

    With ``prepare`` (``{"last_messages", "read_only"}``), a wake also prepares the thread's memory
    for the run it starts, in the same transaction: ``"prepared"`` is ``(thread, history)`` as
    ``MemoryStore.prepare_thread`` returns it."""
    now = timezone.now()
    with transaction.atomic():
        if key is None:
            lease = sql.select_one(ThreadLease, {"owner_run_id": target_run_id}, for_update=True)
            if lease is None or not _is_active(lease, now):
                raise SignalError(f"no active run {target_run_id!r}; give resource_id and thread_id to reach an "
                                  "idle thread", code="unknown_run")
            key, resource_id, thread_id = lease.thread_key, lease.resource_id, lease.thread_id
        else:
            lease = _lease_for_update(key, resource_id, thread_id)
        thread = _thread_row(thread_id)
        if thread is not None and thread.resource_id != resource_id:
            raise SignalError(f"thread {thread_id!r} belongs to another resource", code="thread_resource_mismatch")
        active = _is_active(lease, now)
        branch = if_active if active else if_idle
        accepted = {**signal, "attributes": {**signal.get("attributes", {}), **branch["attributes"]},
                    "acceptedAt": now.isoformat()}
        base = {"key": key, "signal": accepted, "resource_id": resource_id, "thread_id": thread_id}
        if state is not None and _state_unchanged(thread, state):
            return {**base, "action": "skipped"}
        behavior = branch["behavior"]
        if behavior == "discard":
            return {**base, "action": "discard"}
        if active and lease.agent_id and lease.agent_id != agent_id and behavior != "persist":
            return {**base, "action": "blocked", "run_id": lease.owner_run_id}
        if state is not None:
            _record_state(lease, state, accepted, now)
        # the rendered XML travels with the stored signal: PostgreSQL's jsonb does not keep the order
        # of the attributes, the rendered string does
        stored = {**accepted, "rendered": render_content(accepted)}
        common = {"input_id": accepted["id"], "thread_key": key, "agent_id": agent_id, "resource_id": resource_id,
                  "thread_id": thread_id, "signal": stored}
        if active:
            if behavior == "persist":
                # stored now as an input; the owner writes it into the history where it belongs in
                # the run's order (at its next step boundary, or when the run ends)
                sql.insert(ThreadInput, [{**common, "kind": ThreadInput.Kind.ECHO, "run_id": lease.owner_run_id}])
                return {**base, "action": "persist"}
            if mode == "queue":
                sql.insert(ThreadInput, [{**common, "kind": ThreadInput.Kind.QUEUE, "run_id": new_run_id,
                                          "stream_options": stream_options}])
                return {**base, "action": "deliver", "run_id": new_run_id, "queued": True}
            sql.insert(ThreadInput, [{**common, "kind": ThreadInput.Kind.DELIVER, "run_id": lease.owner_run_id}])
            return {**base, "action": "deliver", "run_id": lease.owner_run_id}
        if behavior == "persist":
            _store_history(lease, accepted)
            synthetic = new_run_id
            chunks = [
                {"type": "start", "runId": synthetic, "from": "AGENT", "payload": {}},
                echo_chunk(accepted, synthetic),
                {"type": "finish", "runId": synthetic, "from": "AGENT",
                 "payload": {"stepResult": {"reason": "stop"}, "output": {"usage": {
                     "inputTokens": 0, "outputTokens": 0, "totalTokens": 0}}}},
            ]
            for offset, chunk in enumerate(chunks, start=1):
                chunk["seq"] = lease.last_seq + offset
            _append(lease, chunks)
            _save_lease(lease)
            return {**base, "action": "persist", "events": chunks}
        # idle + wake: take the lease; inputs a dead owner left behind run first, in order
        if lease.owner_run_id:
            _reclaim_dead_run(lease, now)
        never_run = lease.token == 0  # no inputs wait on a thread that never ran: only an active one queues
        _take(lease, run_id=new_run_id, agent_id=agent_id, process_id=process_id, ttl_ms=ttl_ms, now=now)
        _save_lease(lease)
        leftovers = [] if never_run else _pending_for_run(lease, include_queue=False)
        sql.insert(ThreadInput, [{**common, "kind": ThreadInput.Kind.DELIVER, "run_id": new_run_id,
                                  "status": ThreadInput.Status.CONSUMED, "consumed_by": new_run_id,
                                  "consumed_at": now, "stream_options": stream_options}])
        sql.insert(Run, [{"id": new_run_id, "agent_id": agent_id, "resource_id": resource_id, "thread_id": thread_id,
                          "status": Run.Status.RUNNING, "started_at": now}])  # a new id: no row to update
        woken = {**base, **_lease_dict(lease, leftovers + [accepted], stream_options), "action": "wake",
                 "run_id": new_run_id}
        if prepare is not None:
            woken["prepared"] = thread_prepare_locked(thread, resource_id=resource_id, thread_id=thread_id,
                                                      **prepare)
        return woken


def _pending_for_run(lease: ThreadLease, *, include_queue: bool) -> list[dict]:
    """Mark waiting deliver inputs as consumed by the lease's run; return their signals in order."""
    kinds = [ThreadInput.Kind.DELIVER] + ([ThreadInput.Kind.QUEUE] if include_queue else [])
    rows = sql.select(ThreadInput, {"thread_key": lease.thread_key, "status": ThreadInput.Status.PENDING,
                                    "kind": kinds}, order_by=("id",))
    if not rows:
        return []
    _mark_consumed(rows, lease.owner_run_id, timezone.now())
    return [r.signal for r in rows]


def _mark_consumed(rows: list[ThreadInput], run_id: str, now) -> None:
    sql.update(ThreadInput, {"id": [r.pk for r in rows]},
               {"status": ThreadInput.Status.CONSUMED, "consumed_by": run_id, "consumed_at": now})


def drain_inputs(*, key: str, run_id: str, token: int) -> list[dict]:
    """Inputs waiting for the owner's next step (deliver, and persisted ones to echo), in order."""
    waiting = {"thread_key": key, "status": ThreadInput.Status.PENDING,
               "kind": [ThreadInput.Kind.DELIVER, ThreadInput.Kind.ECHO]}
    if not sql.exists(ThreadInput, waiting):
        # the usual answer, read without a write transaction; an input stored just after this is
        # taken at the next step boundary or handed to the next run by finish_run
        return []
    with transaction.atomic():
        lease = _locked_lease(key)  # the lease first, as everywhere
        if lease is None or lease.owner_run_id != run_id or lease.token != token:
            return []  # fenced: a stale owner takes nothing
        rows = sql.select(ThreadInput, waiting, order_by=("id",), for_update=True)
        if not rows:
            return []
        _mark_consumed(rows, run_id, timezone.now())
        return [{"kind": r.kind, "signal": r.signal} for r in rows]


def _next_run(lease: ThreadLease, *, new_run_id: str, process_id: str, ttl_ms: int, now,
              events: list[dict]) -> dict | None:
    """Give the lease to the next run for waiting inputs, or release it. Lease row is locked.
    Echo chunks of inputs persisted while the ending run was active are added to ``events``."""
    rows = sql.select(ThreadInput, {"thread_key": lease.thread_key, "status": ThreadInput.Status.PENDING},
                      order_by=("id",))
    echoes = [r for r in rows if r.kind == ThreadInput.Kind.ECHO]
    rows = [r for r in rows if r.kind != ThreadInput.Kind.ECHO]
    if echoes:  # persisted while the run was active and not taken by it: into history now, echoed
        for row in echoes:
            _store_history(lease, row.signal)
        _mark_consumed(echoes, lease.owner_run_id, now)
        chunks = [echo_chunk(r.signal, lease.owner_run_id) for r in echoes]
        for offset, chunk in enumerate(chunks, start=1):
            chunk["seq"] = lease.last_seq + offset
        _append(lease, chunks)
        events.extend(chunks)
    if not rows:
        _release(lease)
        _save_lease(lease)
        return None
    first = rows[0]
    if first.kind == ThreadInput.Kind.QUEUE:
        taken, run_id = [first], first.run_id
    else:
        taken = []
        for row in rows:
            if row.kind == ThreadInput.Kind.QUEUE:
                break
            taken.append(row)
        run_id = new_run_id
    _take(lease, run_id=run_id, agent_id=first.agent_id, process_id=process_id, ttl_ms=ttl_ms, now=now)
    _save_lease(lease)
    _mark_consumed(taken, run_id, now)
    started = {"agent_id": first.agent_id, "resource_id": lease.resource_id, "thread_id": lease.thread_id,
               "status": Run.Status.RUNNING, "started_at": now}
    if not sql.update(Run, {"id": run_id}, started):
        sql.insert(Run, [{"id": run_id, **started}])
    return _lease_dict(lease, [r.signal for r in taken], first.stream_options)


def finish_run(*, key: str, run_id: str, token: int, last_seq: int, new_run_id: str, process_id: str,
               ttl_ms: int, events: list[dict] | None = None, messages: list[dict] | None = None,
               record: dict | None = None) -> dict:
    """End the owner's run in one transaction: write its final events, the messages it adds to the
    thread's history and its run record, then hand the lease to the next run for waiting inputs or
    release it. Returns ``{"next": lease dict or None, "events": echo chunks written for inputs
    persisted during the run}``. A fenced-out owner changes nothing (``"fenced": True``): the inputs
    it took wait again for the lease's new owner, which answers them."""
    with transaction.atomic():
        lease = _locked_lease(key)
        if lease is None or lease.owner_run_id != run_id or lease.token != token:
            return {"next": None, "events": [], "fenced": True}
        if events:
            _append(lease, events)
        if messages:
            messages_save_locked(resource_id=lease.resource_id, thread_id=lease.thread_id, messages=messages)
        if record is not None:
            # the run's row was written when it took the lease: update it; insert it otherwise
            run_record(record, existing=True)
        lease.last_seq = max(lease.last_seq, last_seq)
        echoes: list[dict] = []
        nxt = _next_run(lease, new_run_id=new_run_id, process_id=process_id, ttl_ms=ttl_ms, now=timezone.now(),
                        events=echoes)
        return {"next": nxt, "events": echoes}


def renew_lease(*, key: str, run_id: str, token: int, ttl_ms: int) -> dict:
    now = timezone.now()
    updated = ThreadLease.objects.filter(thread_key=key, owner_run_id=run_id, token=token,
                                         status=ThreadLease.Status.RUNNING).update(
        expires_at=now + timedelta(milliseconds=ttl_ms))
    if updated != 1:
        return {"ok": False, "abort": False}
    abort = ThreadLease.objects.filter(thread_key=key, abort_requested=True).exists()
    return {"ok": True, "abort": abort}


def append_events(*, key: str, token: int, events: list[dict]) -> bool:
    with transaction.atomic():
        lease = _locked_lease(key)
        if lease is None or lease.token != token:
            return False
        _append(lease, events)
        sql.update(ThreadLease, {"thread_key": key}, {"last_seq": lease.last_seq})
        return True


def read_events(*, key: str, after_seq: int | None = None, run_id: str | None = None) -> list[dict]:
    rows = ThreadEvent.objects.filter(thread_key=key)
    if after_seq is not None:
        rows = rows.filter(seq__gt=after_seq)
        first = ThreadEvent.objects.filter(thread_key=key).order_by("seq").values_list("seq", flat=True).first()
        if first is not None and first > after_seq + 1:
            lease = ThreadLease.objects.filter(thread_key=key).first()
            snapshot = _snapshot(lease, first - 1) if lease else None
            return ([snapshot] if snapshot else []) + [e.chunk for e in rows.order_by("seq")]
    if run_id is not None:
        rows = rows.filter(run_id=run_id)
    return [e.chunk for e in rows.order_by("seq")]


def _snapshot(lease: ThreadLease, seq: int) -> dict:
    """Past the retention window: the thread's messages, then the retained events."""
    messages = [m.to_dict() for m in Message.objects.filter(thread_id=lease.thread_id, resource_id=lease.resource_id)]
    return {"type": "data-thread-snapshot", "runId": None, "from": "AGENT", "seq": seq,
            "data": {"threadId": lease.thread_id, "resourceId": lease.resource_id, "messages": messages},
            "transient": True}


def thread_state(*, key: str) -> dict | None:
    lease = ThreadLease.objects.filter(thread_key=key).first()
    if lease is None:
        return None
    active = _is_active(lease, timezone.now())
    return {"active_run_id": lease.owner_run_id if active else None, "status": lease.status if active else "idle",
            "agent_id": lease.agent_id, "last_seq": lease.last_seq}


def request_abort(*, key: str) -> dict | None:
    """Flag the active run for abort. A suspended run is ended here: its lease is released."""
    now = timezone.now()
    with transaction.atomic():
        lease = ThreadLease.objects.select_for_update().filter(thread_key=key).first()
        if lease is None or not _is_active(lease, now):
            return None
        run_id = lease.owner_run_id
        if lease.status == ThreadLease.Status.SUSPENDED:
            ToolApproval.objects.filter(run_id=run_id, status=ToolApproval.Status.PENDING).update(
                status=ToolApproval.Status.DECLINED, decided_at=now)
            Run.objects.filter(id=run_id).update(status=Run.Status.ABORTED, finish_reason="abort", finished_at=now)
            chunks = [{"type": "abort", "runId": run_id, "from": "AGENT", "payload": {"reason": "aborted"},
                       "seq": lease.last_seq + 1}]
            _append(lease, chunks)
            _release(lease)
            _save_lease(lease)
            return {"run_id": run_id, "events": chunks, "released": True}
        lease.abort_requested = True
        lease.save(update_fields=["abort_requested", "updated_at"])
        return {"run_id": run_id, "events": [], "released": False}


def suspend_run(*, key: str, run_id: str, token: int, last_seq: int, events: list[dict] | None = None) -> None:
    """The run waits on a tool approval: the thread stays held, with no expiry."""
    with transaction.atomic():
        lease = ThreadLease.objects.select_for_update().get(thread_key=key)
        if lease.owner_run_id != run_id or lease.token != token:
            return
        if events:
            _append(lease, events)
        lease.last_seq = max(lease.last_seq, last_seq)
        lease.status = ThreadLease.Status.SUSPENDED
        lease.expires_at = None
        _save_lease(lease)


def resume_run(*, run_id: str, process_id: str, ttl_ms: int) -> dict | None:
    now = timezone.now()
    with transaction.atomic():
        lease = ThreadLease.objects.select_for_update().filter(
            owner_run_id=run_id, status=ThreadLease.Status.SUSPENDED).first()
        if lease is None:
            return None
        _take(lease, run_id=run_id, agent_id=lease.agent_id, process_id=process_id, ttl_ms=ttl_ms, now=now)
        _save_lease(lease)
        return _lease_dict(lease, [])


def _reclaim_dead_run(lease: ThreadLease, now) -> None:
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


def recover_threads(*, process_id: str, ttl_ms: int, new_run_id: Callable[[], str],
                    agent_ids: list[str] | None = None) -> list[dict]:
    """Take over threads whose owner's lease expired, or idle threads with waiting inputs.

    Only threads of ``agent_ids`` (the agents this process can run; None: any) are taken, so that a
    process never holds a lease it cannot serve. Each returned lease dict also has the ``events``
    written for inputs persisted during the dead run."""
    now = timezone.now()
    leases = ThreadLease.objects.filter(status=ThreadLease.Status.RUNNING, expires_at__lt=now)
    inputs = ThreadInput.objects.filter(status=ThreadInput.Status.PENDING).exclude(kind=ThreadInput.Kind.ECHO)
    if agent_ids is not None:
        leases = leases.filter(agent_id__in=agent_ids)
        inputs = inputs.filter(agent_id__in=agent_ids)
    expired = list(leases.values_list("thread_key", flat=True))
    waiting = list(inputs.values_list("thread_key", flat=True).distinct())
    started = []
    for key in dict.fromkeys(expired + waiting):
        with transaction.atomic():
            lease = ThreadLease.objects.select_for_update().filter(thread_key=key).first()
            if lease is None or _is_active(lease, now):
                continue
            if lease.owner_run_id:
                _reclaim_dead_run(lease, now)
            echoes: list[dict] = []
            nxt = _next_run(lease, new_run_id=new_run_id(), process_id=process_id, ttl_ms=ttl_ms, now=now,
                            events=echoes)
            if nxt is not None:
                nxt["events"] = echoes
                started.append(nxt)
    return started


def list_queued(*, key: str) -> list[dict]:
    rows = ThreadInput.objects.filter(thread_key=key, status=ThreadInput.Status.PENDING).exclude(
        kind=ThreadInput.Kind.ECHO).order_by("id")
    return [{"id": r.input_id, "kind": r.kind, "runId": r.run_id, "agentId": r.agent_id, "signal": r.signal,
             "createdAt": r.created_at.isoformat()} for r in rows]


def cancel_queued(*, ids: list[str]) -> int:
    return ThreadInput.objects.filter(input_id__in=ids, status=ThreadInput.Status.PENDING).exclude(
        kind=ThreadInput.Kind.ECHO).update(status=ThreadInput.Status.CANCELLED)


class DjangoThreadStore:
    """``ThreadStore`` on the ORM; each call is one sync function in the worker thread."""

    def prepares_memory_of(self, memory_store: Any) -> bool:
        """Whether a wake can prepare ``memory_store``'s thread and history in its own transaction
        (the same database), sparing the run a separate read."""
        from agents.store import DjangoStore

        return isinstance(memory_store, DjangoStore)

    async def accept(self, **kwargs):
        return await sync_to_async(accept_input)(**kwargs)

    async def drain(self, **kwargs):
        return await sync_to_async(drain_inputs)(**kwargs)

    async def finish(self, **kwargs):
        return await sync_to_async(finish_run)(**kwargs)

    async def renew(self, **kwargs):
        return await sync_to_async(renew_lease)(**kwargs)

    async def append_events(self, **kwargs):
        return await sync_to_async(append_events)(**kwargs)

    async def read_events(self, **kwargs):
        return await sync_to_async(read_events)(**kwargs)

    async def thread_state(self, **kwargs):
        return await sync_to_async(thread_state)(**kwargs)

    async def request_abort(self, **kwargs):
        return await sync_to_async(request_abort)(**kwargs)

    async def suspend(self, **kwargs):
        await sync_to_async(suspend_run)(**kwargs)

    async def resume(self, **kwargs):
        return await sync_to_async(resume_run)(**kwargs)

    async def recover(self, **kwargs):
        return await sync_to_async(recover_threads)(**kwargs)

    async def list_queued(self, **kwargs):
        return await sync_to_async(list_queued)(**kwargs)

    async def cancel_queued(self, **kwargs):
        return await sync_to_async(cancel_queued)(**kwargs)


class _ReaderTask(asyncio.Task):
    """The pub/sub reader's task; remembers that it was asked to stop (see ``_read``)."""

    stop_requested = False

    def cancel(self, msg=None) -> bool:
        self.stop_requested = True
        return super().cancel(msg)


class ChannelLayerPubSub:
    """Thread messages between processes through a Channels layer (one group per thread).

    Each process reads one channel of its own; callbacks run on the event loop that subscribed.
    """

    def __init__(self, layer: Any):
        self.layer = layer
        self.channel: str | None = None
        self.callbacks: dict[str, list[Callable[[dict], None]]] = {}
        self._reader: asyncio.Task | None = None
        self._lock = asyncio.Lock()

    async def _ensure_channel(self) -> None:
        async with self._lock:
            if self.channel is None:
                self.channel = await self.layer.new_channel()
                self._reader = _ReaderTask(self._read(), loop=asyncio.get_running_loop())

    async def _read(self) -> None:
        reader = asyncio.current_task()
        while True:
            # channels-redis may swallow a cancellation or turn it into another error (its receive
            # bookkeeping): a cancelled reader stops anyway, or it outlives its loop's shutdown
            if getattr(reader, "stop_requested", False):
                raise asyncio.CancelledError()
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                if getattr(reader, "stop_requested", False):
                    raise asyncio.CancelledError() from None
                logger.exception("channel layer receive failed")
                await asyncio.sleep(0.5)
                continue
            for callback in list(self.callbacks.get(message.get("group"), ())):
                try:
                    callback(message["message"])
                except Exception:
                    logger.exception("thread pub/sub callback failed")

    async def publish(self, key: str, message: dict) -> None:
        group = group_name(key)
        await self.layer.group_send(group, {"type": "thread.message", "group": group, "message": message})

    async def subscribe(self, key: str, callback: Callable[[dict], None]) -> Callable:
        await self._ensure_channel()
        group = group_name(key)
        callbacks = self.callbacks.setdefault(group, [])
        if not callbacks:
            await self.layer.group_add(group, self.channel)
        callbacks.append(callback)

        async def unsubscribe() -> None:
            if callback in callbacks:
                callbacks.remove(callback)
            if not callbacks:
                self.callbacks.pop(group, None)
                await self.layer.group_discard(group, self.channel)

        return unsubscribe

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
