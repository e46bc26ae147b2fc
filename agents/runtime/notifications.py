"""Notification signals: validation, the delivery policy, the XML the model sees, and delivery.

Plain asyncio, no Django (DESIGN §4). A notification becomes a durable *record* in an inbox (one per
memory thread) through a :class:`NotificationStore` (``inbox.store.DjangoNotificationStore`` on the
database, installed with :func:`set_notification_store` by the inbox app). What happens to a record
is a *decision* of the agent's delivery policy::

    Agent(..., notifications={"delivery_policy": {
        "decide": lambda ctx: ...,          # 1. a callable of {record, thread_active, thread, now, agent}
        "sources": {"github": "deliver"},   # 2. per source
        "priorities": {"low": "persist"},   # 3. per priority
        "default": "summarize",             # 4. instead of the built-in default table
    }})

A decision is an action name or a dict ``{"action", "deliver_at", "summary_at", "reason",
"stream_options", "deliver_when_idle"}``; actions are ``deliver`` (the full notification now, or at
``deliver_at``), ``defer`` (full delivery later: at ``deliver_at``, else once the thread is idle),
``summarize`` (a ``<notification-summary>`` now, or at ``summary_at``), ``persist`` (kept pending in
the inbox, nothing emitted) and ``discard`` (kept with status ``discarded``, never emitted).

Records are claimed with a lock token (compare-and-set in the store) before anything is emitted, and
the id of the signal about to be sent is written first (``attempt_signal_id``), so a dispatcher that
takes over after a crash can tell whether the thread already accepted it: an accepted delivery is never
repeated.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import logging
import weakref
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

from .errors import AgentConfigError, NotificationError, SignalError
from .messages import new_id
from .signal import check_attributes, render_tag

logger = logging.getLogger(__name__)

PRIORITIES = ("low", "medium", "high", "urgent")
PRIORITY_RANK = {name: rank for rank, name in enumerate(PRIORITIES)}
DEFAULT_PRIORITY = "medium"
ACTIONS = ("deliver", "defer", "summarize", "persist", "discard")
STATUSES = ("pending", "delivered", "seen", "dismissed", "archived", "discarded", "failed")
#: failed delivery attempts after which a record is ``failed`` (the dispatcher stops retrying it)
MAX_DELIVERY_ATTEMPTS = 5
#: how long a claim on records holds; a claim older than this is taken over by the next dispatcher
LOCK_TTL = timedelta(seconds=60)
#: while the thread is busy, how often a record waiting for an idle thread is looked at again
IDLE_RECHECK = timedelta(seconds=15)
#: the attributes of a full notification signal, after the notification's own attributes
RESERVED_ATTRIBUTES = ("id", "source", "type", "kind", "priority", "status", "coalescedCount")
NOTIFICATION_TAG = "notification"
SUMMARY_TAG = "notification-summary"
MAX_NAME = 100
MAX_KEY = 255
MAX_SUMMARY = 16_000

_NOTIFICATION_KEYS = {"source", "kind", "priority", "summary", "payload", "dedupe_key", "coalesce_key",
                      "attributes", "metadata", "source_id"}
_ALIASES = {"dedupeKey": "dedupe_key", "coalesceKey": "coalesce_key", "sourceId": "source_id",
            "deliverAt": "deliver_at", "summaryAt": "summary_at", "streamOptions": "stream_options",
            "deliverWhenIdle": "deliver_when_idle"}
_DECISION_KEYS = {"action", "deliver_at", "summary_at", "reason", "stream_options", "deliver_when_idle"}
_POLICY_KEYS = {"default", "priorities", "sources", "decide"}
_CLAIM_FIELDS = ("lock_token", "locked_until")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _alias(data: dict) -> dict:
    return {_ALIASES.get(k, k): v for k, v in data.items()}


# -- notifications ----------------------------------------------------------------------------
def _name(value: Any, field_name: str) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        raise NotificationError(f"a notification needs a non-empty {field_name!r}", code=f"missing_{field_name}",
                                details={"field": field_name})
    if not isinstance(value, str):
        raise NotificationError(f"{field_name} must be a string", code="invalid_notification",
                                details={"field": field_name})
    if len(value) > MAX_NAME:
        raise NotificationError(f"{field_name} is longer than {MAX_NAME} characters", code="invalid_notification",
                                details={"field": field_name})
    return value


def _key(value: Any, field_name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_KEY:
        raise NotificationError(f"{field_name} must be a non-empty string of at most {MAX_KEY} characters",
                                code="invalid_notification", details={"field": field_name})
    return value


def _json(value: Any, field_name: str, code: str) -> Any:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise NotificationError(f"{field_name} must be JSON-serialisable: {exc}", code=code,
                                details={"field": field_name}) from None
    return value


def validate_notification(notification: Any) -> dict:
    """Check one ``send_notification_signal`` payload and return it normalised (snake_case keys).

    Raises :class:`NotificationError` (codes ``invalid_notification``, ``missing_source``,
    ``missing_kind``, ``missing_summary``, ``invalid_priority``, ``invalid_payload``,
    ``invalid_attributes``, ``invalid_metadata``).
    """
    if not isinstance(notification, dict):
        raise NotificationError("a notification must be a dict with source, kind and summary",
                                code="invalid_notification")
    data = _alias(notification)
    unknown = set(data) - _NOTIFICATION_KEYS
    if unknown:
        raise NotificationError(f"unknown notification key {sorted(unknown)[0]!r}", code="invalid_notification",
                                details={"field": sorted(unknown)[0]})
    priority = data.get("priority") or DEFAULT_PRIORITY
    if priority not in PRIORITY_RANK:
        raise NotificationError(f"unknown priority {priority!r}: use one of {', '.join(PRIORITIES)}",
                                code="invalid_priority", details={"field": "priority"})
    summary = data.get("summary")
    if summary is None or (isinstance(summary, str) and not summary.strip()):
        raise NotificationError("a notification needs a non-empty 'summary'", code="missing_summary",
                                details={"field": "summary"})
    if not isinstance(summary, str):
        raise NotificationError("summary must be a string", code="invalid_notification", details={"field": "summary"})
    if len(summary) > MAX_SUMMARY:
        raise NotificationError(f"summary is longer than {MAX_SUMMARY} characters", code="invalid_notification",
                                details={"field": "summary"})
    try:
        attributes = check_attributes(data.get("attributes"))
    except SignalError as exc:
        raise NotificationError(exc.message, code="invalid_attributes", details={"field": "attributes"}) from None
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise NotificationError("metadata must be a dict", code="invalid_metadata", details={"field": "metadata"})
    return {
        "source": _name(data.get("source"), "source"),
        "kind": _name(data.get("kind"), "kind"),
        "priority": priority,
        "summary": summary,
        "payload": _json(data.get("payload"), "payload", "invalid_payload"),
        "dedupe_key": _key(data.get("dedupe_key"), "dedupe_key"),
        "coalesce_key": _key(data.get("coalesce_key"), "coalesce_key"),
        "source_id": _key(data.get("source_id"), "source_id"),
        "attributes": attributes,
        "metadata": _json(dict(metadata or {}), "metadata", "invalid_metadata"),
    }


# -- decisions and the policy -----------------------------------------------------------------
@dataclass
class NotificationDecision:
    """What the policy decided for one record.

    ``level`` says which part of the policy decided: ``decide``, ``source``, ``priority``,
    ``default`` (the agent's ``default``), ``builtin`` (DESIGN §4 table) or ``fallback`` (``decide``
    failed; the built-in table decided instead).
    """

    action: str
    reason: str = ""
    deliver_at: datetime | None = None
    summary_at: datetime | None = None
    stream_options: dict | None = None
    deliver_when_idle: bool = False
    level: str = "builtin"

    def to_dict(self) -> dict:
        return {"action": self.action, "reason": self.reason,
                "deliver_at": self.deliver_at.isoformat() if self.deliver_at else None,
                "summary_at": self.summary_at.isoformat() if self.summary_at else None,
                "stream_options": self.stream_options, "deliver_when_idle": self.deliver_when_idle,
                "level": self.level}


def _when(value: Any, field_name: str, now: datetime) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, timedelta):
        return now + value
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise NotificationError(f"{field_name} is not an ISO date-time", code="invalid_decision") from None
    if not isinstance(value, datetime):
        raise NotificationError(f"{field_name} must be a datetime, an ISO string or a timedelta",
                                code="invalid_decision")
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def normalize_decision(value: Any, *, now: datetime, level: str, where: str = "decision") -> NotificationDecision:
    """A decision given as an action name or a dict, checked. Raises NotificationError
    (``invalid_decision``)."""
    if isinstance(value, NotificationDecision):
        return value
    if isinstance(value, str):
        value = {"action": value}
    if not isinstance(value, dict):
        raise NotificationError(f"{where} must be an action name or a dict with 'action'", code="invalid_decision")
    data = _alias(value)
    unknown = set(data) - _DECISION_KEYS
    if unknown:
        raise NotificationError(f"{where}: unknown key {sorted(unknown)[0]!r}", code="invalid_decision")
    action = data.get("action")
    if action not in ACTIONS:
        raise NotificationError(f"{where}: unknown action {action!r}: use one of {', '.join(ACTIONS)}",
                                code="invalid_decision")
    reason = data.get("reason") or ""
    if not isinstance(reason, str):
        raise NotificationError(f"{where}.reason must be a string", code="invalid_decision")
    options = data.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise NotificationError(f"{where}.stream_options must be a dict", code="invalid_decision")
    idle = data.get("deliver_when_idle", False)
    if not isinstance(idle, bool):
        raise NotificationError(f"{where}.deliver_when_idle must be a bool", code="invalid_decision")
    return NotificationDecision(action=action, reason=reason[:255] or f"{level}: {action}",
                                deliver_at=_when(data.get("deliver_at"), f"{where}.deliver_at", now),
                                summary_at=_when(data.get("summary_at"), f"{where}.summary_at", now),
                                stream_options=dict(options) if options else None, deliver_when_idle=idle,
                                level=level)


def validate_policy(policy: Any) -> dict:
    """Check an agent's ``delivery_policy`` (decisions are checked now, relative times later).

    Returns ``{"default", "priorities", "sources", "decide"}``. Raises NotificationError
    (``invalid_policy``).
    """
    if policy is None:
        return {"default": None, "priorities": {}, "sources": {}, "decide": None}
    if not isinstance(policy, dict):
        raise NotificationError("delivery_policy must be a dict", code="invalid_policy")
    unknown = set(policy) - _POLICY_KEYS
    if unknown:
        raise NotificationError(f"delivery_policy: unknown key {sorted(unknown)[0]!r} "
                                f"(use {', '.join(sorted(_POLICY_KEYS))})", code="invalid_policy")
    decide = policy.get("decide")
    if decide is not None and not callable(decide):
        raise NotificationError("delivery_policy.decide must be callable", code="invalid_policy")
    now = utcnow()

    def check(value: Any, where: str) -> Any:
        try:
            normalize_decision(value, now=now, level="check", where=where)
        except NotificationError as exc:
            raise NotificationError(exc.message, code="invalid_policy") from None
        return value

    priorities = policy.get("priorities") or {}
    sources = policy.get("sources") or {}
    if not isinstance(priorities, dict) or not isinstance(sources, dict):
        raise NotificationError("delivery_policy.priorities and .sources must be dicts", code="invalid_policy")
    for name in priorities:
        if name not in PRIORITY_RANK:
            raise NotificationError(f"delivery_policy.priorities: unknown priority {name!r}", code="invalid_policy")
    default = policy.get("default")
    return {
        "default": check(default, "delivery_policy.default") if default is not None else None,
        "priorities": {k: check(v, f"delivery_policy.priorities.{k}") for k, v in priorities.items()},
        "sources": {k: check(v, f"delivery_policy.sources.{k}") for k, v in sources.items()},
        "decide": decide,
    }


def default_decision(priority: str, thread_active: bool) -> NotificationDecision:
    """The built-in policy (DESIGN §4): urgent → deliver; high → deliver when idle, when active a
    summary now and the full notification once idle; medium → deliver when idle, summary when active;
    low → summary always (a low summary never wakes a thread)."""
    state = "active" if thread_active else "idle"
    if priority == "urgent":
        return NotificationDecision("deliver", reason=f"urgent while {state}: deliver now")
    if priority == "low":
        return NotificationDecision("summarize", reason=f"low while {state}: summary")
    if not thread_active:
        return NotificationDecision("deliver", reason=f"{priority} while idle: deliver now")
    if priority == "high":
        return NotificationDecision("summarize", deliver_when_idle=True,
                                    reason="high while active: summary now, full notification once idle")
    return NotificationDecision("summarize", reason="medium while active: summary")


async def resolve_decision(policy: dict | None, record: dict, thread_active: bool, now: datetime, *,
                           agent: Any = None, thread: dict | None = None) -> NotificationDecision:
    """The decision for ``record``: ``decide()`` → ``sources`` → ``priorities`` → ``default`` →
    the built-in table. ``policy`` comes from :func:`validate_policy`.

    ``decide(context)`` (sync or async) gets ``{"record", "thread_active", "thread", "now", "agent"}``
    and returns a decision, or None to let the next level decide. When it raises or returns something
    that is not a decision, the failure is logged and the built-in table decides (``level="fallback"``):
    the record is never lost.
    """
    policy = policy or validate_policy(None)
    decide = policy.get("decide")
    if decide is not None:
        context = {"record": dict(record), "thread_active": thread_active, "now": now, "agent": agent,
                   "thread": thread or {"active": thread_active}}
        try:
            value = decide(context)
            if inspect.isawaitable(value):
                value = await value
            if value is not None:
                return normalize_decision(value, now=now, level="decide", where="decide()")
        except Exception as exc:
            logger.warning("delivery policy decide() failed for notification %s; using the default decision",
                           record.get("id"), exc_info=True)
            fallback = default_decision(record["priority"], thread_active)
            fallback.level = "fallback"
            fallback.reason = f"decide() failed ({type(exc).__name__}: {exc}); {fallback.reason}"[:255]
            return fallback
    return rule_decision(policy, record, thread_active, now)


def rule_decision(policy: dict | None, record: dict, thread_active: bool, now: datetime) -> NotificationDecision:
    """The decision of the policy's rules alone (``sources`` → ``priorities`` → ``default`` → the
    built-in table), without ``decide()``: plain Python, no I/O, safe in a worker thread."""
    policy = policy or validate_policy(None)
    source_rule = policy.get("sources", {}).get(record["source"])
    if source_rule is not None:
        return normalize_decision(source_rule, now=now, level="source")
    priority_rule = policy.get("priorities", {}).get(record["priority"])
    if priority_rule is not None:
        return normalize_decision(priority_rule, now=now, level="priority")
    if policy.get("default") is not None:
        return normalize_decision(policy["default"], now=now, level="default")
    return default_decision(record["priority"], thread_active)


# -- rendering --------------------------------------------------------------------------------
def notification_attributes(record: dict, status: str = "delivered") -> dict:
    """Custom attributes first (minus reserved names), then id, source, type, kind, priority,
    status and ``coalescedCount`` (only when > 1)."""
    attributes = {k: v for k, v in (record.get("attributes") or {}).items() if k not in RESERVED_ATTRIBUTES}
    attributes.update({"id": record["id"], "source": record["source"], "type": record["kind"],
                       "kind": record["kind"], "priority": record["priority"], "status": status})
    if (record.get("coalesced_count") or 1) > 1:
        attributes["coalescedCount"] = record["coalesced_count"]
    return attributes


def notification_signal(record: dict, *, status: str = "delivered", signal_id: str | None = None) -> dict:
    """The ``send_signal`` payload of a full notification."""
    return {"id": signal_id or new_id(), "type": "notification", "tag_name": NOTIFICATION_TAG,
            "contents": record["summary"], "attributes": notification_attributes(record, status),
            "metadata": {"notification": {"id": record["id"], "source": record["source"], "kind": record["kind"],
                                          "priority": record["priority"]}}}


def notification_xml(record: dict, status: str = "delivered") -> str:
    """What the model sees for a full notification."""
    return render_tag(NOTIFICATION_TAG, notification_attributes(record, status), record["summary"])


def summary_parts(records: list[dict]) -> tuple[dict, str]:
    """``({"pending": N, "priority": highest}, "github: 2, slack: 1")`` for pending records."""
    counts: dict[str, int] = {}
    for r in records:
        counts[r["source"]] = counts.get(r["source"], 0) + 1
    highest = max((r["priority"] for r in records), key=PRIORITY_RANK.__getitem__, default=DEFAULT_PRIORITY)
    text = ", ".join(f"{source}: {counts[source]}" for source in sorted(counts))
    return {"pending": len(records), "priority": highest}, text


def summary_signal(records: list[dict], *, signal_id: str | None = None) -> dict:
    """The ``send_signal`` payload of a ``<notification-summary>`` over the thread's pending records."""
    attributes, text = summary_parts(records)
    return {"id": signal_id or new_id(), "type": "notification", "tag_name": SUMMARY_TAG, "contents": text,
            "attributes": attributes,
            "metadata": {"notificationSummary": {"ids": [r["id"] for r in records]}}}


