"""``send_notification_signal``: store (create or coalesce) notifications, decide, and act at once
where Mastra acts at once; everything scheduled for later is the dispatcher's.

What each action does at receipt time (Mastra's ``sendNotificationSignal``):

- ``discard``: the record is kept with status ``discarded``; ``persist``: only the reason is
  written, the record stays pending with its schedule;
- ``deliver`` / ``queue``: the full notification now (at ``deliver_at`` when that is later);
- ``defer``: the full notification at ``deliver_at``, else once the thread is idle;
- ``summarize``: ``summary_at`` (now when absent) is written; the summary goes out at once only when
  it is due and the record is medium, or high with a ``deliver_at`` (a high record summarised while
  the thread is busy gets its full delivery once the thread is idle). A low record's summary is
  never sent at receipt: the dispatcher sends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import weakref
from datetime import datetime
from typing import Any

from ..errors import NotificationError
from ..messages import new_id
from .delivery import IDLE_RECHECK, LOCK_TTL, NotificationResult, prepare_emission, send_and_settle, settle_fields
from .policy import NotificationDecision, resolve_decision, rule_decision, summarizes_now, validate_policy
from .store import get_notification_store
from .thread_access import check_if_idle, notification_thread_key, thread_runtime
from .validation import utcnow, validate_notifications, validate_target


def schedule_fields(decision: NotificationDecision, record: dict, *, now: datetime) -> tuple[dict, str]:
    """Record fields for a decision, and what to do at once: ``deliver``, ``summarise`` or ``none``."""
    f: dict[str, Any] = {"delivery_reason": decision.reason or ""}
    action = decision.action
    if action == "discard":
        f.update(status="discarded", discarded_at=now)
        return f, "none"
    if action == "persist":
        return f, "none"
    if action in ("deliver", "queue"):
        if decision.deliver_at is not None and decision.deliver_at > now:
            f.update(deliver_at=decision.deliver_at, deliver_when_idle=decision.deliver_when_idle)
            return f, "none"
        return f, "deliver"
    if decision.summary_at is not None:
        f["summary_at"] = decision.summary_at
    if action == "defer":
        f.update(deliver_at=decision.deliver_at or now,
                 deliver_when_idle=decision.deliver_when_idle or decision.deliver_at is None)
        return f, "none"
    # summarize: a full delivery later when deliver_at says so, held back while the thread is busy
    if decision.deliver_at is not None:
        f.update(deliver_at=decision.deliver_at, deliver_when_idle=True)
    elif decision.deliver_when_idle:
        f.update(deliver_at=now, deliver_when_idle=True)
    if summarizes_now(decision, record["priority"], now):
        f["summary_at"] = now  # cleared once the summary is out, kept (due) if sending it fails
        return f, "summarise"
    f["summary_at"] = decision.summary_at or now
    return f, "none"


def plan_records(records: list[dict], decisions: dict[str, NotificationDecision], *, now: datetime) -> dict:
    """What one call does with its records once they are decided (pure: no I/O, safe in a worker
    thread): their schedule fields, the emission (:class:`Emission`), and the records it emits
    nothing for already settled (claim dropped, ``next_due_at`` set).

    Returns ``{"updates", "decisions", "emission", "stream_options"}``; ``updates`` (``{"id",
    **fields}`` for records still claimed by the call's token) must be written before anything is
    sent: the schedule with the signal ids of records about to be emitted, and the final fields of
    the others.
    """
    final: dict[str, dict] = {}
    for r in records:  # a record coalesced twice in one call is decided once, on its final content
        final[r["id"]] = r
    schedule: dict[str, dict] = {}
    options: dict[str, dict] = {}
    deliver, summarise, release = [], [], []
    for rid, record in final.items():
        decision = decisions[rid]
        fields, act = schedule_fields(decision, record, now=now)
        schedule[rid] = fields
        if decision.stream_options:
            options[rid] = decision.stream_options
        {"deliver": deliver, "summarise": summarise, "none": release}[act].append(record)
    em = prepare_emission(origin="send", deliver=deliver, summarise=summarise, wait=[], release=release,
                          schedule=schedule)
    for r in release:
        em.settled[r["id"]] = settle_fields(em, r["id"], now=now, recheck=IDLE_RECHECK, failures={},
                                            retry_later=set(), waiting=set())
    updates = em.before + [{"id": rid, **f} for rid, f in em.settled.items()]
    return {"updates": updates, "decisions": decisions, "emission": em, "stream_options": options}


def rule_planner(policy: dict, now: datetime):
    """``plan(records, thread_state)`` for a policy without ``decide()``: the decisions depend only on
    the records and the thread's state, so the store can run it inside the ingest transaction."""

    def plan(records: list[dict], state: dict | None) -> dict:
        active = bool(state and state.get("active_run_id"))
        decisions = {r["id"]: rule_decision(policy, r, active, now) for r in records}
        return plan_records(records, decisions, now=now)

    return plan


_turns: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, list]]" = weakref.WeakKeyDictionary()
_held_turns: contextvars.ContextVar[frozenset] = contextvars.ContextVar("notification_turns", default=frozenset())


