"""Thread inputs (invariant 1): each input stored as DESIGN §4's table decides, in one transaction,
and the waiting inputs a run drains.

:func:`input_accept` locks and loads the thread's lease, asks the table
(``agents.runtime.threads.decision.input_decide``) and stores what it decided.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from agents.models import Message, Run, Thread, ThreadInput, ThreadLease, message_bookkeeping
from agents.runtime.chunks import persist_run_chunks
from agents.sql import exists_any
from agents.runtime.errors import AgentConfigError, SignalError
from agents.runtime.ids import MAX_AGENT_ID, MAX_RUN_ID, MAX_SIGNAL_ID, id_check
from agents.runtime.limits import check_pending_inputs
from agents.runtime.signal import echo_chunk, render_content
from agents.runtime.stored_messages import signal_to_stored
from agents.runtime.threads.decision import DELIVER, STEP_KINDS, THREAD_BLOCKED, WAITING_KINDS, input_decide
from agents.runtime.threads.store import Acceptance
from agents.store import state_signal_record, thread_prepare_locked, thread_save_pending, time_parse

from .activity import lease_is_active, lease_view
from .identity import thread_checked, thread_ensure, thread_ref
from .retries import lease_reclaim
from .events import events_append_locked, events_number
from .leases import (lease_lock, lease_lock_by_run, lease_lock_or_create, lease_save, lease_take,
                     lease_run)



def input_persist_history(lease: ThreadLease, signal: dict) -> None:
    """Write an input straight into the thread's history (behavior ``persist``; the thread's row
    exists: the lease points at it)."""
    message = signal_to_stored(signal)
    Message.objects.get_or_create(thread_id=lease.thread_id, message_id=message["id"], defaults={
        "resource_id": lease.resource_id, "role": message["role"], "type": message["type"],
        "content": message["content"], "metadata": message_bookkeeping(message),
        "created_at": time_parse(signal.get("createdAt")),
    })


def inputs_mark_consumed(rows: list[ThreadInput], run_id: str, now: datetime) -> None:
    ThreadInput.objects.update_rows({"id": [r.pk for r in rows]},
               {"status": ThreadInput.Status.CONSUMED, "consumed_by": run_id, "consumed_at": now})


def inputs_take_for_run(lease: ThreadLease) -> list[dict]:
    """Mark waiting deliver inputs as consumed by the lease's run; return their signals in order."""
    rows = ThreadInput.objects.select_rows({"thread_id": lease.thread_id, "status": ThreadInput.Status.PENDING,
                                            "kind": [DELIVER]}, order_by=("id",))
    if not rows:
        return []
    inputs_mark_consumed(rows, lease.owner_run_id, timezone.now())
    return [r.signal for r in rows]