def summary_xml(records: list[dict]) -> str:
    attributes, text = summary_parts(records)
    return render_tag(SUMMARY_TAG, attributes, text)


# -- storage ----------------------------------------------------------------------------------
class NotificationStore(Protocol):
    """What the runtime needs from the inbox. Records are snake_case dicts with aware datetimes.

    Every method is one transaction; ``update`` changes only rows whose ``lock_token`` is ``token``
    (compare-and-set), so a claim taken over by another process is never overwritten.
    """

    async def ingest(self, *, agent_id: str, resource_id: str, thread_id: str, notifications: list[dict],
                     token: str, locked_until: datetime, now: datetime) -> list[dict]:
        """Create each notification, or coalesce it into the oldest unclaimed pending record with the
        same agent, thread, source, kind and dedupe or coalesce key; claim the rows with ``token``.
        Returns one record per notification, in order, each with ``"coalesced": bool``."""

    async def update(self, *, updates: list[dict], token: str) -> int:
        """Apply ``{"id", **fields}`` to each record still claimed by ``token``; returns the rows changed."""

    async def thread_pending(self, *, agent_id: str, resource_id: str, thread_id: str) -> list[dict]:
        """The pending records of a thread's inbox (at least id, source, priority), oldest first."""

    # Optional: a store with ``ingest_planned`` group-commits concurrent calls (``send_notification_signal``
    # then uses it and ``update_grouped`` instead of ``ingest`` and ``update``):
    #
    # async def ingest_planned(self, *, agent_id, resource_id, thread_id, notifications, token, locked_until,
    #                          now, thread_key, thread_store, plan) -> dict:
    #     """``ingest`` for one call, in a transaction shared with the calls made meanwhile. When it can
    #     read the thread's state itself (``thread_store`` is one it knows) it does so in that transaction
    #     and returns it as ``"thread"``; then, when ``plan`` is given, it calls ``plan(records, state)``
    #     there and writes the returned ``"updates"`` with the records (returned as ``"planned"``).
    #     Returns ``{"records", "thread"?, "planned"?}``."""
    #
    # async def update_grouped(self, *, updates, token) -> int:
    #     """``update``, in a transaction shared with the calls made meanwhile."""


