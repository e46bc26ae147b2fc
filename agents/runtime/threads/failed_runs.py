"""The end of a thread run that raised instead of ending.

A run ends itself: its last chunks, then one write of its messages, its record and the thread's
lease (``write_end``). A run that raises before that write (a bug, or a caller's ``on_chunk`` that
raises) would leave its thread busy for as long as this process renews the lease, and the inputs
it took in nowhere. The thread runtime then ends it in its place, through the same write: an
``error`` and a ``finish`` chunk on the thread, the inputs the run answered kept in the thread's
history with an error entry saying why, the run recorded ``failed``, and the lease released or
handed to the next input.
"""

from __future__ import annotations

from typing import Any

from ..chunks import chunk
from ..messages import new_id, now_iso
from ..redaction import redact_text
from ..signal import render_signal
from ..stored_messages import error_entry, stored_form

#: the error code of a run that raised (an exception that names none)
RUN_FAILED = "run_failed"


def failure_of(exc: BaseException) -> dict:
    """``{"message", "code"}`` of what the run raised, as an ``error`` chunk carries it."""
    return {"message": redact_text(str(exc)) or type(exc).__name__, "code": getattr(exc, "code", None) or RUN_FAILED}


def sent_failure(error: Any) -> dict | None:
    """``{"message", "code"}`` of the ``error`` chunk the run sent before it raised, if any."""
    if not isinstance(error, dict) or not error.get("message"):
        return None
    return {"message": str(error["message"]), "code": error.get("code") or RUN_FAILED}


def closing_chunks(run_id: str, failure: dict, *, error_sent: bool) -> list[dict]:
    """The ``error`` (unless the run sent one) and ``finish`` chunks the run did not send."""
    finish = chunk("finish", run_id, {"stepResult": {"reason": "error"}, "output": {"usage": {}},
                                      "metadata": {"request": {}, "response": {}}})
    return [finish] if error_sent else [chunk("error", run_id, {"error": failure}), finish]


def kept_messages(*, signals: list[dict], agent_id: str | None, run_id: str, failure: dict) -> list[dict]:
    """What the thread keeps of the run: the inputs it answered (stored as a run stores them, under
    their own ids: a store replaces what it already holds) and an error entry."""
    inputs = stored_form([render_signal(s) for s in signals])
    return inputs + [error_entry(message_id=new_id(), created_at=now_iso(), agent_id=agent_id, run_id=run_id,
                                 code=failure["code"], reason=failure["message"])]


def failed_record(*, run_id: str, agent_id: str | None, resource_id: str, thread_id: str, started_at: str,
                  failure: dict) -> dict:
    """The run's record, as a run that failed writes it (``ending.record_dict``)."""
    return {"id": run_id, "agent_id": agent_id, "resource_id": resource_id, "thread_id": thread_id,
            "status": "failed", "finish_reason": "error", "usage": {}, "error": failure["message"],
            "error_code": failure["code"], "started_at": started_at, "finished_at": now_iso(), "steps": 0,
            "models": []}


def failed_end(*, active: Any, agent: Any, signals: list[dict], started_at: str, exc: BaseException
               ) -> tuple[list[dict], dict]:
    """Send the run's closing chunks into its thread stream; return its ``(messages, record)`` for
    the end's write. A run that sent an ``error`` before it raised failed of that error: its
    subscribers have seen it, and its record and history say it (one ``error`` a run)."""
    failure = sent_failure(active.error) or failure_of(exc)
    for item in closing_chunks(active.run_id, failure, error_sent=active.error is not None):
        active.emit(item)
    agent_id = getattr(agent, "id", None)
    messages = kept_messages(signals=signals, agent_id=agent_id, run_id=active.run_id, failure=failure)
    record = failed_record(run_id=active.run_id, agent_id=agent_id, resource_id=active.resource_id,
                           thread_id=active.thread_id, started_at=started_at, failure=failure)
    return messages, record


__all__ = ["RUN_FAILED", "failed_end"]
