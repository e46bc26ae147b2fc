""":class:`InMemoryThreadStore`: the :class:`~.store.ThreadStore` protocol in one process's memory.

For runtime tests (no database): the same semantics as ``agents.threads.store.DjangoThreadStore``,
checked by the same contract tests. Leases carry a fencing token; every lease change is a
compare-and-set on the owner run id and the token; inputs wait in acceptance order; events get the
thread's ``seq``; state signals are tracked on the thread's metadata. Each method runs without an
``await`` inside, so on one event loop it is atomic, as a transaction. ``clock`` (seconds, default
``time.time``) is injectable for lease expiry.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from datetime import datetime, timezone
from typing import Any, Callable

from ..chunks import abort_chunk, persist_run_chunks, snapshot_chunk
from ..errors import SignalError
from ..limits import check_pending_inputs
from ..signal import echo_chunk, render_content
from ..state_tracking import apply_state_signal
from ..stored_messages import signal_to_stored, stored_form
from .store import AbortRequest, Acceptance, Renewal, RunEnd, RunLease, thread_key
from .decision import (DELIVER, ECHO, QUEUE, STEP_KINDS, THREAD_BLOCKED, WAITING_KINDS, LeaseView, input_decide,
                       lease_held, next_run)
from .events import SEQ_BLOCK

#: events kept per thread (``agents.threads.events.EVENT_RETENTION``)
EVENT_RETENTION = 2000


class InMemoryThreadStore:
    """Leases, inputs, events, runs, threads and their history, in dicts (see the module docstring).

    ``threads`` maps thread ids to ``{"resource_id", "metadata"}``; ``history`` maps thread ids to
    the messages written by persisted inputs and ended runs; ``runs`` maps run ids to records."""

    def __init__(self, *, clock: Callable[[], float] = time.time, event_retention: int = EVENT_RETENTION):
        self.clock = clock
        self.event_retention = event_retention
        self.leases: dict[str, dict] = {}
        self.inputs: list[dict] = []
        self.events: dict[str, list[dict]] = {}
        self.runs: dict[str, dict] = {}
        self.threads: dict[str, dict] = {}
        self.history: dict[str, list[dict]] = {}
        self._ids = itertools.count(1)

    # -- helpers (one "transaction" each) ------------------------------------------------------
    def thread_create(self, *, resource_id: str, thread_id: str, metadata: dict | None = None) -> None:
        """Create the thread (as the memory store does on a run's first message)."""
        self.threads.setdefault(thread_key(resource_id, thread_id), {"resource_id": resource_id, "metadata": dict(metadata or {})})

    def _now_iso(self) -> str:
        return datetime.fromtimestamp(self.clock(), timezone.utc).isoformat()

    def _lease(self, key: str, resource_id: str, thread_id: str) -> dict:
        lease = self.leases.get(key)
        if lease is None:
            lease = self.leases[key] = {"key": key, "resource_id": resource_id, "thread_id": thread_id, "agent_id": "",
                                        "owner_run_id": None, "owner_process": "", "status": "idle", "token": 0,
                                        "expires_at": None, "abort_requested": False, "last_seq": 0,
                                        "reserved_seq": 0}
        return lease

    def _take(self, lease: dict, *, run_id: str, agent_id: str, process_id: str, ttl_ms: int) -> None:
        # the new owner's seqs follow every seq written or reserved (a dead owner's are skipped)
        start = max(lease["last_seq"], lease["reserved_seq"])
        lease.update(last_seq=start, reserved_seq=start + SEQ_BLOCK)
        lease.update(owner_run_id=run_id, agent_id=agent_id, owner_process=process_id, status="running",
                     token=lease["token"] + 1, expires_at=self.clock() + ttl_ms / 1000.0, abort_requested=False)

    def _add_input(self, lease: dict, *, signal: dict, agent_id: str, kind: str, run_id: str | None,
                   status: str = "pending", stream_options: dict | None = None) -> dict:
        row = {"id": next(self._ids), "input_id": signal["id"], "key": lease["key"], "kind": kind, "status": status,
               "run_id": run_id, "agent_id": agent_id, "resource_id": lease["resource_id"],
               "thread_id": lease["thread_id"], "signal": signal, "stream_options": stream_options or {},
               "consumed_by": run_id if status == "consumed" else None, "created_at": self._now_iso()}
        self.inputs.append(row)
        return row

    def _pending(self, key: str, kinds: tuple[str, ...]) -> list[dict]:
        return [r for r in self.inputs if r["key"] == key and r["status"] == "pending" and r["kind"] in kinds]

    def _append(self, lease: dict, chunks: list[dict]) -> None:
        log = self.events.setdefault(lease["key"], [])
        log.extend(chunks)
        lease["last_seq"] = max(lease["last_seq"], chunks[-1]["seq"])
        if len(log) > self.event_retention:
            del log[:len(log) - self.event_retention]

    def _persist(self, lease: dict, signal: dict) -> None:
        # as Mastra: a persisted input is stored under the thread's id without creating the thread
        # (a run saving messages creates it, ``finish``)
        messages = self.history.setdefault(lease["key"], [])
        if not any(m["id"] == signal["id"] for m in messages):
            messages.append({**signal_to_stored(signal), "threadId": lease["thread_id"],
                             "resourceId": lease["resource_id"]})

    def _reclaim(self, lease: dict) -> None:
        """The owner died: inputs it took and never saved wait again; its run failed."""
        dead = lease["owner_run_id"]
        lease["last_seq"] = max(lease["last_seq"], lease["reserved_seq"])  # it may have handed them out
        saved = {m["id"] for m in self.history.get(lease["key"], ())}
        for row in self.inputs:
            if row["key"] == lease["key"] and row["consumed_by"] == dead and row["status"] == "consumed" \
                    and row["input_id"] not in saved:
                row.update(status="pending", consumed_by=None)
        run = self.runs.get(dead)
        if run is not None and run["status"] == "running":
            run.update(status="failed", finish_reason="error", error="the process running it stopped")

    def _next_start(self, lease: dict, *, new_run_id: str, process_id: str, ttl_ms: int,
                    events: list[dict]) -> RunLease | None:
        rows = self._pending(lease["key"], (DELIVER, QUEUE, ECHO))
        plan = next_run([r["kind"] for r in rows])
        if plan.echoes:
            echoes = [rows[i] for i in plan.echoes]
            for row in echoes:
                self._persist(lease, row["signal"])
            _consume(echoes, lease["owner_run_id"])
            chunks = _number(lease, [echo_chunk(r["signal"], lease["owner_run_id"]) for r in echoes])
            self._append(lease, chunks)
            events.extend(chunks)
        if not plan.taken:
            _release(lease)
            return None
        taken = [rows[i] for i in plan.taken]
        first = taken[0]
        run_id = first["run_id"] if plan.own_run_id else new_run_id
        self._take(lease, run_id=run_id, agent_id=first["agent_id"], process_id=process_id, ttl_ms=ttl_ms)
        _consume(taken, run_id)
        self.runs.setdefault(run_id, {"id": run_id}).update(
            agent_id=first["agent_id"], resource_id=lease["resource_id"], thread_id=lease["thread_id"],
            status="running")
        return _run_lease(lease, [r["signal"] for r in taken], first["stream_options"])

    # -- the protocol --------------------------------------------------------------------------
    def prepares_memory_of(self, memory_store: Any) -> bool:
        return False

    async def accept(self, *, key: str | None, agent_id: str, resource_id: str | None, thread_id: str | None,
                     signal: dict, mode: str, if_active: dict, if_idle: dict, target_run_id: str | None,
                     new_run_id: str, stream_options: dict, ttl_ms: int, process_id: str, state: dict | None,
                     prepare: dict | None) -> Acceptance:
        if key is None:
            lease = next((x for x in self.leases.values() if x["owner_run_id"] == target_run_id), None)
            if lease is None or not _active(lease, self.clock()):
                raise SignalError(f"no active run {target_run_id!r}; give resource_id and thread_id to reach an "
                                  "idle thread", code="unknown_run")
            key, resource_id, thread_id = lease["key"], lease["resource_id"], lease["thread_id"]
            thread = self.threads.get(key)
        else:
            thread = self._checked(resource_id, thread_id)
            if state is not None and thread is None:
                raise SignalError(f"sendStateSignal could not load thread {thread_id}", code="thread_not_found")
            lease = self._lease(key, resource_id, thread_id)  # checked first: a refusal stores nothing
        decision = input_decide(_view(lease, self.clock()), agent_id=agent_id, mode=mode, if_active=if_active,
                                if_idle=if_idle)
        branch = if_active if decision.branch == "if_active" else if_idle
        accepted = {**signal, "attributes": {**signal.get("attributes", {}), **branch["attributes"]},
                    "acceptedAt": self._now_iso()}
        if state is not None:
            if thread is None:
                raise SignalError(f"sendStateSignal could not load thread {thread_id}", code="thread_not_found")
            recorded = _state_record(thread, thread_id, state, accepted, self._now_iso())
            if recorded is None:
                return Acceptance("skipped", key, accepted, resource_id, thread_id)
            accepted = recorded
        base = {"key": key, "signal": accepted, "resource_id": resource_id, "thread_id": thread_id}
        if decision.action == "discard":
            return Acceptance("discard", **base)
        # signal ids are unique within a thread
        if any(r["key"] == key and r["input_id"] == accepted["id"] for r in self.inputs) \
                or any(m["id"] == accepted["id"] for m in self.history.get(key, ())):
            raise SignalError(f"signal id {accepted['id']!r} is already used", code="duplicate_signal_id")
        if decision.waits:
            check_pending_inputs(sum(1 for r in self.inputs if r["key"] == key and r["status"] == "pending"))
        stored = {**accepted, "rendered": render_content(accepted)}  # rendered once, here
        if decision.action == "echo":
            self._add_input(lease, signal=stored, agent_id=agent_id, kind=ECHO, run_id=lease["owner_run_id"])
            return Acceptance("persist", **base)
        if decision.action == "blocked":
            return Acceptance("blocked", **base, reason=THREAD_BLOCKED, run_id=lease["owner_run_id"])
        if decision.action == "queue":
            self._add_input(lease, signal=stored, agent_id=agent_id, kind=QUEUE, run_id=new_run_id,
                            stream_options=stream_options)
            return Acceptance("deliver", **base, run_id=new_run_id, queued=True)
        if decision.action == "deliver":
            self._add_input(lease, signal=stored, agent_id=agent_id, kind=DELIVER, run_id=lease["owner_run_id"])
            return Acceptance("deliver", **base, run_id=lease["owner_run_id"])
        if decision.action == "persist":
            self._persist(lease, stored)
            chunks = _number(lease, persist_run_chunks(echo_chunk(accepted, new_run_id), new_run_id))
            self._append(lease, chunks)
            return Acceptance("persist", **base, events=chunks)
        if decision.reclaim:
            self._reclaim(lease)
        self._take(lease, run_id=new_run_id, agent_id=agent_id, process_id=process_id, ttl_ms=ttl_ms)
        leftovers = self._pending(key, (DELIVER,)) if decision.leftovers else []
        _consume(leftovers, new_run_id)
        self._add_input(lease, signal=stored, agent_id=agent_id, kind="deliver", run_id=new_run_id,
                        status="consumed", stream_options=stream_options)
        self.runs[new_run_id] = {"id": new_run_id, "agent_id": agent_id, "resource_id": resource_id,
                                 "thread_id": thread_id, "status": "running"}
        return Acceptance("wake", **base, run_id=new_run_id,
                          lease=_run_lease(lease, [r["signal"] for r in leftovers] + [stored], stream_options))

    async def take_inputs(self, *, key: str, run_id: str, token: int) -> list[dict]:
        lease = self.leases.get(key)
        if lease is None or lease["owner_run_id"] != run_id or lease["token"] != token:
            return []
        rows = self._pending(key, STEP_KINDS)
        _consume(rows, run_id)
        return [{"kind": r["kind"], "signal": r["signal"]} for r in rows]

    async def finish(self, *, key: str, run_id: str, token: int, last_seq: int, new_run_id: str, process_id: str,
                     ttl_ms: int, events: list[dict] | None = None, messages: list[dict] | None = None,
                     record: dict | None = None) -> RunEnd:
        lease = self.leases.get(key)
        if lease is None or lease["owner_run_id"] != run_id or lease["token"] != token:
            return RunEnd(fenced=True)
        if events:
            self._append(lease, events)
        if messages:
            self.thread_create(resource_id=lease["resource_id"], thread_id=lease["thread_id"])
            history = self.history.setdefault(lease["key"], [])
            known = {m["id"] for m in history}
            history.extend({**m, "threadId": lease["thread_id"], "resourceId": lease["resource_id"]}
                           for m in stored_form(messages) if m["id"] not in known)
        if record is not None:
            self.runs.setdefault(record["id"], {}).update(record, status=record.get("status") or "completed")
        _trim_seqs(lease, last_seq)
        echoes: list[dict] = []
        nxt = self._next_start(lease, new_run_id=new_run_id, process_id=process_id, ttl_ms=ttl_ms, events=echoes)
        return RunEnd(next=nxt, events=echoes)

    async def renew(self, *, key: str, run_id: str, token: int, ttl_ms: int) -> Renewal:
        lease = self.leases.get(key)
        if lease is None or lease["owner_run_id"] != run_id or lease["token"] != token or lease["status"] != "running":
            return Renewal(ok=False)
        lease["expires_at"] = self.clock() + ttl_ms / 1000.0
        return Renewal(ok=True, abort=lease["abort_requested"])

    async def append_events(self, *, key: str, token: int, events: list[dict], reserve: int | None = None) -> bool:
        lease = self.leases.get(key)
        if lease is None or lease["token"] != token:
            return False
        if events:
            self._append(lease, events)
        if reserve is not None:
            lease["reserved_seq"] = max(lease["reserved_seq"], reserve)
        return True

    async def append_events_many(self, *, writes: list[dict]) -> list[bool]:
        return [await self.append_events(key=w["key"], token=w["token"], events=w["events"], reserve=w.get("reserve"))
                for w in writes]

    async def read_events(self, *, key: str, after_seq: int | None = None, run_id: str | None = None) -> list[dict]:
        log = self.events.get(key, [])
        if after_seq is not None:
            rows = [c for c in log if c["seq"] > after_seq]
            lease = self.leases.get(key)
            # a gap above ``last_seq - retention`` is a dead run's reserved seqs, not pruned ones
            if log and log[0]["seq"] > after_seq + 1 and after_seq < lease["last_seq"] - self.event_retention:
                snapshot = snapshot_chunk(thread_id=lease["thread_id"], resource_id=lease["resource_id"],
                                          messages=list(self.history.get(lease["key"], ())),
                                          seq=log[0]["seq"] - 1)
                return [snapshot] + rows
            log = rows
        if run_id is not None:
            log = [c for c in log if c.get("runId") == run_id]
        return list(log)

    def _checked(self, resource_id: str, thread_id: str) -> dict | None:
        """The entry of the thread (resource_id, thread_id), or None."""
        return self.threads.get(thread_key(resource_id, thread_id))

    async def thread_state(self, *, key: str) -> dict | None:
        lease = self.leases.get(key)
        if lease is None:
            return None
        active = _active(lease, self.clock())
        return {"active_run_id": lease["owner_run_id"] if active else None,
                "status": lease["status"] if active else "idle", "agent_id": lease["agent_id"],
                "last_seq": lease["last_seq"]}

    async def request_abort(self, *, key: str) -> AbortRequest | None:
        lease = self.leases.get(key)
        if lease is None or not _active(lease, self.clock()):
            return None
        run_id = lease["owner_run_id"]
        if lease["status"] == "suspended":
            self.runs.setdefault(run_id, {"id": run_id}).update(status="aborted", finish_reason="abort")
            chunks = [abort_chunk(run_id, lease["last_seq"] + 1)]
            self._append(lease, chunks)
            _release(lease)
            return AbortRequest(run_id, events=chunks, released=True)
        lease["abort_requested"] = True
        return AbortRequest(run_id)

    async def suspend(self, *, key: str, run_id: str, token: int, last_seq: int,
                      events: list[dict] | None = None) -> None:
        lease = self.leases[key]
        if lease["owner_run_id"] != run_id or lease["token"] != token:
            return
        if events:
            self._append(lease, events)
        _trim_seqs(lease, last_seq)
        lease.update(status="suspended", expires_at=None)

    async def resume(self, *, run_id: str, process_id: str, ttl_ms: int) -> RunLease | None:
        lease = next((x for x in self.leases.values()
                      if x["owner_run_id"] == run_id and x["status"] == "suspended"), None)
        if lease is None:
            return None
        self._take(lease, run_id=run_id, agent_id=lease["agent_id"], process_id=process_id, ttl_ms=ttl_ms)
        return _run_lease(lease, [])

    async def recover(self, *, process_id: str, ttl_ms: int, new_run_id: Callable[[], str],
                      agent_ids: list[str] | None = None) -> list[RunLease]:
        now = self.clock()
        expired = [x["key"] for x in self.leases.values() if x["status"] == "running"
                   and x["expires_at"] is not None and x["expires_at"] < now
                   and (agent_ids is None or x["agent_id"] in agent_ids)]
        waiting = [r["key"] for r in self.inputs if r["status"] == "pending" and r["kind"] in WAITING_KINDS
                   and (agent_ids is None or r["agent_id"] in agent_ids)]
        started = []
        for key in dict.fromkeys(expired + waiting):
            lease = self.leases.get(key)
            if lease is None or _active(lease, self.clock()):
                continue
            if lease["owner_run_id"]:
                self._reclaim(lease)
            echoes: list[dict] = []
            nxt = self._next_start(lease, new_run_id=new_run_id(), process_id=process_id, ttl_ms=ttl_ms,
                                   events=echoes)
            if nxt is not None:
                started.append(dataclasses.replace(nxt, events=echoes))
        return started

    async def list_queued(self, *, key: str) -> list[dict]:
        return [{"id": r["input_id"], "kind": r["kind"], "runId": r["run_id"], "agentId": r["agent_id"],
                 "signal": r["signal"], "createdAt": r["created_at"]} for r in self._pending(key, WAITING_KINDS)]

    async def cancel_queued(self, *, key: str, ids: list[str]) -> int:
        rows = [r for r in self.inputs if r["key"] == key and r["input_id"] in ids and r["status"] == "pending"
                and r["kind"] in WAITING_KINDS]
        for row in rows:
            row["status"] = "cancelled"
        return len(rows)


def _active(lease: dict, now: float) -> bool:
    """Whether ``lease`` holds its thread at ``now`` (``decision.lease_held``)."""
    return lease_held(owner_run_id=lease["owner_run_id"], status=lease["status"], expires_at=lease["expires_at"],
                      now=now)


def _view(lease: dict, now: float) -> LeaseView:
    return LeaseView(held=_active(lease, now), agent_id=lease["agent_id"], status=lease["status"],
                     owner_run_id=lease["owner_run_id"], token=lease["token"])


def _release(lease: dict) -> None:
    lease.update(owner_run_id=None, owner_process="", status="idle", expires_at=None, abort_requested=False)


def _run_lease(lease: dict, signals: list[dict], stream_options: dict | None = None) -> RunLease:
    return RunLease(key=lease["key"], run_id=lease["owner_run_id"], token=lease["token"], last_seq=lease["last_seq"],
                    reserved_seq=lease["reserved_seq"], agent_id=lease["agent_id"],
                    resource_id=lease["resource_id"], thread_id=lease["thread_id"], signals=signals,
                    stream_options=stream_options or {})


def _consume(rows: list[dict], run_id: str) -> None:
    for row in rows:
        row.update(status="consumed", consumed_by=run_id)


def _number(lease: dict, chunks: list[dict]) -> list[dict]:
    base = max(lease["last_seq"], lease["reserved_seq"])
    for offset, chunk in enumerate(chunks, start=1):
        chunk["seq"] = base + offset
    return chunks


def _trim_seqs(lease: dict, last_seq: int) -> None:
    """The owner names the last seq it handed out: its reservation beyond is free again."""
    lease["last_seq"] = max(lease["last_seq"], last_seq)
    lease["reserved_seq"] = lease["last_seq"]


def _state_record(thread: dict, thread_id: str, state: dict, signal: dict, now_iso: str) -> dict | None:
    """A state signal applied to a thread dict's tracking (``state_tracking.apply_state_signal``)."""
    applied = apply_state_signal(thread["metadata"], state=state, signal=signal, thread_id=thread_id, now_iso=now_iso)
    if applied is None:
        return None
    recorded, thread["metadata"] = applied
    return recorded


__all__ = ["EVENT_RETENTION", "InMemoryThreadStore"]