_store: NotificationStore | None = None


def set_notification_store(store: NotificationStore | None) -> None:
    """Install the process-wide notification store (the inbox app does it at start-up)."""
    global _store
    _store = store


def get_notification_store() -> NotificationStore:
    if _store is None:
        raise AgentConfigError("notifications", "send_notification_signal needs a notification store: run inside "
                                                "the Django site (inbox app installed) or call set_notification_store()")
    return _store


# -- delivery ---------------------------------------------------------------------------------
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
        return {"record": record_json(self.record), "decision": self.decision.to_dict(), "signal": self.signal,
                "runId": self.run_id, "action": self.action, **({"error": self.error} if self.error else {})}


def record_json(record: dict) -> dict:
    """A record with ISO date-times (JSON-safe)."""
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in record.items()}


@dataclass
class DispatchPlan:
    """Records of one thread, split by what to do now (see :func:`plan_thread_dispatch`)."""

    deliver: list[dict] = field(default_factory=list)
    summarise: list[dict] = field(default_factory=list)
    wait: list[dict] = field(default_factory=list)


def plan_thread_dispatch(records: list[dict], *, thread_active: bool, now: datetime) -> DispatchPlan:
    """Split a thread's due records: full deliveries (highest priority first), records to cover with
    one summary, and records that wait for the thread to go idle.

    A due full delivery goes out now unless it waits for an idle thread (``deliver_when_idle``) and
    the thread is busy; then it waits, summarised if it has not been yet.
    """
    plan = DispatchPlan()
    ordered = sorted(records, key=lambda r: (-PRIORITY_RANK[r["priority"]], r.get("deliver_at") or now))
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


