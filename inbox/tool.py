"""``create_notification_inbox_tool()``: one tool for the inbox instead of many CRUD tools.

Actions: ``list`` (default: pending records), ``read`` (injects the full notification signal into the
current run and marks the record ``seen``; a record already delivered is just marked seen),
``markSeen``, ``dismiss``, ``archive``, ``search``. The tool sees the records of its run's resource
(and thread, unless ``thread_id`` names another thread of the same resource). Notification content
reaches the model as a signal, not as tool output; tool results are small dicts with counts.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async

from agents.runtime import create_tool
from agents.runtime.errors import NotificationError
from agents.runtime.messages import new_id
from agents.runtime.notifications import PRIORITIES, STATUSES, notification_signal
from agents.runtime.tools import Tool

from .selectors import notification_counts, notification_get, notification_list
from .services import notification_archive, notification_dismiss, notification_mark_seen, notification_read

ACTIONS = ("list", "read", "markSeen", "dismiss", "archive", "search")
TOOL_ID = "notification-inbox"
DEFAULT_LIMIT = 20

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS),
                   "description": "list | read | markSeen | dismiss | archive | search"},
        "thread_id": {"type": "string", "description": "another thread of the same resource (default: this one)"},
        "id": {"type": "string", "description": "the notification id (read, markSeen, dismiss, archive)"},
        "status": {"type": "string", "enum": list(STATUSES), "description": "list/search filter (list: pending)"},
        "priority": {"type": "string", "enum": list(PRIORITIES)},
        "source": {"type": "string"},
        "query": {"type": "string", "description": "search text (summary, source, kind)"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    },
    "required": ["action"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "The notification inbox of this conversation. Use 'list' or 'search' to see notifications, 'read' with "
    "an id to receive one in full (it arrives as a <notification> signal), and 'markSeen', 'dismiss' or "
    "'archive' with an id to file it. Use 'read' after a <notification-summary> when you need the records."
)


def _item(record: dict) -> dict:
    return {"id": record["id"], "source": record["source"], "kind": record["kind"], "priority": record["priority"],
            "status": record["status"], "summary": record["summary"], "coalesced_count": record["coalesced_count"],
            "created_at": record["created_at"].isoformat()}


def _need_id(action: str, value: Any) -> str:
    if not value:
        raise NotificationError(f"the {action!r} action needs the notification 'id'", code="missing_id",
                                details={"field": "id"})
    return value


async def _get(record_id: str, resource_id: str | None, thread_id: str | None) -> dict:
    record = await sync_to_async(notification_get)(record_id=record_id, resource_id=resource_id)
    if record is None or (resource_id is None and thread_id is not None and record["thread_id"] != thread_id):
        raise NotificationError(f"no notification {record_id!r} in this inbox", code="not_found",
                                details={"id": record_id})
    return record


async def execute_inbox_action(input: dict, context: Any) -> dict:
    """The tool's ``execute``: one action on the inbox of ``context``'s resource and thread."""
    action = input["action"]
    resource_id = getattr(context, "resource_id", None)
    thread_id = input.get("thread_id") or getattr(context, "thread_id", None)
    if resource_id is None and thread_id is None:
        raise NotificationError("the inbox tool works in a memory thread (or give thread_id)", code="missing_target")
    if action in ("list", "search"):
        query = input.get("query")
        if action == "search" and not (query and query.strip()):
            raise NotificationError("the 'search' action needs a 'query'", code="missing_query",
                                    details={"field": "query"})
        status = input.get("status") or ("pending" if action == "list" else None)
        records, total = await sync_to_async(notification_list)(
            resource_id=resource_id, thread_id=thread_id, status=status, priority=input.get("priority"),
            source=input.get("source"), query=query, limit=input.get("limit") or DEFAULT_LIMIT)
        counts = await sync_to_async(notification_counts)(resource_id=resource_id, thread_id=thread_id)
        return {"action": action, "count": len(records), "total": total, "counts": counts,
                "notifications": [_item(r) for r in records]}
    record_id = _need_id(action, input.get("id"))
    record = await _get(record_id, resource_id, thread_id)
    if action == "read":
        send_signal = getattr(context, "send_signal", None)
        if send_signal is None:
            raise NotificationError("'read' injects the notification into a run; call it from an agent run",
                                    code="no_active_run")
        signal_id = new_id()
        outcome = await sync_to_async(notification_read)(record_id=record_id, signal_id=signal_id)
        if outcome == "inject":
            await send_signal(notification_signal(record, status="seen", signal_id=signal_id))
        status = "seen" if outcome else record["status"]
        return {"action": "read", "id": record_id, "status": status, "injected": outcome == "inject",
                "signal_id": signal_id if outcome == "inject" else None}
    service, status = {"markSeen": (notification_mark_seen, "seen"), "dismiss": (notification_dismiss, "dismissed"),
                       "archive": (notification_archive, "archived")}[action]
    updated = await sync_to_async(service)(ids=[record_id])
    return {"action": action, "id": record_id, "updated": bool(updated), "status": status if updated else record["status"]}


def create_notification_inbox_tool(*, id: str = TOOL_ID, description: str = DESCRIPTION) -> Tool:
    """The inbox tool (tool id ``notification-inbox``); give it to an agent with memory::

        Agent(..., memory=Memory(), tools={"notification-inbox": create_notification_inbox_tool()})
    """
    return create_tool(id=id, description=description, input_schema=INPUT_SCHEMA, execute=execute_inbox_action)
