"""What a websocket client gets first: the thread's snapshot (DESIGN §5).

``{"type": "snapshot", "messages", "queued", "approvals", "activeRunId", "lastSeq"}``: the stored
messages, the inputs waiting for a run, the pending tool approvals of the active run, the active
run's id and the ``seq`` after which the live chunks follow.

The messages and ``lastSeq`` must agree: a run's messages, its last events and the lease's
``last_seq`` are written in one transaction when it ends, so the snapshot reads the lease, then the
messages, then the lease again, and reads again when the lease moved in between (a run ended). An
active run's messages are not stored yet: ``lastSeq`` is then the seq before its first logged chunk,
and the subscription replays the run from there, so a client joining mid-run sees the whole run once.
"""

from __future__ import annotations
from django.utils import timezone

from agents.connections import async_twin
from agents.models import Message, ThreadEvent, ThreadLease
from agents.runtime.threads import thread_key
from agents.store import approvals_pending
from agents.threads.activity import lease_state
from agents.threads.inputs import queued_inputs_list

#: reads tried before the snapshot settles for the last one (each retry means a run just ended)
SNAPSHOT_ATTEMPTS = 5


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
        stored = [m.to_dict() for m in Message.objects.filter(thread_id=key).order_by("id")]
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
    return {"type": "snapshot", "messages": stored, "queued": thread_queued(resource_id=resource_id,
                                                                              thread_id=thread_id),
            "approvals": approvals, "activeRunId": active_run_id, "lastSeq": last_seq}


athread_snapshot_build = async_twin(thread_snapshot_build)
athread_queued = async_twin(thread_queued)