def _next_due(fields: dict, *, now: datetime, waiting: bool, recheck: timedelta) -> datetime | None:
    deliver_at, summary_at = fields.get("deliver_at"), fields.get("summary_at")
    if deliver_at is not None and waiting:
        deliver_at = max(deliver_at, now + recheck)
    candidates = [t for t in (deliver_at, summary_at) if t is not None]
    return min(candidates) if candidates else None


def _backoff(attempts: int, recheck: timedelta) -> timedelta:
    return recheck * attempts


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


@dataclass
class _Emission:
    """What :func:`emit_records` does for records claimed with one token, prepared before anything
    is sent: per record its field changes (``fields``, the policy's schedule first), the ids of the
    signals about to be sent, and the updates to write before sending (``before``). Records in
    ``settled`` (id → final fields) were settled and written already: nothing is sent for them."""

    records: dict[str, dict]
    fields: dict[str, dict]
    full_ids: dict[str, str]
    summary_id: str | None
    deliver: list[dict]
    summarise: list[dict]
    wait: list[dict]
    before: list[dict]
    settled: dict[str, dict] = field(default_factory=dict)


def _prepare_emission(*, deliver: list[dict], summarise: list[dict], wait: list[dict], release: list[dict],
                      schedule: dict[str, dict]) -> _Emission:
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
    return _Emission(records=records, fields=fields, full_ids=full_ids, summary_id=summary_id, deliver=deliver,
                     summarise=summarise, wait=wait, before=before)


