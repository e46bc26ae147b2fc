"""The thread a request targets, checked against the caller (``agents.access.Caller``): the thread
of the resource the caller acts as, or the thread of a run the caller owns."""

from __future__ import annotations

from .errors import ApiError
from .parsing import optional_str, required_str


async def thread_target(caller, body: dict) -> tuple[str, str]:
    """``(resource_id, thread_id)`` of a body with ``threadId`` (and optional ``resourceId``)."""
    thread_id = required_str(body, "threadId", code="missing_target")
    return await caller.atarget(thread_id, optional_str(body, "resourceId"))


async def input_target(caller, body: dict) -> dict:
    """The target keywords of a send: ``resource_id`` / ``thread_id`` and, or only, ``run_id``
    (a run's thread must be the caller's)."""
    run_id = optional_str(body, "runId")
    if optional_str(body, "threadId") is not None:
        resource_id, thread_id = await thread_target(caller, body)
        return {"resource_id": resource_id, "thread_id": thread_id, "run_id": run_id}
    if run_id is None:
        raise ApiError("give threadId (and resourceId), or runId", code="missing_target")
    thread = await caller.arun_thread(run_id)
    if thread is None:
        return {"run_id": run_id}
    return {"resource_id": thread.resource_id, "thread_id": thread.thread_id, "run_id": run_id}
