"""Reads of the chat page: the agents it can talk to, the caller's threads, their notification inbox.

Every read goes through :class:`agents.access.Caller` (threads) or filters on the caller's resource
(notifications): a user sees only their own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Exists, JSONField, Min, OuterRef, Q, Subquery

from agents.access import Caller
from agents.models import Message, Run, ThreadInput
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
#: the statuses the badge counts (not yet read)
UNREAD_STATUSES = ["pending", "delivered"]
#: runs whose figures one request may ask for
RUNS_LIMIT = 100
#: example prompts listed at most for one agent
EXAMPLES_LIMIT = 8
#: why the picker cannot open an agent without memory
NO_MEMORY = "no memory: use the API"


def agent_list() -> list[dict]:
    """The site's agents, sorted by name: each with its description, its example prompts (the
    ``examples`` of its metadata), whether the page can talk to it (``available``: it has memory,
    which keeps a thread; ``reason`` says why not) and what its voice can do (``speak``: the page's
    Play buttons; ``listen``: its microphone)."""
    agents = sorted(get_mastra().get_agents().values(), key=lambda a: ((a.name or a.id).lower(), a.id))
    return [{"id": a.id, "name": a.name or a.id, "description": a.description or "",
             "examples": agent_examples(a), "available": a.memory is not None,
             "reason": "" if a.memory is not None else NO_MEMORY,
             "voice": {"speak": a.voice.speaks, "listen": a.voice.listens}}
            for a in agents]


def agent_examples(agent) -> list[str]:
    """The strings of the agent's ``metadata["examples"]`` (none when its metadata is a callable)."""
    examples = agent.static_metadata().get("examples")
    if not isinstance(examples, (list, tuple)):
        return []
    return [e for e in examples if isinstance(e, str) and e.strip()][:EXAMPLES_LIMIT]


def run_figures(*, caller: Caller, run_ids: list[str]) -> list[dict]:
    """What the page shows under an answer, for the caller's runs among ``run_ids``: the tokens, the
    duration (start to end, waits for an approval included) and the models that answered."""
    rows = Run.objects.filter(pk__in=run_ids[:RUNS_LIMIT], resource_id=caller.resource_id).order_by("started_at", "id")
    return [{"id": r.id, "agentId": r.agent_id, "status": r.status, "usage": usage_view(r.usage),
             "durationMs": (round((r.finished_at - r.started_at).total_seconds() * 1000)
                            if r.finished_at else None),
             "models": list(r.step_models or [])}
            for r in rows]


def usage_view(usage) -> dict:
    """A run's stored token usage in camelCase (``input_tokens`` -> ``inputTokens``)."""
    if not isinstance(usage, dict):
        return {}
    out = {}
    for key, value in usage.items():
        head, *rest = key.split("_")
        out[head + "".join(w.title() for w in rest)] = value
    return out


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
        # the text parts, not the JSON around them (agents.text_search)
        said = Message.objects.filter(thread_id=OuterRef("pk"), content__parts_icontains=query)
        # what was said is stored when its run ends; until then it is an accepted input
        asked = (ThreadInput.objects.filter(thread_id=OuterRef("pk"), signal__contents_icontains=query)
                 .exclude(status=ThreadInput.Status.CANCELLED))
        rows = rows.filter(Q(title__icontains_folded=query) | Q(thread_id__icontains=query) | Exists(said)
                           | Exists(asked))
    first = (Message.objects.filter(thread_id=OuterRef("pk"), role__in=("user", "signal")).order_by("id")
             .values("content")[:1])
    rows = rows.annotate(first_message=Subquery(first, output_field=JSONField()))
    threads = list(rows.order_by("-updated_at", "thread_id")[:limit])
    # a thread's first message is stored when its first run ends; its input, when it is accepted
    waiting = first_inputs([t.pk for t in threads if t.first_message is None])
    return [{"id": t.thread_id, "title": t.title,
             "preview": (message_preview(t.first_message) if t.first_message is not None
                         else signal_preview(waiting.get(t.pk))),
             "updatedAt": t.updated_at.isoformat()}
            for t in threads]