def _settle_fields(em: _Emission, rid: str, *, now: datetime, recheck: timedelta, failures: dict[str, str],
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
            f["next_due_at"] = now + _backoff(attempts, recheck)
    elif merged.get("status", "pending") == "pending":
        f["next_due_at"] = (now + recheck if rid in retry_later else
                            _next_due(merged, now=now, waiting=rid in waiting, recheck=recheck))
    else:
        f["next_due_at"] = None
    return f


async def emit_records(agent: Any, *, store: NotificationStore, token: str, resource_id: str, thread_id: str,
                       deliver: list[dict], summarise: list[dict], wait: list[dict], release: list[dict],
                       schedule: dict[str, dict], now: datetime, if_idle: dict | None = None,
                       stream_options: dict[str, dict] | None = None,
                       recheck: timedelta = IDLE_RECHECK) -> dict[str, dict]:
    """Emit what a plan says for records claimed with ``token``, and settle every record.

    ``schedule`` holds field changes decided beforehand (by the policy) per record id; ``release``
    records are only unclaimed. Writes the signal ids first (one transaction), sends the signals
    (one ``send_signal`` per full notification, one summary for ``summarise``), then settles all
    records (one transaction). Never raises for a failed send: the failure is counted on the
    records (``delivery_attempts``; ``failed`` after :data:`MAX_DELIVERY_ATTEMPTS`).

    Returns ``{record_id: {"signal", "run_id", "action", "output", "error", "record"}}``.
    """
    em = _prepare_emission(deliver=deliver, summarise=summarise, wait=wait, release=release, schedule=schedule)
    if em.before:
        await store.update(updates=em.before, token=token)
    return await _send_and_settle(agent, em, update=store.update, thread_pending=store.thread_pending, token=token,
                                  resource_id=resource_id, thread_id=thread_id, now=now, if_idle=if_idle,
                                  stream_options=stream_options, recheck=recheck)


async def _send_and_settle(agent: Any, em: _Emission, *, update: Any, thread_pending: Any, token: str,
                           resource_id: str, thread_id: str, now: datetime, if_idle: dict | None,
                           stream_options: dict[str, dict] | None, recheck: timedelta) -> dict[str, dict]:
    """The sending half of :func:`emit_records` (``em.before`` is written already): send, then write
    the final fields of every record not in ``em.settled`` with one ``update`` call."""
    stream_options = stream_options or {}
    outcome: dict[str, dict] = {}
    records, fields, full_ids = em.records, em.fields, em.full_ids
    deliver, summarise = em.deliver, em.summarise
    failures: dict[str, str] = {}
    retry_later: set[str] = set()
    for r in deliver:
        merged = {**r, **fields[r["id"]]}
        signal = notification_signal(merged, status="delivered", signal_id=full_ids[r["id"]])
        try:
            result = await agent.send_signal(signal, resource_id=resource_id, thread_id=thread_id,
                                             if_idle=_if_idle(if_idle, stream_options.get(r["id"])))
        except Exception as exc:
            logger.warning("could not deliver notification %s", r["id"], exc_info=True)
            failures[r["id"]] = f"{type(exc).__name__}: {exc}"
            continue
        outcome[r["id"]] = {"signal": result.signal, "run_id": result.run_id, "action": result.action,
                            "output": result.output}
        f = fields[r["id"]]
        if result.action == "blocked":  # another agent's run holds the thread: try again later
            f.update(deliver_at=merged.get("deliver_at") or now, last_delivery_attempt_at=now)
            retry_later.add(r["id"])
            continue
        accepted = result.action in ("wake", "deliver")
        f.update(deliver_at=None, deliver_when_idle=False, last_delivery_attempt_at=now)
        if accepted:
            f.update(status="delivered", delivered_signal_id=result.signal["id"], delivered_at=now, summary_at=None)

    summary_error = None
    if summarise:
        pending = await thread_pending(agent_id=agent.id, resource_id=resource_id, thread_id=thread_id)
        # the summary counts what is pending once this call is settled: records it delivered or
        # discarded are not; the records it covers are, even if the store has not seen them yet
        gone = {rid for rid in records if fields[rid].get("status", "pending") != "pending"}
        pending = [p for p in pending if p["id"] not in gone]
        seen = {p["id"] for p in pending}
        pending += [r for r in summarise if r["id"] not in seen]
        for p in pending:  # this call's own view of a record (priority after coalescing) wins
            if p["id"] in records:
                p.update(priority=records[p["id"]]["priority"], source=records[p["id"]]["source"])
        signal = summary_signal(pending, signal_id=em.summary_id)
        persist = not any(PRIORITY_RANK[p["priority"]] > PRIORITY_RANK["low"] for p in pending)
        try:
            result = await agent.send_signal(signal, resource_id=resource_id, thread_id=thread_id,
                                             if_idle=_if_idle(if_idle, None, persist=persist))
        except Exception as exc:
            logger.warning("could not send a notification summary to thread %s", thread_id, exc_info=True)
            summary_error = f"{type(exc).__name__}: {exc}"
        else:
            for r in summarise:
                if fields[r["id"]].get("status") == "delivered":
                    continue
                if result.action == "blocked":
                    fields[r["id"]].update(summary_at=now, last_delivery_attempt_at=now)
                    retry_later.add(r["id"])
                    continue
                fields[r["id"]].update(summary_signal_id=result.signal["id"], summary_at=None,
                                       last_delivery_attempt_at=now)
                outcome.setdefault(r["id"], {"signal": result.signal, "run_id": result.run_id,
                                             "action": result.action, "output": result.output})
        if summary_error:
            for r in summarise:
                if fields[r["id"]].get("status") != "delivered":
                    failures.setdefault(r["id"], summary_error)

    waiting = {r["id"] for r in em.wait}
    after = []
    for rid, record in records.items():
        if rid in em.settled:
            f = em.settled[rid]
        else:
            f = _settle_fields(em, rid, now=now, recheck=recheck, failures=failures, retry_later=retry_later,
                               waiting=waiting)
            after.append({"id": rid, **f})
        if rid in failures:
            outcome.setdefault(rid, {})["error"] = failures[rid]
        outcome.setdefault(rid, {})["record"] = {k: v for k, v in {**record, **f}.items() if k not in _CLAIM_FIELDS}
    if after:
        await update(updates=after, token=token)
    return outcome


def _schedule_fields(decision: NotificationDecision, *, now: datetime) -> tuple[dict, str]:
    """Record fields for a decision, and what to do at once: ``deliver``, ``summarise`` or ``none``."""
    f = {"delivery_reason": decision.reason, "deliver_at": None, "summary_at": None, "deliver_when_idle": False}
    action = decision.action
    if action == "discard":
        f.update(status="discarded", discarded_at=now)
        return f, "none"
    if action == "persist":
        return f, "none"
    if decision.summary_at is not None:
        f["summary_at"] = decision.summary_at
    if action == "deliver":
        if decision.deliver_at is not None and decision.deliver_at > now:
            f.update(deliver_at=decision.deliver_at, deliver_when_idle=decision.deliver_when_idle)
            return f, "none"
        return f, "deliver"
    if action == "defer":
        f.update(deliver_at=decision.deliver_at or now,
                 deliver_when_idle=decision.deliver_when_idle or decision.deliver_at is None)
        return f, "none"
    # summarize: now (or at summary_at); a full delivery later when deliver_at / deliver_when_idle say so
    if decision.deliver_at is not None or decision.deliver_when_idle:
        f.update(deliver_at=decision.deliver_at or now, deliver_when_idle=decision.deliver_when_idle)
    if decision.summary_at is not None and decision.summary_at > now:
        return f, "none"
    f["summary_at"] = now
    return f, "summarise"


def _check_target(resource_id: Any, thread_id: Any) -> None:
    for name, value in (("resource_id", resource_id), ("thread_id", thread_id)):
        if not isinstance(value, str) or not value:
            raise NotificationError(f"{name} must be a non-empty string", code="missing_target",
                                    details={"field": name})


def _plan_records(records: list[dict], decisions: dict[str, NotificationDecision], *, now: datetime) -> dict:
    """What one call does with its records once they are decided (pure: no I/O, safe in a worker
    thread): their schedule fields, the emission (:class:`_Emission`), and the records it emits
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
        fields, act = _schedule_fields(decision, now=now)
        schedule[rid] = fields
        if decision.stream_options:
            options[rid] = decision.stream_options
        {"deliver": deliver, "summarise": summarise, "none": release}[act].append(record)
    em = _prepare_emission(deliver=deliver, summarise=summarise, wait=[], release=release, schedule=schedule)
    for r in release:
        em.settled[r["id"]] = _settle_fields(em, r["id"], now=now, recheck=IDLE_RECHECK, failures={},
                                             retry_later=set(), waiting=set())
    updates = em.before + [{"id": rid, **f} for rid, f in em.settled.items()]
    return {"updates": updates, "decisions": decisions, "emission": em, "stream_options": options}


def _rule_planner(policy: dict, now: datetime):
    """``plan(records, thread_state)`` for a policy without ``decide()``: the decisions depend only on
    the records and the thread's state, so the store can run it inside the ingest transaction."""

    def plan(records: list[dict], state: dict | None) -> dict:
        active = bool(state and state.get("active_run_id"))
        decisions = {r["id"]: rule_decision(policy, r, active, now) for r in records}
        return _plan_records(records, decisions, now=now)

    return plan


_turns: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, list]]" = weakref.WeakKeyDictionary()
_held_turns: contextvars.ContextVar[frozenset] = contextvars.ContextVar("notification_turns", default=frozenset())


