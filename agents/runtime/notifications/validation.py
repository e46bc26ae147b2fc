"""What a notification is: the priorities and statuses, and the check of one
``send_notification_signal`` payload (pure functions, no I/O).

Everything the database would refuse is refused here, before a call is queued for a group commit
(``inbox.store``): a NUL character anywhere (PostgreSQL text and ``jsonb`` cannot hold one), a value
longer than its column, and a whole notification over the size cap (:mod:`..limits`).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from ..errors import NotificationError, SignalError
from ..limits import current_limits
from ..naming import snake_keys
from ..signal import CONTROL_RE, check_attributes, json_size

PRIORITIES = ("low", "medium", "high", "urgent")
PRIORITY_RANK = {name: rank for rank, name in enumerate(PRIORITIES)}
DEFAULT_PRIORITY = "medium"
STATUSES = ("pending", "delivered", "seen", "dismissed", "archived", "discarded", "failed")
MAX_NAME = 100
MAX_KEY = 255
MAX_SUMMARY = 16_000
#: the columns of the agent, resource and thread ids
MAX_ID = 255

NOTIFICATION_KEYS = frozenset({"source", "kind", "priority", "summary", "payload", "dedupe_key", "coalesce_key",
                               "attributes", "metadata", "source_id"})


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def iso_z(value: datetime) -> str:
    """``value`` as JavaScript's ``Date.toISOString()`` writes it (UTC, milliseconds, ``Z``): the
    form of Mastra's ``summaryAt``, ``deliverAt`` and ``deliveredAt``."""
    value = value.astimezone(timezone.utc) if value.tzinfo else value
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def _no_nul(value: Any, field_name: str) -> None:
    """Refuse a NUL character in any string of ``value`` (keys of dicts included)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise NotificationError(f"{field_name} must not contain a NUL character", code="invalid_notification",
                                        details={"field": field_name})
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


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
    _no_nul(value, field_name)
    return value


def _key(value: Any, field_name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_KEY:
        raise NotificationError(f"{field_name} must be a non-empty string of at most {MAX_KEY} characters",
                                code="invalid_notification", details={"field": field_name})
    _no_nul(value, field_name)
    return value


def _json(value: Any, field_name: str, code: str) -> Any:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise NotificationError(f"{field_name} must be JSON-serialisable: {exc}", code=code,
                                details={"field": field_name}) from None
    _no_nul(value, field_name)
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
    data = snake_keys(notification)
    unknown = set(data) - NOTIFICATION_KEYS
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
    _no_nul(summary, "summary")
    try:
        attributes = check_attributes(data.get("attributes"))
    except SignalError as exc:
        raise NotificationError(exc.message, code="invalid_attributes", details={"field": "attributes"}) from None
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise NotificationError("metadata must be a dict", code="invalid_metadata", details={"field": "metadata"})
    out = {
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
    limit = current_limits().max_signal_bytes
    if json_size(out) > limit:
        raise NotificationError(f"the notification is larger than {limit} bytes", code="notification_too_large")
    return out


def validate_notifications(items: Any) -> list[dict]:
    """Check the notifications of one call (a list, at most the per-call cap) with
    :func:`validate_notification`; raises :class:`NotificationError` (``empty_batch``,
    ``too_many_notifications`` and the codes of one notification)."""
    if not isinstance(items, (list, tuple)):
        raise NotificationError("send a notification dict or a list of them", code="invalid_notification")
    if not items:
        raise NotificationError("the list of notifications is empty", code="empty_batch")
    limit = current_limits().max_notifications_per_call
    if len(items) > limit:
        raise NotificationError(f"more than {limit} notifications in one call", code="too_many_notifications")
    return [validate_notification(n) for n in items]


def validate_target(resource_id: Any, thread_id: Any) -> None:
    """Raise NotificationError (``missing_target``) unless both ids are non-empty strings, and
    (``invalid_target``) when one is longer than its column or holds a control character."""
    for name, value in (("resource_id", resource_id), ("thread_id", thread_id)):
        if not isinstance(value, str) or not value:
            raise NotificationError(f"{name} must be a non-empty string", code="missing_target",
                                    details={"field": name})
        if len(value) > MAX_ID or CONTROL_RE.search(value):
            raise NotificationError(f"{name} must be at most {MAX_ID} characters without control characters",
                                    code="invalid_target", details={"field": name})
