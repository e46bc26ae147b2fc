"""Reads of the chat page: the agents it can talk to, the caller's threads, their notification inbox.

Every read goes through :class:`agents.access.Caller` (threads) or filters on the caller's resource
(notifications): a user sees only their own.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import Exists, JSONField, OuterRef, Q, Subquery

from agents.access import Caller
from agents.models import Message
from agents.registry import get_mastra
from inbox.models import NotificationRecord
from inbox.selectors import notification_counts, notification_list

#: threads listed at most (newest first)
THREADS_LIMIT = 100
#: characters of the first message shown for a thread without a title
PREVIEW_CHARS = 80
#: inbox records listed at most (newest first)
NOTIFICATIONS_LIMIT = 50
#: the statuses the panel lists; dismissed, archived and discarded records are filed away
OPEN_STATUSES = ["pending", "delivered", "seen", "failed"]


def agent_list() -> list[dict]:
    """The site's agents that can hold a conversation (they have memory), sorted by name, each
    with what its voice can do (``speak``: the page's Play buttons; ``listen``: its microphone)."""
    agents = [a for a in get_mastra().get_agents().values() if a.memory is not None]
    return [{"id": a.id, "name": a.name or a.id, "description": a.description or "",
             "voice": {"speak": a.voice.speaks, "listen": a.voice.listens}}
            for a in sorted(agents, key=lambda a: ((a.name or a.id).lower(), a.id))]


def voice_limits() -> dict:
    """What the page's recorder must stay under (docs/voice.md, the listen route's limits)."""
    return {"maxAudioBytes": settings.MASTRA_VOICE_MAX_AUDIO_BYTES,
            "maxAudioSeconds": settings.MASTRA_VOICE_MAX_AUDIO_SECONDS}


def thread_list(*, caller: Caller, query: str = "", limit: int = THREADS_LIMIT) -> list[dict]:
    """The caller's own threads, most recently updated first, each with a ``preview`` of its first
    input; ``query`` matches titles, ids and what was said (case-insensitive)."""
    rows = caller.visible_threads(caller.resource_id)
    query = query.strip()
    if query:
        said = Message.objects.filter(thread_id=OuterRef("pk"), content__icontains=query)
        rows = rows.filter(Q(title__icontains=query) | Q(thread_id__icontains=query) | Exists(said))
    first = (Message.objects.filter(thread_id=OuterRef("pk"), role__in=("user", "signal")).order_by("id")
             .values("content")[:1])
    rows = rows.annotate(first_message=Subquery(first, output_field=JSONField()))
    return [{"id": t.thread_id, "title": t.title, "preview": message_preview(t.first_message),
             "updatedAt": t.updated_at.isoformat()}
            for t in rows.order_by("-updated_at", "thread_id")[:limit]]


def message_preview(content) -> str:
    """The start of a thread's first input as the user typed it (the text parts of the stored
    message: a signal's contents, not the XML the model saw), for threads without a title."""
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list):
        return ""
    text = " ".join(" ".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text").split())
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 1] + "…"


def notification_panel(*, caller: Caller, thread_id: str | None = None) -> dict:
    """The caller's open inbox records (of one thread when ``thread_id``): ``{"pending", "unread",
    "records"}``; ``pending`` waits for delivery, ``unread`` is pending plus delivered (not seen)."""
    counts = notification_counts(resource_id=caller.resource_id, thread_id=thread_id)
    records, _ = notification_list(resource_id=caller.resource_id, thread_id=thread_id, status=OPEN_STATUSES,
                                   limit=NOTIFICATIONS_LIMIT)
    return {"pending": counts.get("pending", 0), "unread": counts.get("pending", 0) + counts.get("delivered", 0),
            "records": [panel_record(r) for r in records]}


def panel_record(record: dict) -> dict:
    """What the page shows of a record (camelCase, ISO datetimes)."""
    return {"id": record["id"], "threadId": record["thread_id"], "agentId": record["agent_id"],
            "source": record["source"], "kind": record["kind"], "priority": record["priority"],
            "status": record["status"], "summary": record["summary"], "coalescedCount": record["coalesced_count"],
            "createdAt": record["created_at"].isoformat()}


def notification_ids_of(*, caller: Caller, ids: list[str]) -> list[str]:
    """The ids among ``ids`` of records the caller owns (others' records do not exist for them)."""
    return list(NotificationRecord.objects.filter(pk__in=ids, resource_id=caller.resource_id)
                .values_list("pk", flat=True))