def first_inputs(keys: list[str]) -> dict[str, dict]:
    """The signal of the first input (not cancelled) of each thread ``keys`` names, by thread key
    (one query)."""
    if not keys:
        return {}
    live = ThreadInput.objects.filter(thread_id__in=keys).exclude(status=ThreadInput.Status.CANCELLED)
    firsts = live.values("thread_id").annotate(first=Min("id")).values("first")
    return dict(ThreadInput.objects.filter(id__in=Subquery(firsts)).values_list("thread_id", "signal"))


@dataclass
class MessagesWindow:
    """The newest stored messages of a thread (before a cursor), oldest first, as the page reads
    them: ``messages`` in Mastra's stored format, ``sizes`` the length of each one's JSON (what it
    adds to a websocket frame), ``has_earlier`` whether older messages are left out."""

    messages: list[dict] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    has_earlier: bool = False

    def trim_to(self, max_bytes: int) -> None:
        """Leave out the oldest messages until the others' JSON fits ``max_bytes`` (possibly none)."""
        total = sum(self.sizes)
        drop = 0
        while drop < len(self.sizes) and total > max_bytes:
            total -= self.sizes[drop]
            drop += 1
        if drop:
            self.messages, self.sizes, self.has_earlier = self.messages[drop:], self.sizes[drop:], True


def messages_window(*, key: str, limit: int, max_bytes: int, before: int | None = None,
                    at_least_one: bool = False) -> MessagesWindow:
    """The newest ``limit`` messages of the thread ``key`` whose primary key is below ``before``
    (all when None), fewer when their JSON would exceed ``max_bytes``; ``at_least_one`` keeps the
    newest one whatever its size (an HTTP page must always move back). One indexed query
    (``(thread, id)``, read backwards): the cost does not grow with the thread."""
    rows = Message.objects.filter(thread_id=key)
    if before is not None:
        rows = rows.filter(id__lt=before)
    newest = list(rows.order_by("-id")[:limit + 1])
    window = MessagesWindow(has_earlier=len(newest) > limit)
    total = 0
    for message in newest[:limit]:
        data = message.to_dict()
        size = len(json.dumps(data)) + 2  # and the separator in the frame's list
        if total + size > max_bytes and (window.messages or not at_least_one):
            window.has_earlier = True
            break
        window.messages.append(data)
        window.sizes.append(size)
        total += size
    window.messages.reverse()
    window.sizes.reverse()
    return window


def message_position(*, key: str, message_id: str) -> int | None:
    """The primary key of message ``message_id`` of the thread ``key`` (the cursor of
    :func:`messages_window`), or None when the thread has no such message."""
    return Message.objects.filter(thread_id=key, message_id=message_id).values_list("id", flat=True).first()


def message_preview(content) -> str:
    """The start of a thread's first input as the user typed it (the text parts of the stored
    message: a signal's contents, not the XML the model saw), for threads without a title."""
    parts = content.get("parts") if isinstance(content, dict) else None
    return _preview(parts)


def signal_preview(signal: dict | None) -> str:
    """:func:`message_preview` of an accepted input not yet in the history (its signal's contents)."""
    contents = signal.get("contents") if isinstance(signal, dict) else None
    return _preview([{"type": "text", "text": contents}] if isinstance(contents, str) else contents)


def _preview(parts) -> str:
    """The text parts of ``parts``, their whitespace collapsed, cut at ``PREVIEW_CHARS``."""
    if not isinstance(parts, list):
        return ""
    text = " ".join(" ".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text").split())
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 1] + "…"


def notification_panel(*, caller: Caller, thread_id: str | None = None) -> dict:
    """The caller's open inbox records (of one thread when ``thread_id``): ``{"pending", "unread",
    "records"}``; ``pending`` waits for delivery, ``unread`` is pending plus delivered (not seen):
    the badge's number and the panel's heading."""
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


def unread_notification_ids(*, caller: Caller) -> list[str]:
    """The ids of the caller's records not yet read (pending or delivered)."""
    return list(NotificationRecord.objects.filter(resource_id=caller.resource_id, status__in=UNREAD_STATUSES)
                .values_list("pk", flat=True))


def notification_ids_of(*, caller: Caller, ids: list[str]) -> list[str]:
    """The ids among ``ids`` of records the caller owns (others' records do not exist for them)."""
    return list(NotificationRecord.objects.filter(pk__in=ids, resource_id=caller.resource_id)
                .values_list("pk", flat=True))
