"""Storage protocols of the runtime and their in-memory implementation.

The runtime never touches a database itself. It talks to two small protocols:

- :class:`MemoryStore` — threads and their messages (used by ``Memory``).
- :class:`RunStore` — run records and suspended runs waiting on a tool approval.

``agents.store`` implements both on the Django ORM; :class:`InMemoryStore` implements them in a
dict for a process without Django (and for the runtime's own tests). The process-wide run store is
set once at start-up with :func:`set_run_store` (the Django app does it in ``AppConfig.ready``).
"""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import datetime, timezone
from typing import Any, Awaitable, Protocol

from .errors import AgentConfigError, MastraError, ToolApprovalError
from .stored_messages import stored_form
from .state_tracking import apply_state_signal


def approval_hash(tool_name: str, args: Any) -> str:
    """Binds an approval to the exact call (invariant 5): sha256 of tool name and canonical args."""
    raw = json.dumps([tool_name, args], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(raw.encode()).hexdigest()


#: the signal types a thread's listing leaves out unless asked (Mastra's ``system-reminders``)
REMINDER_TYPES = ("reactive", "system-reminder")


def newest_page(total: int, page: int, per_page: int | bool) -> tuple[int, int, bool]:
    """``(start, end, has_more)`` of page ``page`` of ``total`` messages in chronological order,
    as Mastra pages a thread: page 0 holds the newest ``per_page`` (``False``: all of them)."""
    if per_page is False:
        return 0, total, False
    newest, oldest = page * per_page, (page + 1) * per_page  # counted back from the newest
    if newest >= total:
        return 0, 0, False
    return max(0, total - oldest), total - newest, oldest < total


def is_reminder(message: dict) -> bool:
    """A stored ``reactive`` signal (hidden from listings unless asked)."""
    content = message.get("content")
    signal = (content.get("metadata") or {}).get("signal") if isinstance(content, dict) else None
    return message.get("role") == "signal" and isinstance(signal, dict) and signal.get("type") in REMINDER_TYPES


class MemoryStore(Protocol):
    async def prepare_thread(self, *, resource_id: str, thread_id: str, title: str | None,
                             metadata: dict | None, last_messages: int | None,
                             read_only: bool) -> tuple[dict | None, list[dict]]:
        """Create or update the thread (not when read_only) and return (thread, last messages)."""

    async def save_messages(self, *, resource_id: str, thread_id: str, messages: list[dict]) -> list[dict]:
        """Store ``messages`` (Mastra's stored format; model messages are converted) in the thread,
        creating it; a message whose id the thread holds replaces it. Returns them as stored."""

    async def set_thread_title(self, *, resource_id: str, thread_id: str, title: str) -> None: ...

    async def get_thread(self, *, resource_id: str, thread_id: str) -> dict | None: ...

    async def list_messages(self, *, resource_id: str, thread_id: str) -> list[dict]: ...

    async def list_messages_page(self, *, resource_id: str, thread_id: str, page: int, per_page: int | bool,
                                 include_system_reminders: bool) -> dict | None:
        """``{messages, total, page, perPage, hasMore}`` (:func:`newest_page`), None without the thread."""

    async def list_threads(self, *, resource_id: str | None, metadata: dict | None, page: int,
                           per_page: int | bool, order_by: dict | None) -> dict:
        """``{threads, total, page, perPage, hasMore}``, most recently updated first by default."""

    async def update_thread(self, *, resource_id: str, thread_id: str, title: str | None,
                            metadata: dict | None) -> dict | None:
        """Set the title and merge the metadata of an existing thread; None without the thread."""

    async def delete_thread(self, *, resource_id: str, thread_id: str) -> bool:
        """Delete the thread and its messages; False when there is none."""

    async def record_state_signal(self, *, resource_id: str, thread_id: str, state: dict, signal: dict,
                                  window_ids: list[str]) -> dict | None:
        """Apply a state signal computed in a run to the thread's tracking (``state_tracking``):
        None when it is skipped, else the signal with its ``threadId`` and ``version``."""


class RunStore(Protocol):
    async def record_run(self, run: dict) -> None:
        """Insert or update the run record ``run`` (keys: id, agent_id, resource_id, thread_id,
        status, finish_reason, usage, error, started_at, finished_at)."""

    async def save_suspended(self, *, run_id: str, agent_id: str, tool_call_id: str, tool_name: str,
                             args: Any, state: dict) -> None: ...

    async def claim_suspended(self, *, run_id: str, tool_call_id: str, decision: str,
                              thread: tuple[str, str] | None = None) -> dict:
        """Atomically take the suspended run waiting on ``tool_call_id`` and return its state.

        Raises ToolApprovalError when no run is suspended under ``run_id`` (``approval_not_found``;
        also for a run that is not of ``thread``, ``(resource_id, thread_id)``, when given), when it
        waits on another tool call, or when another process already claimed it.
        """

    async def pending_approvals(self, *, run_id: str | None = None) -> list[dict]: ...

    async def save_score(self, score: dict) -> None:
        """Store one scorer's result for a run (optional: a store without it keeps no scores)."""

    def save_spans(self, spans: list[dict]) -> Awaitable[None] | None:
        """Store the finished spans of a trace (optional: a store without it keeps no traces). It may
        be a coroutine function, or queue the spans and return None (the site's store: they are
        bookkeeping, stored off the run's path)."""

    def queue_spans(self, spans: list) -> bool:
        """Optional: take a finished trace's ``Span`` objects for a background writer that makes
        their records itself (``Span.to_dict``) and return True; False to have :meth:`save_spans`
        called with the records instead."""


class InMemoryStore:
    """Both protocols in plain dicts (single process; lost on exit)."""

    def __init__(self) -> None:
        self.threads: dict[tuple[str, str], dict] = {}
        self.messages: dict[tuple[str, str], list[dict]] = {}
        self.runs: dict[str, dict] = {}
        self.suspended: dict[str, dict] = {}
        self.scores: list[dict] = []
        self.spans: list[dict] = []

    # MemoryStore -----------------------------------------------------------------------------
    # threads are identified by (resource id, thread id): another resource's thread of the same id
    # is another thread

    async def prepare_thread(self, *, resource_id, thread_id, title, metadata, last_messages, read_only):
        key = (resource_id, thread_id)
        thread = self.threads.get(key)
        now = datetime.now(timezone.utc).isoformat()
        if not read_only:
            if thread is None:
                thread = {"id": thread_id, "resourceId": resource_id, "title": title or "",
                          "metadata": dict(metadata or {}), "createdAt": now, "updatedAt": now}
                self.threads[key] = thread
            else:
                if title is not None:
                    thread["title"] = title
                if metadata is not None:
                    thread["metadata"] = {**thread["metadata"], **metadata}
                thread["updatedAt"] = now
        history = self.messages.get(key, [])
        if last_messages is not None and last_messages is not False:
            history = history[-last_messages:] if last_messages else []
        return (copy.deepcopy(thread) if thread else None), copy.deepcopy(history)

    async def save_messages(self, *, resource_id, thread_id, messages):
        key = (resource_id, thread_id)
        messages = stored_form(messages)  # Mastra's stored format; transient signals never stored
        if key not in self.threads:
            now = datetime.now(timezone.utc).isoformat()
            self.threads[key] = {"id": thread_id, "resourceId": resource_id, "title": "",
                                 "metadata": {}, "createdAt": now, "updatedAt": now}
        else:
            self.threads[key]["updatedAt"] = datetime.now(timezone.utc).isoformat()
        held = self.messages.setdefault(key, [])
        at = {m["id"]: i for i, m in enumerate(held)}
        messages = [{**m, "threadId": thread_id, "resourceId": resource_id} for m in copy.deepcopy(messages)]
        for message in copy.deepcopy(messages):
            if message["id"] in at:  # saved again (its tool calls' results came later): replaced
                held[at[message["id"]]] = message
            else:
                at[message["id"]] = len(held)
                held.append(message)
        return copy.deepcopy(messages)

    async def set_thread_title(self, *, resource_id, thread_id, title):
        thread = self.threads.get((resource_id, thread_id))
        if thread is not None:
            thread["title"] = title

    async def get_thread(self, *, resource_id, thread_id):
        thread = self.threads.get((resource_id, thread_id))
        return None if thread is None else copy.deepcopy(thread)

    async def record_state_signal(self, *, resource_id, thread_id, state, signal, window_ids):
        thread = self.threads.get((resource_id, thread_id))
        if thread is None:
            return signal
        applied = apply_state_signal(thread["metadata"], state=state, signal=signal, thread_id=thread_id,
                                     now_iso=datetime.now(timezone.utc).isoformat(), window_ids=window_ids)
        if applied is None:
            return None
        recorded, thread["metadata"] = applied
        return copy.deepcopy(recorded)

    async def list_messages(self, *, resource_id, thread_id):
        return copy.deepcopy(self.messages.get((resource_id, thread_id), []))

    async def list_messages_page(self, *, resource_id, thread_id, page, per_page, include_system_reminders):
        if (resource_id, thread_id) not in self.threads:
            return None
        rows = [m for m in self.messages.get((resource_id, thread_id), [])
                if include_system_reminders or not is_reminder(m)]
        start, end, has_more = newest_page(len(rows), page, per_page)
        return {"messages": copy.deepcopy(rows[start:end]), "total": len(rows), "page": page, "perPage": per_page,
                "hasMore": has_more}

    async def list_threads(self, *, resource_id, metadata, page, per_page, order_by):
        rows = [t for (resource, _), t in self.threads.items() if resource_id is None or resource == resource_id]
        rows = [t for t in rows if all(t["metadata"].get(k) == v for k, v in (metadata or {}).items())]
        field = (order_by or {}).get("field") or "updatedAt"
        direction = str((order_by or {}).get("direction") or "DESC").upper()
        if field not in ("createdAt", "updatedAt") or direction not in ("ASC", "DESC"):
            raise AgentConfigError("order_by", "field is createdAt or updatedAt, direction ASC or DESC",
                                   code="invalid_field")
        rows.sort(key=lambda t: t["id"])
        rows.sort(key=lambda t: t[field], reverse=direction == "DESC")
        total = len(rows)
        if per_page is not False:
            rows = rows[page * per_page:(page + 1) * per_page]
        has_more = per_page is not False and (page + 1) * per_page < total
        return {"threads": copy.deepcopy(rows), "total": total, "page": page, "perPage": per_page,
                "hasMore": has_more}

    async def update_thread(self, *, resource_id, thread_id, title, metadata):
        if (resource_id, thread_id) not in self.threads:
            return None
        thread, _ = await self.prepare_thread(resource_id=resource_id, thread_id=thread_id, title=title,
                                              metadata=metadata, last_messages=0, read_only=False)
        return thread

    async def delete_thread(self, *, resource_id, thread_id):
        self.messages.pop((resource_id, thread_id), None)
        return self.threads.pop((resource_id, thread_id), None) is not None

    # RunStore --------------------------------------------------------------------------------
    async def record_run(self, run):
        self.runs[run["id"]] = {**self.runs.get(run["id"], {}), **copy.deepcopy(run)}

    async def save_suspended(self, *, run_id, agent_id, tool_call_id, tool_name, args, state):
        self.suspended[run_id] = {"run_id": run_id, "agent_id": agent_id, "tool_call_id": tool_call_id,
                                  "tool_name": tool_name, "args": copy.deepcopy(args),
                                  "hash": approval_hash(tool_name, args), "state": copy.deepcopy(state),
                                  "status": "pending"}

    async def claim_suspended(self, *, run_id, tool_call_id, decision, thread=None):
        entry = self.suspended.get(run_id)
        if entry is None or entry["status"] != "pending" or not suspended_in_thread(entry["state"], thread):
            raise ToolApprovalError(f"no run is waiting for approval under run id {run_id!r}", code="approval_not_found")
        if entry["tool_call_id"] != tool_call_id:
            raise ToolApprovalError(f"run {run_id!r} does not wait on tool call {tool_call_id!r}",
                                    code="approval_stale")
        if entry["hash"] != approval_hash(entry["tool_name"], entry["args"]):
            raise ToolApprovalError("the pending tool call changed since it was requested", code="approval_mismatch")
        entry["status"] = decision
        return copy.deepcopy(entry["state"])

    async def save_score(self, score):
        self.scores.append(copy.deepcopy(score))

    async def save_spans(self, spans):
        self.spans.extend(copy.deepcopy(spans))

    async def pending_approvals(self, *, run_id=None):
        return [copy.deepcopy({k: v for k, v in e.items() if k != "state"}) for e in self.suspended.values()
                if e["status"] == "pending" and (run_id is None or e["run_id"] == run_id)]


def suspended_in_thread(state: dict, thread: tuple[str, str] | None) -> bool:
    """Whether a suspended run's stored ``state`` is a run of ``thread`` (``(resource_id,
    thread_id)``; None: no scope, any run)."""
    if thread is None:
        return True
    memory = state.get("memory") or {}
    return (memory.get("resource_id"), memory.get("thread_id")) == tuple(thread)


_run_store: Any = None


def set_run_store(store: Any) -> None:
    """Set the process-wide run store (records, suspended runs)."""
    global _run_store
    _run_store = store


def get_run_store() -> Any:
    global _run_store
    if _run_store is None:
        _run_store = InMemoryStore()
    return _run_store
