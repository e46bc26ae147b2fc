"""Delivery: emitting the signals for records claimed with one lock token, then settling them.

Records are claimed (compare-and-set in the store) before anything is emitted, and the id of the
signal about to be sent is written first (``attempt_signal_id``), so a dispatcher that takes over
after a crash can tell whether the thread accepted it: an accepted delivery is never repeated.

Two callers, two sets of Mastra's rules (:attr:`Emission.origin`):

- ``"send"`` (``send_notification_signal``): a summary sent at once persists on an idle thread
  unless it covers a medium record (Mastra: ``ifIdle.behavior`` is ``persist`` for high, ``wake``
  for medium), and it is recorded on the records (``summary_signal_id``) only when a run took it
  (``wake`` / ``deliver``);
- ``"dispatch"`` (the dispatcher): a summary persists only when every record it covers is low, it
  is recorded on the records whatever the thread did with it, and a full notification's metadata
  carries ``deliveredAt`` (the dispatcher's clock).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..messages import new_id
from .policy import NotificationDecision
from .rendering import notification_signal, summary_signal
from .store import NotificationStore
from .validation import PRIORITY_RANK, iso_z

logger = logging.getLogger(__name__)

#: failed delivery attempts after which a record is ``failed`` (the dispatcher stops retrying it)
MAX_DELIVERY_ATTEMPTS = 5
#: how long a claim on records holds; a claim older than this is taken over by the next dispatcher
LOCK_TTL = timedelta(seconds=60)
#: while the thread is busy, how often a record waiting for an idle thread is looked at again
IDLE_RECHECK = timedelta(seconds=15)
#: the claim fields, never part of a record handed back to callers
CLAIM_FIELDS = ("lock_token", "locked_until")
#: what the thread did with a signal that counts as taken by a run
TAKEN = ("wake", "deliver")


@dataclass
class NotificationResult:
    """What ``send_notification_signal`` returns per notification. ``signal``, ``run_id``, ``action``
    (and ``output`` for a wake) are set when a signal was emitted for the record (a full notification
    or a summary covering it); ``error`` when emitting it failed (the record stays pending and the
    dispatcher retries)."""

    record: dict
    decision: NotificationDecision
    signal: dict | None = None
    run_id: str | None = None
    action: str | None = None
    output: Any = None
    error: str | None = None

    def to_dict(self) -> dict:
        """``{record, decision, runId?, signal?, action?, error?}``: Mastra's result keys (the
        decision as Mastra writes it), plus what the thread did (``action``) and the error."""
        out: dict[str, Any] = {"record": record_json(self.record), "decision": self.decision.to_dict()}
        if self.run_id is not None:
            out["runId"] = self.run_id
        if self.signal is not None:
            out["signal"] = self.signal
        if self.action is not None:
            out["action"] = self.action
        if self.error:
            out["error"] = self.error
        return out


def record_json(record: dict) -> dict:
    """A record with date-times as ``Date.toISOString()`` writes them (JSON-safe)."""
    return {k: (iso_z(v) if isinstance(v, datetime) else v) for k, v in record.items()}


@dataclass
class DispatchPlan:
    """Records of one thread, split by what to do now (see :func:`plan_thread_dispatch`)."""

    deliver: list[dict] = field(default_factory=list)
    summarise: list[dict] = field(default_factory=list)
    wait: list[dict] = field(default_factory=list)


def plan_thread_dispatch(records: list[dict], *, thread_active: bool, now: datetime) -> DispatchPlan:
    """Split a thread's due records: full deliveries (highest priority first, then oldest), records
    to cover with one summary, and records that wait for the thread to go idle.

    A due full delivery goes out now unless it waits for an idle thread (``deliver_when_idle``: a
    record summarised while the thread was busy) and the thread is busy; then it waits, summarised
    if it has not been yet.
    """
    plan = DispatchPlan()
    ordered = sorted(records, key=lambda r: (-PRIORITY_RANK[r["priority"]], r.get("created_at") or now))
    for r in ordered:
        full_due = r.get("deliver_at") is not None and r["deliver_at"] <= now
        summary_due = r.get("summary_at") is not None and r["summary_at"] <= now
        if full_due and not (thread_active and r.get("deliver_when_idle")):
            plan.deliver.append(r)
        elif full_due:
            plan.wait.append(r)
            if summary_due or not r.get("summary_signal_id"):
                plan.summarise.append(r)
        elif summary_due:
            plan.summarise.append(r)
    return plan


@dataclass
class Emission:
    """What one call emits for records claimed with one token, prepared before anything is sent: per
    record its field changes (``fields``, the policy's schedule first), the ids of the signals about
    to be sent, and the updates to write before sending (``before``). Records in ``settled`` (id →
    final fields) were settled and written already: nothing is sent for them."""

    origin: str
    records: dict[str, dict]
    fields: dict[str, dict]
    full_ids: dict[str, str]
    summary_id: str | None
    deliver: list[dict]
    summarise: list[dict]
    wait: list[dict]
    before: list[dict]
    settled: dict[str, dict] = field(default_factory=dict)

    def summary_wakes(self) -> bool:
        """Whether the summary may wake an idle thread (see the module docstring)."""
        if self.origin == "send":
            return any(r["priority"] == "medium" for r in self.summarise)
        return any(PRIORITY_RANK[r["priority"]] > PRIORITY_RANK["low"] for r in self.summarise)


def prepare_emission(*, origin: str, deliver: list[dict], summarise: list[dict], wait: list[dict],
                     release: list[dict], schedule: dict[str, dict]) -> Emission:
    """Signal ids and the ``attempt_signal_id`` updates for a plan (pure: no I/O)."""
    fields: dict[str, dict] = {}
    records: dict[str, dict] = {}
    for r in [*deliver, *summarise, *wait, *release]:
        records[r["id"]] = r
        fields.setdefault(r["id"], dict(schedule.get(r["id"], {})))
    full_ids = {r["id"]: new_id() for r in deliver}
    summary_id = new_id() if summarise else None
    before = []
    for rid, signal_id in full_ids.items():
        before.append({"id": rid, **fields[rid], "attempt_signal_id": signal_id, "attempt_kind": "deliver"})
    for r in summarise:
        if r["id"] not in full_ids:
            before.append({"id": r["id"], **fields[r["id"]], "attempt_signal_id": summary_id, "attempt_kind": "summary"})
    return Emission(origin=origin, records=records, fields=fields, full_ids=full_ids, summary_id=summary_id,
                    deliver=deliver, summarise=summarise, wait=wait, before=before)


def _next_due(fields: dict, *, now: datetime, waiting: bool, recheck: timedelta) -> datetime | None:
    deliver_at, summary_at = fields.get("deliver_at"), fields.get("summary_at")
    if deliver_at is not None and waiting:
        deliver_at = max(deliver_at, now + recheck)
    candidates = [t for t in (deliver_at, summary_at) if t is not None]
    return min(candidates) if candidates else None


def settle_fields(em: Emission, rid: str, *, now: datetime, recheck: timedelta, failures: dict[str, str],
                  retry_later: set[str], waiting: set[str]) -> dict:
    """The final fields of record ``rid`` once its signals were sent (or failed): claim dropped,
    failure counted, ``next_due_at`` set. Updates and returns ``em.fields[rid]``."""
    record, f = em.records[rid], em.fields[rid]
    f.update(attempt_signal_id=None, attempt_kind="", lock_token="", locked_until=None)
    merged = {**record, **f}
    if rid in failures:
        attempts = (record.get("delivery_attempts") or 0) + 1
        f.update(delivery_attempts=attempts, last_delivery_error=failures[rid][:2000], last_delivery_attempt_at=now)
        if rid in em.full_ids and merged.get("deliver_at") is None:
            f["deliver_at"] = now  # the dispatcher retries the full delivery
        if rid not in em.full_ids and merged.get("summary_at") is None:
            f["summary_at"] = now
        if attempts >= MAX_DELIVERY_ATTEMPTS:
            f.update(status="failed", next_due_at=None)
        else:
            f["next_due_at"] = now + recheck * attempts
    elif merged.get("status", "pending") == "pending":
        f["next_due_at"] = (now + recheck if rid in retry_later else
                            _next_due(merged, now=now, waiting=rid in waiting, recheck=recheck))
    else:
        f["next_due_at"] = None
    return f


def _if_idle(if_idle: dict | None, stream_options: dict | None, *, persist: bool = False) -> dict | None:
    if persist:
        return {**(if_idle or {}), "behavior": "persist"}
    if not stream_options:
        return if_idle
    merged = dict(if_idle or {})
    merged["stream_options"] = {**(merged.get("stream_options") or merged.get("streamOptions") or {}),
                                **stream_options}
    merged.pop("streamOptions", None)
    return merged


def _accepted(result: Any) -> dict:
    return {"signal": result.signal, "run_id": result.run_id, "action": result.action, "output": result.output}


async def emit_records(agent: Any, *, store: NotificationStore, token: str, resource_id: str, thread_id: str,
                       deliver: list[dict], summarise: list[dict], wait: list[dict], release: list[dict],
                       schedule: dict[str, dict], now: datetime, if_idle: dict | None = None,
                       stream_options: dict[str, dict] | None = None,
                       recheck: timedelta = IDLE_RECHECK) -> dict[str, dict]:
    """Emit what a dispatch plan says for records claimed with ``token``, and settle every record
    (the dispatcher's rules, see the module docstring).

    ``schedule`` holds field changes decided beforehand per record id; ``release`` records are only
    unclaimed. Writes the signal ids first (one transaction), sends the signals (one ``send_signal``
    per full notification, one summary for ``summarise``), then settles all records (one
    transaction). Never raises for a failed send: the failure is counted on the records
    (``delivery_attempts``; ``failed`` after :data:`MAX_DELIVERY_ATTEMPTS`).

    Returns ``{record_id: {"signal", "run_id", "action", "output", "error", "record"}}``.
    """
    em = prepare_emission(origin="dispatch", deliver=deliver, summarise=summarise, wait=wait, release=release,
                          schedule=schedule)
    if em.before:
        await store.update(updates=em.before, token=token)
    return await send_and_settle(agent, em, update=store.update, token=token, resource_id=resource_id,
                                 thread_id=thread_id, now=now, if_idle=if_idle, stream_options=stream_options,
                                 recheck=recheck)


async def send_and_settle(agent: Any, em: Emission, *, update: Any, token: str, resource_id: str, thread_id: str,
                          now: datetime, if_idle: dict | None, stream_options: dict[str, dict] | None,
                          recheck: timedelta) -> dict[str, dict]:
    """The sending half of :func:`emit_records` (``em.before`` is written already): send, then write
    the final fields of every record not in ``em.settled`` with one ``update`` call."""
    stream_options = stream_options or {}
    outcome: dict[str, dict] = {}
    records, fields, full_ids = em.records, em.fields, em.full_ids
    failures: dict[str, str] = {}
    retry_later: set[str] = set()
    delivered_at = now if em.origin == "dispatch" else None
    for r in em.deliver:
        merged = {**r, **fields[r["id"]]}
        signal = notification_signal(merged, status="delivered", signal_id=full_ids[r["id"]],
                                     delivered_at=delivered_at)
        try:
            result = await agent.send_signal(signal, resource_id=resource_id, thread_id=thread_id,
                                             if_idle=_if_idle(if_idle, stream_options.get(r["id"])))
        except Exception as exc:
            logger.warning("could not deliver notification %s", r["id"], exc_info=True)
            failures[r["id"]] = f"{type(exc).__name__}: {exc}"
            continue
        outcome[r["id"]] = _accepted(result)
        f = fields[r["id"]]
        if result.action == "blocked":  # the thread is held (approval, suspension): try again later
            f.update(deliver_at=merged.get("deliver_at") or now, last_delivery_attempt_at=now)
            retry_later.add(r["id"])
            continue
        f.update(deliver_at=None, deliver_when_idle=False, last_delivery_attempt_at=now)
        if result.action in TAKEN:
            f.update(status="delivered", delivered_signal_id=result.signal["id"], delivered_at=now, summary_at=None)

    summary_error = await _send_summary(agent, em, outcome=outcome, retry_later=retry_later, resource_id=resource_id,
                                        thread_id=thread_id, now=now, if_idle=if_idle) if em.summarise else None
    if summary_error:
        for r in em.summarise:
            if fields[r["id"]].get("status") != "delivered":
                failures.setdefault(r["id"], summary_error)

    waiting = {r["id"] for r in em.wait}
    after = []
    for rid, record in records.items():
        if rid in em.settled:
            f = em.settled[rid]
        else:
            f = settle_fields(em, rid, now=now, recheck=recheck, failures=failures, retry_later=retry_later,
                              waiting=waiting)
            after.append({"id": rid, **f})
        if rid in failures:
            outcome.setdefault(rid, {})["error"] = failures[rid]
        outcome.setdefault(rid, {})["record"] = {k: v for k, v in {**record, **f}.items() if k not in CLAIM_FIELDS}
    if after:
        await update(updates=after, token=token)
    return outcome


async def _send_summary(agent: Any, em: Emission, *, outcome: dict, retry_later: set[str], resource_id: str,
                        thread_id: str, now: datetime, if_idle: dict | None) -> str | None:
    """Send one summary over ``em.summarise`` (as the records are once this call's deliveries are
    counted); returns the error text when sending failed."""
    fields = em.fields
    covered = [{**r, **fields[r["id"]]} for r in em.summarise]
    signal = summary_signal(covered, signal_id=em.summary_id)
    try:
        result = await agent.send_signal(signal, resource_id=resource_id, thread_id=thread_id,
                                         if_idle=_if_idle(if_idle, None, persist=not em.summary_wakes()))
    except Exception as exc:
        logger.warning("could not send a notification summary to thread %s", thread_id, exc_info=True)
        return f"{type(exc).__name__}: {exc}"
    for r in em.summarise:
        f = fields[r["id"]]
        if f.get("status") == "delivered":
            continue
        if result.action == "blocked":
            f.update(summary_at=now, last_delivery_attempt_at=now)
            retry_later.add(r["id"])
            continue
        f.update(summary_at=None, last_delivery_attempt_at=now)
        if em.origin == "dispatch" or result.action in TAKEN:
            f["summary_signal_id"] = result.signal["id"]
        outcome.setdefault(r["id"], _accepted(result))
    return None
