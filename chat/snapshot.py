"""What a websocket client gets first: the thread's snapshot (DESIGN §5).

``{"type": "snapshot", "messages", "hasEarlier", "queued", "approvals", "activeRunId", "lastSeq"}``:
the newest stored messages (at most ``MASTRA_CHAT_SNAPSHOT_MESSAGES``, and no more than fits one
websocket message; ``hasEarlier`` says older ones are left out: the page reads them over HTTP,
``chat.api.messages``), the inputs waiting for a run, the pending tool approvals of the active run,
the active run's id and the ``seq`` after which the live chunks follow. A thread's length does not
change what opening it costs.

The messages and ``lastSeq`` must agree: a run's messages, its last events and the lease's
``last_seq`` are written in one transaction when it ends, so the snapshot reads the lease, then the
messages, then the lease again, and reads again when the lease moved in between (a run ended). An
active run's messages are not stored yet: ``lastSeq`` is then the seq before its first logged chunk,
and the subscription replays the run from there, so a client joining mid-run sees the whole run once.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.utils import timezone

from agents.connections import async_twin
from agents.models import ThreadEvent, ThreadLease
from agents.runtime.threads import thread_key
from agents.store import approvals_pending
from agents.threads.activity import lease_state
from agents.threads.inputs import queued_inputs_list

from .frames import frame_limit, value_cut
from .selectors import MessagesWindow, message_position, messages_window

#: reads tried before the snapshot settles for the last one (each retry means a run just ended)
SNAPSHOT_ATTEMPTS = 5
#: room kept in a websocket message beside the snapshot's fields (bytes)
FRAME_SLACK = 1024


def window_read(key: str, *, before: int | None = None, at_least_one: bool = False) -> MessagesWindow:
    """The page's window of the thread's messages: ``MASTRA_CHAT_SNAPSHOT_MESSAGES`` at most, their
    JSON within one websocket message."""
    return messages_window(key=key, limit=settings.MASTRA_CHAT_SNAPSHOT_MESSAGES, before=before,
                           max_bytes=frame_limit() - FRAME_SLACK, at_least_one=at_least_one)


def lease_mark(key: str) -> tuple[int, str | None]:
    """``(last_seq, active_run_id)`` of the thread's lease (``(0, None)`` before any input)."""
    lease = ThreadLease.objects.filter(thread_id=key).first()
    if lease is None:
        return 0, None
    state = lease_state(lease, timezone.now())
    return state["last_seq"], state["active_run_id"]


def queued_view(item: dict) -> dict:
    signal = item["signal"]
    return {"id": item["id"], "kind": item["kind"], "runId": item["runId"], "type": signal.get("type"),
            "contents": signal.get("contents"), "attributes": signal.get("attributes") or {},
            "createdAt": item["createdAt"]}


def approval_view(row: dict) -> dict:
    return {"runId": row["run_id"], "agentId": row["agent_id"], "toolCallId": row["tool_call_id"],
            "toolName": row["tool_name"], "args": row["args"]}


def thread_queued(*, resource_id: str, thread_id: str) -> list[dict]:
    """The thread's inputs waiting for a run, oldest first, as the page shows them."""
    return [queued_view(item) for item in queued_inputs_list(key=thread_key(resource_id, thread_id))]


def thread_snapshot_build(*, resource_id: str, thread_id: str) -> dict:
    """The snapshot frame of a thread the caller may see (checked by the caller)."""
    key = thread_key(resource_id, thread_id)
    for _ in range(SNAPSHOT_ATTEMPTS):
        before = lease_mark(key)
        window = window_read(key)
        after = lease_mark(key)
        if before == after:
            break
    last_seq, active_run_id = after
    approvals: list[dict] = []
    if active_run_id is not None:
        first = (ThreadEvent.objects.filter(thread_id=key, run_id=active_run_id).order_by("seq")
                 .values_list("seq", flat=True).first())
        if first is not None:
            last_seq = min(last_seq, first - 1)
        approvals = [approval_view(a) for a in approvals_pending(run_id=active_run_id)]
    # in Mastra's stored format, as the HTTP API serves them (the page reads ``content.parts``)
    frame = {"type": "snapshot", "messages": [], "hasEarlier": False,
             "queued": thread_queued(resource_id=resource_id, thread_id=thread_id),
             "approvals": approvals, "activeRunId": active_run_id, "lastSeq": last_seq}
    # the newest messages that fit beside the rest (the oldest of the window go first; the page
    # reads what is left out over HTTP, where no message size limit applies)
    room = frame_limit() - FRAME_SLACK - len(json.dumps(frame))
    if room < 0:  # large inputs queued (each up to MASTRA_MAX_SIGNAL_BYTES): shown cut, as chunks are
        frame["queued"], frame["approvals"] = value_cut(frame["queued"]), value_cut(frame["approvals"])
        room = frame_limit() - FRAME_SLACK - len(json.dumps(frame))
    window.trim_to(room)
    frame["messages"], frame["hasEarlier"] = window.messages, window.has_earlier
    return frame


def thread_messages_page(*, resource_id: str, thread_id: str, before: str | None) -> dict | None:
    """``{"messages", "hasEarlier"}``: the thread's messages before message ``before`` (the newest
    when None), oldest first, a window as the snapshot's (the newest one at least, whatever its
    size); None when the thread has no message ``before``."""
    key = thread_key(resource_id, thread_id)
    position = None
    if before is not None:
        position = message_position(key=key, message_id=before)
        if position is None:
            return None
    window = window_read(key, before=position, at_least_one=True)
    return {"messages": window.messages, "hasEarlier": window.has_earlier}


def snapshot_chunk_window(chunk: dict) -> dict:
    """A ``data-thread-snapshot`` chunk (a resume from before the kept events: the whole thread)
    as the page gets it: the window a snapshot frame would carry, ``data.hasEarlier`` saying
    whether older messages are left out."""
    messages = chunk["data"]["messages"]
    newest = messages[-settings.MASTRA_CHAT_SNAPSHOT_MESSAGES:]
    window = MessagesWindow(messages=newest, sizes=[len(json.dumps(m)) + 2 for m in newest],
                            has_earlier=len(newest) < len(messages))
    rest = {**chunk, "data": {**chunk["data"], "messages": [], "hasEarlier": False}}
    window.trim_to(frame_limit() - FRAME_SLACK - len(json.dumps(rest)))
    return {**chunk, "data": {**chunk["data"], "messages": window.messages, "hasEarlier": window.has_earlier}}


athread_snapshot_build = async_twin(thread_snapshot_build)
athread_queued = async_twin(thread_queued)
