"""The delivery policy: what happens to a notification record, decided as Mastra decides it.

An agent's policy::

    Agent(..., notifications={"delivery_policy": {
        "decide": lambda ctx: ...,          # 1. a callable of {record, thread_active, thread, now, agent}
        "sources": {"github": "deliver"},   # 2. per source
        "priorities": {"low": "persist"},   # 3. per priority
        "default": "summarize",             # 4. instead of the built-in table
    }})

A decision is an action name or a dict ``{"action", "deliver_at", "summary_at", "reason",
"stream_options", "deliver_when_idle"}`` (camelCase keys accepted). Without a rule that matches,
Mastra's built-in table (``defaultNotificationDeliveryDecision``) decides, with Mastra's reason codes:

========  ===============================================================  ==================================
priority  thread active                                                    thread idle
========  ===============================================================  ==================================
urgent    ``deliver`` (``urgent``)                                         ``deliver`` (``urgent``)
high      ``summarize`` at now, ``deliver_at`` now                         ``deliver`` (``idle-high``)
          (``active-high-summary-then-full``)
medium    ``summarize`` at now (``active-batch-summary``)                  ``deliver`` (``idle-medium``)
low       ``summarize`` at now (``active-batch-summary``)                  ``summarize`` at now
                                                                           (``idle-low-summary``)
========  ===============================================================  ==================================
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from ..errors import NotificationError
from ..naming import snake_keys
from .validation import PRIORITY_RANK, iso_z, utcnow

logger = logging.getLogger(__name__)

#: ``queue`` is Mastra's other name for ``deliver``
ACTIONS = ("deliver", "queue", "defer", "summarize", "persist", "discard")
DECISION_KEYS = frozenset({"action", "deliver_at", "summary_at", "reason", "stream_options", "deliver_when_idle"})
POLICY_KEYS = frozenset({"default", "priorities", "sources", "decide"})


@dataclass
class NotificationDecision:
    """What the policy decided for one record.

    ``deliver_when_idle`` (not a Mastra field) holds the full delivery of a summarised record back
    while the thread is busy; a summary with a ``deliver_at`` gets it implicitly (Mastra's "high
    summarised while active waits for idle"). ``level`` says which part of the policy decided:
    ``decide``, ``source``, ``priority``, ``default`` (the agent's ``default``), ``builtin`` (the
    table above) or ``fallback`` (``decide`` failed; the table decided instead).
    """

    action: str
    reason: str | None = None
    deliver_at: datetime | None = None
    summary_at: datetime | None = None
    stream_options: dict | None = None
    deliver_when_idle: bool = False
    level: str = "builtin"

    def to_dict(self) -> dict:
        """Mastra's decision object: ``{action, summaryAt?, deliverAt?, reason?, streamOptions?}``
        (plus ``deliverWhenIdle`` when set), times as ``Date.toISOString()`` writes them."""
        out: dict[str, Any] = {"action": self.action}
        if self.summary_at is not None:
            out["summaryAt"] = iso_z(self.summary_at)
        if self.deliver_at is not None:
            out["deliverAt"] = iso_z(self.deliver_at)
        if self.reason:
            out["reason"] = self.reason
        if self.stream_options:
            out["streamOptions"] = self.stream_options
        if self.deliver_when_idle:
            out["deliverWhenIdle"] = True
        return out


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
    data = snake_keys(value)
    unknown = set(data) - DECISION_KEYS
    if unknown:
        raise NotificationError(f"{where}: unknown key {sorted(unknown)[0]!r}", code="invalid_decision")
    action = data.get("action")
    if action not in ACTIONS:
        raise NotificationError(f"{where}: unknown action {action!r}: use one of {', '.join(ACTIONS)}",
                                code="invalid_decision")
    reason = data.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise NotificationError(f"{where}.reason must be a string", code="invalid_decision")
    options = data.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise NotificationError(f"{where}.stream_options must be a dict", code="invalid_decision")
    idle = data.get("deliver_when_idle", False)
    if not isinstance(idle, bool):
        raise NotificationError(f"{where}.deliver_when_idle must be a bool", code="invalid_decision")
    return NotificationDecision(action=action, reason=reason[:255] if reason else None,
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
    unknown = set(policy) - POLICY_KEYS
    if unknown:
        raise NotificationError(f"delivery_policy: unknown key {sorted(unknown)[0]!r} "
                                f"(use {', '.join(sorted(POLICY_KEYS))})", code="invalid_policy")
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


def default_decision(priority: str, thread_active: bool, now: datetime) -> NotificationDecision:
    """Mastra's built-in table (``defaultNotificationDeliveryDecision``, see the module docstring)."""
    if priority == "urgent":
        return NotificationDecision("deliver", reason="urgent")
    if priority == "high":
        if thread_active:
            return NotificationDecision("summarize", summary_at=now, deliver_at=now,
                                        reason="active-high-summary-then-full")
        return NotificationDecision("deliver", reason="idle-high")
    if priority == "medium":
        if thread_active:
            return NotificationDecision("summarize", summary_at=now, reason="active-batch-summary")
        return NotificationDecision("deliver", reason="idle-medium")
    return NotificationDecision("summarize", summary_at=now,
                                reason="active-batch-summary" if thread_active else "idle-low-summary")


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
        except Exception:
            logger.warning("delivery policy decide() failed for notification %s; using the default decision",
                           record.get("id"), exc_info=True)
            fallback = default_decision(record["priority"], thread_active, now)
            fallback.level = "fallback"
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
    return default_decision(record["priority"], thread_active, now)


def summarizes_now(decision: NotificationDecision, priority: str, now: datetime) -> bool:
    """Mastra's ``shouldEmitSummaryNow``: a ``summarize`` decision sends its summary at once only
    when it is due (``summary_at`` absent or reached) and the record is medium, or high with a full
    delivery planned (``deliver_at``). Any other summary (a low record's first of all) waits for
    the dispatcher."""
    if decision.action != "summarize":
        return False
    if decision.summary_at is not None and decision.summary_at > now:
        return False
    return priority == "medium" or (priority == "high" and decision.deliver_at is not None)
