"""Dispatch of due notification records (``deliver_at`` / ``summary_at`` reached).

``dispatch_due_notifications(now=...)`` claims due records in batches of 100, highest priority first
(so a flood of low summaries cannot starve high records), groups them by agent, resource and thread,
reads each thread's state once, and lets the runtime emit: full notifications, one summary per
thread, or nothing yet for records that wait for an idle thread. Claims are compare-and-set, so two
dispatchers (Celery beat and the in-process scheduler, or two workers) never emit the same record.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any, Callable
from django.conf import settings
from django.utils import timezone

from agents.connections import async_twin
from agents.registry import get_mastra
from agents.runtime.notifications import (LOCK_TTL, emit_records, notification_thread_key, plan_thread_dispatch,
                                          record_json, thread_runtime)
from agents.runtime.notifications.delivery import CLAIM_FIELDS

from .selectors import records_by_id
from .services import notifications_claim_due, notifications_fail
from .store import DjangoNotificationStore

logger = logging.getLogger(__name__)

BATCH_SIZE = 100


def _recheck() -> timedelta:
    return timedelta(seconds=settings.MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S)


def _records_after(ids: list[str]) -> dict[str, dict]:
    return {rid: _unclaimed(record) for rid, record in records_by_id(ids).items()}


def _default_lookup(agent_id: str) -> Any:
    return get_mastra().get_agent(agent_id)


async def dispatch_due_notifications(now: datetime | None = None, *, batch_size: int = BATCH_SIZE,
                                     max_batches: int | None = None,
                                     agent_lookup: Callable[[str], Any] | None = None) -> dict:
    """Emit what is due at ``now`` (default: the current time): batches of ``batch_size`` due records,
    highest priority first, each batch extended to the other due records of its threads.

    Returns Mastra's ``dispatchDueNotifications`` result: ``{"delivered": [record, ...], "failed":
    [{"record", "error"}, ...], "signals": [signal, ...], "counts": {...}}``. ``delivered``: the records a
    signal carried in this dispatch (a full notification, or a summary: such a record stays
    ``pending`` with its ``summary_signal_id``), as stored after it; ``failed``: each failed attempt,
    the record as stored after it and the error text; ``signals``: each signal sent, once, in the
    order sent. ``counts``: ``{"claimed", "delivered", "summarised", "waiting", "failed", "errors",
    "recovered", "batches"}`` (``errors``: failed attempts; ``failed``: records that reached the
    attempt limit)."""
    now = now or timezone.now()
    lookup = agent_lookup or _default_lookup
    store = DjangoNotificationStore()
    out: dict = {"delivered": [], "failed": [], "signals": [], "counts": {
        "claimed": 0, "delivered": 0, "summarised": 0, "waiting": 0, "failed": 0, "errors": 0, "recovered": 0,
        "batches": 0}}
    stats = out["counts"]
    while max_batches is None or stats["batches"] < max_batches:
        token = f"dispatch_{uuid.uuid4().hex}"
        claim = await async_twin(notifications_claim_due)(now=now, limit=batch_size, token=token,
                                                             locked_until=now + LOCK_TTL)
        stats["recovered"] += claim["recovered"]
        rows = claim["records"]
        if not rows and not claim["recovered"]:
            break
        stats["batches"] += 1
        stats["claimed"] += len(rows)
        groups: dict[tuple, list[dict]] = {}
        for row in rows:  # rows come highest priority first; groups keep that order
            groups.setdefault((row["agent_id"], row["resource_id"], row["thread_id"]), []).append(row)
        for (agent_id, resource_id, thread_id), records in groups.items():
            await _dispatch_thread(agent_id, resource_id, thread_id, records, now=now, token=token, store=store,
                                   lookup=lookup, out=out)
    return out


def dispatch_result_json(result: dict) -> dict:
    """A :func:`dispatch_due_notifications` result with date-times as ISO strings (JSON-safe: what
    the Celery task returns)."""
    return {"delivered": [record_json(r) for r in result["delivered"]],
            "failed": [{"record": record_json(f["record"]), "error": f["error"]} for f in result["failed"]],
            "signals": result["signals"], "counts": dict(result["counts"])}


def _unclaimed(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in CLAIM_FIELDS}


async def _dispatch_thread(agent_id: str, resource_id: str, thread_id: str, records: list[dict], *, now: datetime,
                           token: str, store: DjangoNotificationStore, lookup: Callable, out: dict) -> None:
    stats = out["counts"]
    try:
        agent = lookup(agent_id)
        runtime = thread_runtime(agent, "dispatch_due_notifications")
        state = await runtime.store.thread_state(key=notification_thread_key(resource_id, thread_id))
        active = bool(state and state.get("active_run_id"))
        plan = plan_thread_dispatch(records, thread_active=active, now=now)
        planned = {r["id"] for r in [*plan.deliver, *plan.summarise, *plan.wait]}
        outcome = await emit_records(agent, store=store, token=token, resource_id=resource_id, thread_id=thread_id,
                                     deliver=plan.deliver, summarise=plan.summarise, wait=plan.wait,
                                     release=[r for r in records if r["id"] not in planned], schedule={}, now=now,
                                     recheck=_recheck())
    except Exception as exc:
        logger.exception("could not dispatch notifications of thread %s (agent %s)", thread_id, agent_id)
        error = f"{type(exc).__name__}: {exc}"
        stats["errors"] += len(records)
        stats["failed"] += await async_twin(notifications_fail)(
            ids=[r["id"] for r in records], token=token, error=error, now=now, retry_in=_recheck())
        after = await async_twin(_records_after)([r["id"] for r in records])
        out["failed"].extend({"record": after.get(r["id"], _unclaimed(r)), "error": error} for r in records)
        return
    summarised = {r["id"] for r in plan.summarise}
    sent: set[str] = {s["id"] for s in out["signals"]}
    for rid, result in outcome.items():
        record = result.get("record") or {}
        if result.get("error"):
            stats["errors"] += 1
            stats["failed"] += record.get("status") == "failed"
            out["failed"].append({"record": record, "error": result["error"]})
            continue
        signal = result.get("signal")
        if signal is None or result.get("action") == "blocked":
            continue  # nothing carried it (it waits, or the thread was held)
        if record.get("status") == "delivered":
            stats["delivered"] += 1
        elif record.get("summary_signal_id") and rid in summarised:
            stats["summarised"] += 1
        out["delivered"].append(record)
        if signal["id"] not in sent:
            sent.add(signal["id"])
            out["signals"].append(signal)
    stats["waiting"] += len(plan.wait)
