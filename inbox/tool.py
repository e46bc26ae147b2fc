"""``create_notification_inbox_tool()``: one tool for the inbox instead of many CRUD tools.

Actions: ``list`` (default: pending records), ``read``, ``markSeen``, ``dismiss``, ``archive``,
``search``. ``read`` works as Mastra's: with an ``id`` on that record, without one on every pending or
delivered record of the thread (filtered by ``status``, ``priority``, ``source``, at most ``limit``).
A record no signal carried yet is injected into the current run as a full notification
(``status="delivered"`` in its XML) and marked ``seen``; one a signal carried already is just marked
``seen``. It answers ``{message, delivered, markedSeen, unavailable, alreadyRead}``.

The tool sees the records of its run's resource (and thread, unless ``thread_id`` names another
thread of the same resource). Notification content
reaches the model as a signal, not as tool output; tool results are small dicts with counts.
"""

from __future__ import annotations

from typing import Any

from agents.connections import async_twin
from agents.runtime import create_tool
from agents.runtime.errors import NotificationError
from agents.runtime.messages import new_id
from agents.runtime.notifications import PRIORITIES, STATUSES, notification_signal
from agents.runtime.tools import Tool

from .selectors import notification_counts, notification_get, notification_list
from .services import notification_archive, notification_dismiss, notification_mark_seen, notifications_read

ACTIONS = ("list", "read", "markSeen", "dismiss", "archive", "search")
TOOL_ID = "notification-inbox"
DEFAULT_LIMIT = 20
#: the statuses ``read`` delivers (Mastra's readable records)
READABLE = ("pending", "delivered")

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
    "an id to receive one in full, or without an id to receive every unread one (they arrive as <notification> "
    "signals), and 'markSeen', 'dismiss' or 'archive' with an id to file it. Use 'read' after a "
    "<notification-summary> when you need the records."
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
    record = await async_twin(notification_get)(record_id=record_id, resource_id=resource_id)
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
        records, total = await async_twin(notification_list)(
            resource_id=resource_id, thread_id=thread_id, status=status, priority=input.get("priority"),
            source=input.get("source"), query=query, limit=input.get("limit") or DEFAULT_LIMIT)
        counts = await async_twin(notification_counts)(resource_id=resource_id, thread_id=thread_id)
        return {"action": action, "count": len(records), "total": total, "counts": counts,
                "notifications": [_item(r) for r in records]}
    if action == "read":
        return await read_notifications(input, context, resource_id=resource_id, thread_id=thread_id)
    record_id = _need_id(action, input.get("id"))
    record = await _get(record_id, resource_id, thread_id)
    service, status = {"markSeen": (notification_mark_seen, "seen"), "dismiss": (notification_dismiss, "dismissed"),
                       "archive": (notification_archive, "archived")}[action]
    updated = await async_twin(service)(ids=[record_id])
    return {"action": action, "id": record_id, "updated": bool(updated), "status": status if updated else record["status"]}


def read_message(delivered: int) -> str:
    """Mastra's answer to ``read``."""
    if delivered == 0:
        return "No unread notifications needed delivery."
    return f"{delivered} notification{'' if delivered == 1 else 's'} will now be delivered."


async def read_notifications(input: dict, context: Any, *, resource_id: str | None, thread_id: str | None) -> dict:
    """The ``read`` action: the record named by ``id``, else the thread's readable records. Records are
    marked first (one transaction, ``inbox.services.notifications_read``), then the full
    notifications go out through the run's ``send_signal``: a record is injected once, whoever else
    reads it meanwhile. Without a run to inject into, a record no signal carried is ``unavailable``
    and stays as it is."""
    if input.get("id"):
        records = [await _get(input["id"], resource_id, thread_id)]
    else:
        records, _ = await async_twin(notification_list)(
            resource_id=resource_id, thread_id=thread_id, status=[input["status"]] if input.get("status") else
            list(READABLE), priority=input.get("priority"), source=input.get("source"),
            limit=input.get("limit") or DEFAULT_LIMIT)
    send_signal = getattr(context, "send_signal", None)
    readable = [r for r in records if r["status"] in READABLE]
    signal_ids = ({r["id"]: new_id() for r in readable if not r["delivered_signal_id"]}
                  if send_signal is not None else {})
    outcome = await async_twin(notifications_read)(ids=[r["id"] for r in readable], signal_ids=signal_ids)
    counts = {"delivered": 0, "markedSeen": 0, "unavailable": 0, "alreadyRead": len(records) - len(readable)}
    for record in readable:
        done = outcome.get(record["id"])
        if done == "inject":
            await send_signal(notification_signal(record, status="delivered", signal_id=signal_ids[record["id"]]))
            counts["delivered"] += 1
        elif done == "seen":
            counts["markedSeen"] += 1
        else:
            counts["unavailable"] += 1
    return {"message": read_message(counts["delivered"]), **counts}


def create_notification_inbox_tool(*, id: str = TOOL_ID, description: str = DESCRIPTION) -> Tool:
    """The inbox tool (tool id ``notification-inbox``); give it to an agent with memory::

        Agent(..., memory=Memory(), tools={"notification-inbox": create_notification_inbox_tool()})
    """
    return create_tool(id=id, description=description, input_schema=INPUT_SCHEMA, execute=execute_inbox_action)