@contextlib.asynccontextmanager
async def _thread_turn(key: str):
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
    """Store (create or coalesce) one notification or a list, decide, and act (DESIGN §4).

    Everything is validated before anything is stored. The thread's state is read once for the
    batch. Full deliveries go out one signal each; every record of the batch the policy summarises
    now is covered by one ``<notification-summary>``. A dict in gives a :class:`NotificationResult`
    out, a list gives a list.

    Calls for the same thread in one event loop take turns (:func:`_thread_turn`). With a store
    that group-commits (``ingest_planned``, the Django store), concurrent calls share one
    transaction: their records, their threads' states and — for a policy without ``decide()`` —
    their decisions' schedule fields are written together; signals are emitted after the commit.
    """
    single = isinstance(notifications, dict)
    items = [notifications] if single else notifications
    if not isinstance(items, (list, tuple)):
        raise NotificationError("send a notification dict or a list of them", code="invalid_notification")
    if not items:
        raise NotificationError("the list of notifications is empty", code="empty_batch")
    runtime = agent.thread_runtime("send_notification_signal")  # AgentConfigError without memory
    _check_target(resource_id, thread_id)
    normalized = [validate_notification(n) for n in items]
    policy = validate_policy((agent.notifications or {}).get("delivery_policy"))
    if if_idle is not None:
        from .threads import IF_IDLE, _branch

        _branch(if_idle, IF_IDLE, "if_idle")  # SignalError now rather than after storing
    store = get_notification_store()
    now = now or utcnow()
    token = new_id("lock_")
    from .threads import thread_key

    key = thread_key(resource_id, thread_id)
    call = {"agent_id": agent.id, "resource_id": resource_id, "thread_id": thread_id, "notifications": normalized,
            "token": token, "locked_until": now + LOCK_TTL, "now": now}
    async with _thread_turn(key):
        planned = None
        if hasattr(store, "ingest_planned"):
            ingested = await store.ingest_planned(
                **call, thread_key=key, thread_store=runtime.store,
                plan=_rule_planner(policy, now) if policy.get("decide") is None else None)
            records, planned = ingested["records"], ingested.get("planned")
            state = ingested["thread"] if "thread" in ingested else await runtime.store.thread_state(key=key)
            update = store.update_grouped
        else:
            # the thread's state does not depend on the records: read it while they are stored
            records, state = await asyncio.gather(store.ingest(**call), runtime.store.thread_state(key=key))
            update = store.update
        if planned is None:  # decide() runs here, on the event loop, then the updates are written
            active = bool(state and state.get("active_run_id"))
            thread = {"active": active, "run_id": (state or {}).get("active_run_id")}
            final = {r["id"]: r for r in records}
            decisions = {rid: await resolve_decision(policy, record, active, now, agent=agent, thread=thread)
                         for rid, record in final.items()}
            planned = _plan_records(records, decisions, now=now)
            if planned["updates"]:
                await update(updates=planned["updates"], token=token)
        outcome = await _send_and_settle(agent, planned["emission"], update=update,
                                         thread_pending=store.thread_pending, token=token, resource_id=resource_id,
                                         thread_id=thread_id, now=now, if_idle=if_idle,
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


__all__ = ["ACTIONS", "DispatchPlan", "MAX_DELIVERY_ATTEMPTS", "NotificationDecision", "NotificationResult",
           "NotificationStore", "PRIORITIES", "STATUSES", "default_decision", "emit_records",
           "get_notification_store", "normalize_decision", "notification_signal", "notification_xml",
           "plan_thread_dispatch", "resolve_decision", "rule_decision", "send_notification_signal",
           "set_notification_store", "summary_signal", "summary_xml", "validate_notification", "validate_policy"]