def input_accept(*, key: str | None, agent_id: str, resource_id: str | None, thread_id: str | None, signal: dict,
                 mode: str, if_active: dict, if_idle: dict, target_run_id: str | None, new_run_id: str,
                 stream_options: dict, ttl_ms: int, process_id: str, state: dict | None,
                 prepare: dict | None = None) -> Acceptance:
    """Decide what happens to one input and store it, in one transaction (DESIGN §4 table): the
    runtime's ``Acceptance`` (``lease``: :func:`lease_run` for a ``wake``). ``state``
    (``{"id", "cache_key", "mode"}``) makes it a state signal: the thread must exist, and a state
    that is current is ``skipped``. With ``prepare`` (``{"last_messages", "read_only"}``), a wake
    also prepares the thread's memory for the run it starts, in the same transaction:
    ``prepared`` is ``(thread, history)`` as ``MemoryStore.prepare_thread`` returns it."""
    id_check(agent_id, "agent id", MAX_AGENT_ID, error=AgentConfigError)
    id_check(signal.get("id"), "signal id", MAX_SIGNAL_ID)
    if key is not None:
        resource_id, thread_id = thread_ref(key)
    else:
        id_check(target_run_id, "run_id", MAX_RUN_ID)
    fresh = False  # the thread's row is created by this input
    with transaction.atomic():
        if key is None:
            lease = lease_lock_by_run(target_run_id)
            # the time of the decision is read once the lease is locked: a wait for the lock must
            # not make a lease this input takes expire sooner (its owner renews a third of a TTL later)
            now = timezone.now()
            if lease is None or not lease_is_active(lease, now):
                raise SignalError(f"no active run {target_run_id!r}; give resource_id and thread_id to reach an "
                                  "idle thread", code="unknown_run")
            key = lease.thread_id
            resource_id, thread_id = thread_ref(key)
            thread = None  # an active run's thread: never woken here, so its row is not needed
        else:
            if state is not None:
                thread = thread_checked(resource_id, thread_id)
                if thread is None or not thread.saved:
                    raise SignalError(f"sendStateSignal could not load thread {thread_id}", code="thread_not_found")
            else:
                thread, fresh = thread_ensure(resource_id, thread_id)
            lease = lease_lock_or_create(thread, created=fresh)
            now = timezone.now()
        decision = input_decide(lease_view(lease, now), agent_id=agent_id, mode=mode, if_active=if_active,
                                if_idle=if_idle)
        if lease._state.adding and decision.action not in ("wake", "persist"):
            lease_save(lease)  # a new thread's lease, idle (a wake and a persist write it with their change)
        branch = if_active if decision.branch == "if_active" else if_idle
        accepted = {**signal, "attributes": {**signal.get("attributes", {}), **branch["attributes"]},
                    "acceptedAt": now.isoformat()}
        if state is not None:
            thread = Thread.objects.select_for_update().get(pk=key)  # its metadata changes
            recorded = state_signal_record(thread, state=state, signal=accepted, now=now)
            if recorded is None:
                return Acceptance("skipped", key, accepted, resource_id, thread_id)
            accepted = recorded
        base = {"key": key, "signal": accepted, "resource_id": resource_id, "thread_id": thread_id}
        if decision.action == "discard":
            return Acceptance("discard", **base)
        # signal ids are unique within a thread: another resource's ids say nothing here; a thread
        # this input creates has neither inputs nor messages yet (their rows point at its row)
        if not fresh and exists_any((ThreadInput, {"thread_id": key, "input_id": accepted["id"]}),
                                    (Message, {"thread_id": key, "message_id": accepted["id"]})):
            raise SignalError(f"signal id {accepted['id']!r} is already used", code="duplicate_signal_id")
        if decision.waits:  # the input waits for a run: refused over the cap, nothing stored
            check_pending_inputs(ThreadInput.objects.row_count({"thread_id": key,
                                                               "status": ThreadInput.Status.PENDING}))
        # the rendered XML travels with the stored signal: PostgreSQL's jsonb does not keep the order
        # of the attributes, the rendered string does
        stored = {**accepted, "rendered": render_content(accepted)}
        common = {"input_id": accepted["id"], "thread_id": key, "agent_id": agent_id, "signal": stored}
        if decision.action == "echo":
            # stored now as an input; the owner writes it into the history where it belongs in
            # the run's order (at its next step boundary, or when the run ends)
            ThreadInput.objects.insert_rows([{**common, "kind": ThreadInput.Kind.ECHO, "run_id": lease.owner_run_id}])
            return Acceptance("persist", **base)
        if decision.action == "blocked":
            return Acceptance("blocked", **base, reason=THREAD_BLOCKED, run_id=lease.owner_run_id)
        if decision.action == "queue":  # a run of its own once the holder's ends
            ThreadInput.objects.insert_rows([{**common, "kind": ThreadInput.Kind.QUEUE, "run_id": new_run_id,
                                              "stream_options": stream_options}])
            return Acceptance("deliver", **base, run_id=new_run_id, queued=True)
        if decision.action == "deliver":
            ThreadInput.objects.insert_rows([{**common, "kind": ThreadInput.Kind.DELIVER,
                                              "run_id": lease.owner_run_id}])
            return Acceptance("deliver", **base, run_id=lease.owner_run_id)
        if decision.action == "persist":
            if fresh:  # stored under the thread's id; the thread itself does not exist yet (Mastra)
                Thread.objects.update_rows({"key": key}, {"saved": False})
            input_persist_history(lease, stored)
            synthetic = new_run_id
            chunks = events_number(lease, persist_run_chunks(echo_chunk(accepted, synthetic), synthetic))
            events_append_locked(lease, chunks)
            lease_save(lease)
            return Acceptance("persist", **base, events=chunks)
        # idle + wake: take the lease; inputs a dead owner left behind run first, in order
        if thread is not None and not thread.saved:  # the run creates the thread over persisted inputs
            thread_save_pending(thread, now)
        if decision.reclaim:
            lease_reclaim(lease, now)
        lease_take(lease, run_id=new_run_id, agent_id=agent_id, process_id=process_id, ttl_ms=ttl_ms, now=now)
        lease_save(lease)
        leftovers = inputs_take_for_run(lease) if decision.leftovers else []
        ThreadInput.objects.insert_rows([{**common, "kind": ThreadInput.Kind.DELIVER, "run_id": new_run_id,
                                  "status": ThreadInput.Status.CONSUMED, "consumed_by": new_run_id,
                                  "consumed_at": now, "stream_options": stream_options}])
        Run.objects.insert_rows([{"id": new_run_id, "agent_id": agent_id, "thread_id": key, "resource_id": resource_id,
                                  "status": Run.Status.RUNNING, "started_at": now}])  # a new id: no row to update
        prepared = None if prepare is None else thread_prepare_locked(
            thread, resource_id=resource_id, thread_id=thread_id, fresh=fresh, **prepare)
        return Acceptance("wake", **base, run_id=new_run_id, lease=lease_run(lease, leftovers + [stored], stream_options),
                          prepared=prepared)


