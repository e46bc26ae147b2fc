"""The signals built from notification records, as Mastra builds them
(``@mastra/core/notifications`` ``signals.ts``): a full ``<notification>`` and a
``<notification-summary>``, with their attributes (the XML the model sees) and their metadata (what
the echo chunk and the stored message carry). Pure functions, no I/O."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..messages import new_id
from ..signal import render_tag
from .validation import PRIORITY_RANK, iso_z

#: the attributes of a full notification signal, after the notification's own attributes
RESERVED_ATTRIBUTES = ("id", "source", "type", "kind", "priority", "status", "coalescedCount")
NOTIFICATION_TAG = "notification"
SUMMARY_TAG = "notification-summary"
#: the contents of a summary over no pending record
EMPTY_SUMMARY = "No pending notifications"


def notification_attributes(record: dict, status: str = "delivered") -> dict:
    """Custom attributes first (a custom key that collides with a core one keeps its position and
    takes the core value), then id, source, type, kind, priority, status and ``coalescedCount``
    (only when > 1)."""
    attributes = dict(record.get("attributes") or {})
    attributes.update({"id": record["id"], "source": record["source"], "type": record["kind"],
                       "kind": record["kind"], "priority": record["priority"], "status": status})
    if (record.get("coalesced_count") or 1) > 1:
        attributes["coalescedCount"] = record["coalesced_count"]
    return attributes


def notification_metadata(record: dict, status: str = "delivered", *, delivered_at: datetime | None = None) -> dict:
    """Mastra's ``notificationSignalMetadata``: ``{signal: "notification", recordId, source, kind,
    priority, status, coalescedCount?, deliveredAt?, seenAt?}``. ``delivered_at`` (the dispatcher's
    clock) stands for the record's own ``delivered_at``."""
    meta: dict[str, Any] = {"signal": "notification", "recordId": record["id"], "source": record["source"],
                            "kind": record["kind"], "priority": record["priority"], "status": status}
    if (record.get("coalesced_count") or 1) > 1:
        meta["coalescedCount"] = record["coalesced_count"]
    delivered_at = delivered_at or record.get("delivered_at")
    if delivered_at is not None:
        meta["deliveredAt"] = iso_z(delivered_at)
    if record.get("seen_at") is not None:
        meta["seenAt"] = iso_z(record["seen_at"])
    return meta


def notification_signal(record: dict, *, status: str = "delivered", signal_id: str | None = None,
                        delivered_at: datetime | None = None) -> dict:
    """The ``send_signal`` payload of a full notification (``createNotificationSignal``): the
    record's own metadata, then ``notification`` (:func:`notification_metadata`)."""
    return {"id": signal_id or new_id(), "type": "notification", "tag_name": NOTIFICATION_TAG,
            "contents": record["summary"], "attributes": notification_attributes(record, status),
            "metadata": {**(record.get("metadata") or {}),
                         "notification": notification_metadata(record, status, delivered_at=delivered_at)}}


def notification_xml(record: dict, status: str = "delivered") -> str:
    """What the model sees for a full notification."""
    return render_tag(NOTIFICATION_TAG, notification_attributes(record, status), record["summary"])


def summarize_records(records: list[dict]) -> dict:
    """Mastra's ``summarizeNotifications``: the *pending* records among ``records`` counted, by source
    and by priority, with their ids (in the order given). Returns ``{threadId, resourceId, agentId,
    pending, bySource, byPriority, notificationIds}``."""
    pending = [r for r in records if r.get("status", "pending") == "pending"]
    first = pending[0] if pending else (records[0] if records else {})
    by_source: dict[str, int] = {}
    by_priority: dict[str, int] = {}
    for r in pending:
        by_source[r["source"]] = by_source.get(r["source"], 0) + 1
        by_priority[r["priority"]] = by_priority.get(r["priority"], 0) + 1
    return {"threadId": first.get("thread_id", ""), "resourceId": first.get("resource_id"),
            "agentId": first.get("agent_id"), "pending": len(pending), "bySource": by_source,
            "byPriority": by_priority, "notificationIds": [r["id"] for r in pending]}


def _highest(by_priority: dict[str, int]) -> str | None:
    return max((p for p, n in by_priority.items() if n > 0), key=PRIORITY_RANK.__getitem__, default=None)


def summary_parts(summary: dict) -> tuple[dict, str]:
    """The attributes (``{pending, priority?}``) and the contents (``"github: 2, slack: 1"``, sources
    sorted) of the ``<notification-summary>`` for a :func:`summarize_records` result."""
    priority = _highest(summary["byPriority"])
    attributes: dict[str, Any] = {"pending": summary["pending"]}
    if priority is not None:
        attributes["priority"] = priority
    text = ", ".join(f"{source}: {summary['bySource'][source]}" for source in sorted(summary["bySource"]))
    return attributes, text or EMPTY_SUMMARY


def summary_metadata(summary: dict) -> dict:
    """Mastra's summary signal metadata: ``{notification: {signal: "summary", pending, groups,
    byPriority, notificationIds, priority?}, notificationSummary, notificationIds}``."""
    priority = _highest(summary["byPriority"])
    by_priority = dict(summary["byPriority"])  # in the order the records came, as Mastra's
    notification: dict[str, Any] = {
        "signal": "summary", "pending": summary["pending"],
        "groups": [{"source": s, "count": summary["bySource"][s]} for s in sorted(summary["bySource"])],
        "byPriority": by_priority, "notificationIds": list(summary["notificationIds"])}
    if priority is not None:
        notification["priority"] = priority
    return {"notification": notification, "notificationSummary": {**summary, "byPriority": by_priority},
            "notificationIds": list(summary["notificationIds"])}


def summary_signal(records: list[dict], *, signal_id: str | None = None) -> dict:
    """The ``send_signal`` payload of a ``<notification-summary>`` over ``records``."""
    summary = summarize_records(records)
    attributes, text = summary_parts(summary)
    return {"id": signal_id or new_id(), "type": "notification", "tag_name": SUMMARY_TAG, "contents": text,
            "attributes": attributes, "metadata": summary_metadata(summary)}


def summary_xml(records: list[dict]) -> str:
    """What the model sees for a summary over ``records``."""
    attributes, text = summary_parts(summarize_records(records))
    return render_tag(SUMMARY_TAG, attributes, text)
