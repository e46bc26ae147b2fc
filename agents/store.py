"""The runtime's storage protocols (``agents.runtime.storage``) on the Django ORM.

Each async method runs one sync function in Django's worker thread (its async twin, an ``a``
prefix: ``agents.connections.async_twin``) and, where it writes
more than one row, one transaction. Nothing here is called from the async runtime except through
these methods.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agents.connections import async_twin
from django.conf import settings
from django.db import transaction

from agents.observability_services import ascore_save, aspans_save, spans_submit
from django.utils import timezone

from agents.models import MESSAGE_FIELDS, Message, Run, Thread, ToolApproval, message_bookkeeping, message_dict
from agents.runtime.errors import AgentConfigError, ToolApprovalError
from agents.runtime.ids import MAX_RESOURCE_ID, MAX_RUN_ID, MAX_THREAD_ID, id_check
from agents.runtime.storage import approval_hash, suspended_in_thread
from agents.runtime.stored_messages import stored_form
from agents.runtime.threads.store import thread_key
from agents.runtime.state_tracking import apply_state_signal


def time_parse(value: str | None) -> datetime:
    """An ISO timestamp (naive means the current time zone) as an aware datetime; now when empty."""
    if not value:
        return timezone.now()
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else timezone.make_aware(parsed)


def thread_ids_check(resource_id: str, thread_id: str) -> None:
    """Both ids of a memory thread are valid ids (``invalid_id``: no control character, at most the
    columns' lengths)."""
    id_check(resource_id, "memory.resource", MAX_RESOURCE_ID, error=AgentConfigError)
    id_check(thread_id, "memory.thread", MAX_THREAD_ID, error=AgentConfigError)


def thread_row_get(resource_id: str, thread_id: str) -> Thread | None:
    """The row of the thread (resource_id, thread_id), or None."""
    return Thread.objects.select_row({"key": thread_key(resource_id, thread_id)})


def _history(key: str, limit: int | None) -> list[dict]:
    """The last ``limit`` messages of the thread ``key`` (all with None), oldest first, as served."""
    rows = Message.objects.select_values(MESSAGE_FIELDS, {"thread_id": key}, order_by=("-id",), limit=limit)
    return [message_dict(*row) for row in reversed(rows)]


def thread_prepare(*, resource_id: str, thread_id: str, title: str | None, metadata: dict | None,
                   last_messages: int | bool | None, read_only: bool) -> tuple[dict | None, list[dict]]:
    """Create or update the thread (unless ``read_only``) and return it with its last messages.

    The common case (the thread exists, nothing to change) is two reads and no write transaction;
    creating or updating the thread takes one transaction that re-reads the row under its lock.
    """
    thread_ids_check(resource_id, thread_id)
    key = thread_key(resource_id, thread_id)
    thread = thread_row_get(resource_id, thread_id)
    if not read_only and (thread is None or not thread.saved or title is not None or metadata is not None):
        with transaction.atomic():
            thread = Thread.objects.select_for_update().filter(pk=key).first()
            if thread is None:
                thread = Thread.objects.create(key=key, resource_id=resource_id, thread_id=thread_id,
                                               title=title or "", metadata=dict(metadata or {}))
            else:
                if not thread.saved:  # created now, over inputs persisted before
                    thread_save_pending(thread, timezone.now())
                if title is not None:
                    thread.title = title
                if metadata is not None:
                    thread.metadata = {**thread.metadata, **metadata}
                thread.save(update_fields=["title", "metadata", "updated_at"])
    # a row that only holds persisted inputs is no thread yet (read-only memory reads its history)
    shown = thread.to_dict() if thread is not None and thread.saved else None
    if thread is None or last_messages == 0:
        return shown, []
    limit = None if last_messages is None or last_messages is False else last_messages
    return shown, _history(key, limit)


def thread_save_pending(thread: Thread, now) -> None:
    """Make a row that only held persisted inputs a thread, created ``now`` (in the caller's
    transaction; ``thread`` is updated in place)."""
    Thread.objects.update_rows({"key": thread.key}, {"saved": True, "created_at": now, "updated_at": now})
    thread.saved, thread.created_at, thread.updated_at = True, now, now


def thread_prepare_locked(thread: Thread, *, resource_id: str, thread_id: str, last_messages: int | bool | None,
                          read_only: bool, fresh: bool = False) -> tuple[dict | None, list[dict]]:
    """``thread_prepare`` for a caller that already holds the thread's lease row in its transaction
    and read (or created: ``fresh``) ``thread`` (a wake, ``agents.threads.inputs.input_accept``): no
    title or metadata change."""
    if fresh or last_messages == 0:  # a thread created now has no messages yet
        return thread.to_dict(), []
    limit = None if last_messages is None or last_messages is False else last_messages
    return thread.to_dict(), _history(thread.key, limit)


def messages_save(*, resource_id: str, thread_id: str, messages: list[dict]) -> list[dict]:
    """Store ``messages`` in the thread (created when missing), in one transaction; returns them as
    stored (``messages_save_locked``)."""
    with transaction.atomic():
        return messages_save_locked(resource_id=resource_id, thread_id=thread_id, messages=messages)


def messages_save_locked(*, resource_id: str, thread_id: str, messages: list[dict]) -> list[dict]:
    """``messages_save`` inside the caller's transaction (a thread run's last write).

    ``messages`` are in Mastra's stored format (``agents.runtime.stored_messages``); model messages
    are converted first. A message whose id the thread holds already replaces the stored one (an
    assistant message saved again with the results of its tool calls, as Mastra's ``saveMessages``
    upserts). Transient signals are left out: they are never stored."""
    thread_ids_check(resource_id, thread_id)
    messages = stored_form(messages)
    if not messages:
        return []
    # touching the row first locks it (as select_for_update did); only a missing thread needs
    # another statement
    key = thread_key(resource_id, thread_id)
    touched = Thread.objects.update_rows({"key": key}, {"updated_at": timezone.now()})
    if not touched:
        now = timezone.now()
        Thread.objects.insert_rows([{"key": key, "resource_id": resource_id, "thread_id": thread_id,
                                     "created_at": now, "updated_at": now}], ignore_conflicts=True)
    rows = [message_row(m, key=key, resource_id=resource_id) for m in messages]
    inserted = Message.objects.insert_rows(rows, ignore_conflicts=True)
    if inserted < len(rows):  # some were stored already: they take the new content
        for row in rows:
            Message.objects.update_rows({"thread_id": key, "message_id": row["message_id"]},
                                        {"content": row["content"], "metadata": row["metadata"]})
    return [{**m, "threadId": thread_id, "resourceId": resource_id} for m in messages]


def message_row(message: dict, *, key: str, resource_id: str) -> dict:
    """The ``Message`` row of a stored message."""
    return {"message_id": message["id"], "thread_id": key, "resource_id": resource_id, "role": message["role"],
            "type": message.get("type") or "", "content": message["content"],
            "metadata": message_bookkeeping(message), "created_at": time_parse(message.get("createdAt"))}


def thread_set_title(*, resource_id: str, thread_id: str, title: str) -> None:
    Thread.objects.filter(pk=thread_key(resource_id, thread_id)).update(title=title[:255], updated_at=timezone.now())


def thread_get(*, resource_id: str, thread_id: str) -> dict | None:
    thread_ids_check(resource_id, thread_id)
    thread = thread_row_get(resource_id, thread_id)
    return thread.to_dict() if thread is not None and thread.saved else None


def state_signal_record(thread: Thread, *, state: dict, signal: dict, now: datetime,
                        window_ids: list[str] | None = None) -> dict | None:
    """Apply one state signal to ``thread`` (locked by the caller, or serialised by its lease; the
    rules: ``agents.runtime.state_tracking``).

    ``state`` is ``{"id", "cache_key", "mode"}``; ``window_ids`` the ids of the signals in the
    context window of the run that computed it (None from outside a run). Returns None when the
    state is skipped (nothing written), else the signal with ``metadata.state.threadId`` and
    ``version``, after saving the new tracking on the thread."""
    applied = apply_state_signal(thread.metadata, state=state, signal=signal, thread_id=thread.thread_id,
                                 now_iso=now.isoformat(), window_ids=window_ids)
    if applied is None:
        return None
    recorded, thread.metadata = applied
    thread.save(update_fields=["metadata", "updated_at"])
    return recorded


def thread_state_signal_record(*, resource_id: str, thread_id: str, state: dict, signal: dict,
                               window_ids: list[str]) -> dict | None:
    """A state signal computed in a run, applied to the thread's tracking under the row's lock
    (:func:`state_signal_record`); a thread not stored (read-only memory) keeps no tracking."""
    with transaction.atomic():
        thread = Thread.objects.select_for_update().filter(pk=thread_key(resource_id, thread_id)).first()
        if thread is None:
            return signal
        return state_signal_record(thread, state=state, signal=signal, now=timezone.now(), window_ids=window_ids)


def thread_messages(*, resource_id: str, thread_id: str) -> list[dict]:
    thread_ids_check(resource_id, thread_id)
    return [m.to_dict() for m in Message.objects.filter(thread_id=thread_key(resource_id, thread_id))]


def messages_and_run_save(*, resource_id: str, thread_id: str, messages: list[dict], run: dict) -> None:
    """The end of a memory run outside a thread's lease (a ``generate`` on a memory thread): its
    messages (``messages_save_locked``) and its record (``run_record``) in one transaction."""
    with transaction.atomic():
        saved = messages_save_locked(resource_id=resource_id, thread_id=thread_id, messages=messages)
        run_record(run, thread_exists=bool(saved))


def run_record(run: dict, *, existing: bool = False, thread_exists: bool = False) -> None:
    """Insert or update the run record in one statement (INSERT ... ON CONFLICT (id) DO UPDATE).

    ``existing``: the row is most likely there (a thread run's, written when it took the thread's
    lease): a plain update, and the upsert only when no row was there. ``thread_exists``: the
    caller has just written the memory thread's row (no need to look). The run points at its
    memory thread when that thread's row exists and belongs to the run's resource (a read-only
    memory run on a thread never created has none). Its resource is its memory's; a run without
    memory keeps the one its row holds (an HTTP caller's, written when the run id was reserved)."""
    id_check(run.get("id"), "run id", MAX_RUN_ID, error=AgentConfigError)
    key = None
    if run.get("thread_id") is not None and run.get("resource_id") is not None:
        key = thread_key(run["resource_id"], run["thread_id"])
        if not existing and not thread_exists and thread_row_get(run["resource_id"], run["thread_id"]) is None:
            key = None
    values = {"agent_id": run.get("agent_id") or "", "thread_id": key, "status": run.get("status") or Run.Status.COMPLETED,
              "finish_reason": run.get("finish_reason") or "", "usage": run.get("usage") or {},
              "error": run.get("error") or "", "error_code": (run.get("error_code") or "")[:64],
              "steps": run.get("steps") or 0, "step_models": list(run.get("models") or []),
              "started_at": time_parse(run.get("started_at")),
              "finished_at": time_parse(run["finished_at"]) if run.get("finished_at") else None}
    if run.get("resource_id"):
        values["resource_id"] = run["resource_id"]
    elif Run.objects.update_rows({"id": run["id"]}, values):
        return  # a run without memory keeps the owner its row was reserved with (agents.runs)
    else:
        values["resource_id"] = ""
    if existing and Run.objects.update_rows({"id": run["id"]}, values):
        return
    Run.objects.upsert_row({"id": run["id"], **values})


def approval_save(*, run_id: str, agent_id: str | None, tool_call_id: str, tool_name: str, args, state: dict) -> None:
    ToolApproval.objects.update_or_create(run_id=run_id, tool_call_id=tool_call_id, defaults={
        "agent_id": agent_id or "", "tool_name": tool_name, "args": args,
        "args_hash": approval_hash(tool_name, args), "state": state, "status": ToolApproval.Status.PENDING,
        "decided_at": None,
    })


def approval_claim(*, run_id: str, tool_call_id: str, decision: str, thread: tuple[str, str] | None = None) -> dict:
    """Compare-and-set pending → ``decision``; only one caller ever gets the state back. With
    ``thread`` (``(resource_id, thread_id)``) a run of another thread (or of none) is not found."""
    pending = ToolApproval.objects.filter(run_id=run_id, status=ToolApproval.Status.PENDING).first()
    if pending is None or not suspended_in_thread(pending.state, thread):
        raise ToolApprovalError(f"no run is waiting for approval under run id {run_id!r}", code="approval_not_found")
    if pending.tool_call_id != tool_call_id:
        raise ToolApprovalError(f"run {run_id!r} does not wait on tool call {tool_call_id!r}", code="approval_stale")
    if pending.args_hash != approval_hash(pending.tool_name, pending.args):
        raise ToolApprovalError("the pending tool call changed since it was requested", code="approval_mismatch")
    claimed = ToolApproval.objects.filter(pk=pending.pk, status=ToolApproval.Status.PENDING).update(
        status=decision, decided_at=timezone.now())
    if claimed != 1:
        raise ToolApprovalError(f"the tool call {tool_call_id!r} was already decided", code="approval_stale")
    return pending.state


def approvals_pending(*, run_id: str | None = None) -> list[dict]:
    rows = ToolApproval.objects.filter(status=ToolApproval.Status.PENDING)
    if run_id is not None:
        rows = rows.filter(run_id=run_id)
    return [{"run_id": a.run_id, "agent_id": a.agent_id, "tool_call_id": a.tool_call_id, "tool_name": a.tool_name,
             "args": a.args, "hash": a.args_hash, "status": a.status} for a in rows]


athread_prepare = async_twin(thread_prepare)
amessages_save = async_twin(messages_save)
amessages_and_run_save = async_twin(messages_and_run_save)
athread_set_title = async_twin(thread_set_title)
athread_get = async_twin(thread_get)
athread_messages = async_twin(thread_messages)
athread_state_signal_record = async_twin(thread_state_signal_record)
arun_record = async_twin(run_record)
aapproval_save = async_twin(approval_save)
aapproval_claim = async_twin(approval_claim)
aapprovals_pending = async_twin(approvals_pending)


class DjangoStore:
    """RunStore and the run path of MemoryStore on the ORM (see ``agents.runtime.storage``); the
    memory thread API is ``agents.memory_threads.DjangoMemoryStore``."""

    async def prepare_thread(self, **kwargs):
        return await athread_prepare(**kwargs)

    async def save_messages(self, **kwargs):
        return await amessages_save(**kwargs)

    def records_runs_of(self, run_store: Any) -> bool:
        """Whether this memory store can write ``run_store``'s run records with a run's messages,
        in one transaction (the same database): :meth:`save_messages_and_run`."""
        return isinstance(run_store, DjangoStore)

    async def save_messages_and_run(self, *, resource_id: str, thread_id: str, messages: list[dict],
                                    run: dict) -> None:
        await amessages_and_run_save(resource_id=resource_id, thread_id=thread_id, messages=messages, run=run)

    async def set_thread_title(self, **kwargs):
        await athread_set_title(**kwargs)

    async def get_thread(self, **kwargs):
        return await athread_get(**kwargs)

    async def list_messages(self, **kwargs):
        return await athread_messages(**kwargs)

    async def record_state_signal(self, **kwargs):
        return await athread_state_signal_record(**kwargs)

    async def record_run(self, run):
        await arun_record(run)

    async def save_suspended(self, **kwargs):
        await aapproval_save(**kwargs)

    async def claim_suspended(self, **kwargs):
        return await aapproval_claim(**kwargs)

    async def pending_approvals(self, **kwargs):
        return await aapprovals_pending(**kwargs)

    # -- scores and trace spans (agents.observability_services) --
    async def save_score(self, score: dict) -> None:
        await ascore_save(score=score)

    def queue_spans(self, spans: list) -> bool:
        """With ``MASTRA_TRACE_BATCH`` (the default), queue a finished trace's ``Span`` objects on
        the process's trace writer and return True: no I/O here, and the writer's thread makes
        their rows, off the run's path. False when the trace should be
        stored now (:meth:`save_spans`)."""
        if not settings.MASTRA_TRACE_BATCH:
            return False
        spans_submit(spans)
        return True

    async def save_spans(self, spans: list[dict]) -> None:
        """Store a trace now (``MASTRA_TRACE_BATCH`` off: :meth:`queue_spans` declined it)."""
        await aspans_save(spans=spans)