def inputs_take(*, key: str, run_id: str, token: int) -> list[dict]:
    """Inputs waiting for the owner's next step (deliver, and persisted ones to echo), in order,
    marked consumed by ``run_id``: ``[{"kind", "signal"}]``. A fenced-out owner takes nothing."""
    thread_ref(key)
    waiting = {"thread_id": key, "status": ThreadInput.Status.PENDING, "kind": list(STEP_KINDS)}
    if not ThreadInput.objects.row_exists(waiting):
        # the usual answer, read without a write transaction; an input stored just after this is
        # taken at the next step boundary or handed to the next run by run_finish
        return []
    with transaction.atomic():
        lease = lease_lock(key)  # the lease first, as everywhere
        if lease is None or lease.owner_run_id != run_id or lease.token != token:
            return []
        rows = ThreadInput.objects.select_rows(waiting, order_by=("id",), for_update=True)
        if not rows:
            return []
        inputs_mark_consumed(rows, run_id, timezone.now())
        return [{"kind": r.kind, "signal": r.signal} for r in rows]


def queued_inputs_list(*, key: str) -> list[dict]:
    """Inputs waiting for a run of the thread (not the echoes), oldest first."""
    thread_ref(key)
    rows = ThreadInput.objects.filter(thread_id=key, status=ThreadInput.Status.PENDING,
                                      kind__in=WAITING_KINDS).order_by("id")
    return [{"id": r.input_id, "kind": r.kind, "runId": r.run_id, "agentId": r.agent_id, "signal": r.signal,
             "createdAt": r.created_at.isoformat()} for r in rows]


def queued_inputs_cancel(*, key: str | None, ids: list[str]) -> int:
    """Cancel waiting inputs of the thread ``key`` by id (of any thread with ``key`` None: the
    admin's action); returns how many were still waiting."""
    rows = ThreadInput.objects.all() if key is None else ThreadInput.objects.filter(thread_id=key)
    return rows.filter(input_id__in=ids, status=ThreadInput.Status.PENDING, kind__in=WAITING_KINDS).update(
        status=ThreadInput.Status.CANCELLED)