@contextlib.asynccontextmanager
async def thread_turn(key: str):
    """Calls for one thread in this event loop take turns, first come first served: a later call
    starts once the earlier one has returned, so it sees what that one stored and emitted (as if
    they had been made one after the other). A call made from inside a turn of the same thread (a
    ``decide()`` or a woken run sending to its own thread) does not wait for itself."""
    held = _held_turns.get()
    if key in held:
        yield
        return
    turns = _turns.setdefault(asyncio.get_running_loop(), {})
    entry = turns.get(key)
    if entry is None:
        entry = turns[key] = [asyncio.Lock(), 0]
    entry[1] += 1
    try:
        async with entry[0]:
            reset = _held_turns.set(held | {key})
            try:
                yield
            finally:
                _held_turns.reset(reset)
    finally:
        entry[1] -= 1
        if entry[1] == 0 and turns.get(key) is entry:
            del turns[key]


async def send_notification_signal(agent: Any, notifications: Any, *, resource_id: str, thread_id: str,
                                   if_idle: dict | None = None, now: datetime | None = None) -> Any:
    """Store (create or coalesce) one notification or a list, decide, and act (see the module
    docstring).

    Everything is validated before anything is stored. The thread's state is read once for the
    batch. Full deliveries go out one signal each; the records of the batch summarised now are
    covered by one ``<notification-summary>`` that counts them. A dict in gives a
    :class:`NotificationResult` out, a list gives a list.

    Calls for the same thread in one event loop take turns (:func:`thread_turn`). With a store
    that group-commits (the Django store), concurrent calls share one transaction: their records,
    their threads' states and — for a policy without ``decide()`` — their decisions' schedule fields
    are written together; signals are emitted after the commit.
    """
    single = isinstance(notifications, dict)
    items = [notifications] if single else notifications
    if not isinstance(items, (list, tuple)):
        raise NotificationError("send a notification dict or a list of them", code="invalid_notification")
    if not items:
        raise NotificationError("the list of notifications is empty", code="empty_batch")
    runtime = thread_runtime(agent, "send_notification_signal")  # AgentConfigError without memory
    validate_target(resource_id, thread_id)
    normalized = validate_notifications(items)
    policy = validate_policy((agent.notifications or {}).get("delivery_policy"))
    if if_idle is not None:
        check_if_idle(if_idle)
    store = get_notification_store()
    now = now or utcnow()
    token = new_id("lock_")
    key = notification_thread_key(resource_id, thread_id)
    call = {"agent_id": agent.id, "resource_id": resource_id, "thread_id": thread_id, "notifications": normalized,
            "token": token, "locked_until": now + LOCK_TTL, "now": now}
    async with thread_turn(key):
        ingested = await store.ingest(**call, thread_key=key, thread_store=runtime.store,
                                      plan=rule_planner(policy, now) if policy.get("decide") is None else None)
        records, planned = ingested.records, ingested.planned
        state = ingested.thread if ingested.thread_read else await runtime.store.thread_state(key=key)
        update = store.update
        if planned is None:  # decide() runs here, on the event loop, then the updates are written
            active = bool(state and state.get("active_run_id"))
            thread = {"active": active, "run_id": (state or {}).get("active_run_id")}
            final = {r["id"]: r for r in records}
            decisions = {rid: await resolve_decision(policy, record, active, now, agent=agent, thread=thread)
                         for rid, record in final.items()}
            planned = plan_records(records, decisions, now=now)
            if planned["updates"]:
                await update(updates=planned["updates"], token=token)
        outcome = await send_and_settle(agent, planned["emission"], update=update, token=token,
                                        resource_id=resource_id, thread_id=thread_id, now=now, if_idle=if_idle,
                                        stream_options=planned["stream_options"], recheck=IDLE_RECHECK)
    decisions = planned["decisions"]
    final = planned["emission"].records
    results = []
    for r in records:
        out = outcome.get(r["id"], {})
        results.append(NotificationResult(record=out.get("record", final[r["id"]]), decision=decisions[r["id"]],
                                          signal=out.get("signal"), run_id=out.get("run_id"),
                                          action=out.get("action"), output=out.get("output"),
                                          error=out.get("error")))
    return results[0] if single else results
