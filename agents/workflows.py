"""Workflows on Celery: a canvas (signature, chain, group, chord) as an agent's workflow.

``celery_workflow(id=..., canvas=..., input_schema=...)`` starts the canvas with the model's input
as its first argument (``canvas.apply_async(args=(input,))``): eagerly in process without a broker
(the embedded default), on the Celery workers with one. The tool call waits up to ``wait_s`` for
the result. A canvas that takes longer suspends the call (the run ends ``suspended``, a thread run
keeps its thread) and the task ``agents.workflow_watch`` waits for the result on a worker and
resumes the run with it (:func:`workflow_run_resume`); the suspended run is stored, so a restart of
the web process loses nothing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from celery import current_app
from celery.exceptions import TimeoutError as CeleryTimeout
from celery.result import result_from_tuple

from agents.registry import get_mastra
from agents.runtime.errors import ToolApprovalError
from agents.runtime.tools import strict_json, to_jsonable
from agents.runtime.workflows import WORKFLOW_TIMEOUT_S, Workflow

logger = logging.getLogger(__name__)

#: how long a call waits for its canvas before it suspends the run (seconds)
DEFAULT_WAIT_S = 20.0
RESUME_SCHEMA = {"type": "object", "properties": {"result": {}, "error": {"type": "string"}}}


class WorkflowFailed(Exception):
    """The canvas failed (the model sees the message as the tool's error)."""


def _json(value: Any) -> Any:
    try:
        return strict_json(to_jsonable(value))
    except ValueError:
        return repr(value)


def celery_workflow(*, id: str, canvas: Any, input_schema: Any = None, description: str = "",
                    wait_s: float = DEFAULT_WAIT_S, timeout_s: float = WORKFLOW_TIMEOUT_S) -> Workflow:
    """A workflow that runs the Celery ``canvas`` (see the module docstring)."""
    if not hasattr(canvas, "apply_async"):
        raise TypeError("canvas must be a Celery signature, chain, group or chord")

    async def execute(input: Any, context: Any) -> Any:
        if context.resume_data is not None:  # the watcher handed the result back
            if context.resume_data.get("error"):
                raise WorkflowFailed(context.resume_data["error"])
            return context.resume_data.get("result")
        result = None
        try:  # eagerly (no broker) the canvas runs, and may fail, inside apply_async
            result = await asyncio.to_thread(canvas.apply_async, args=(to_jsonable(input),))
            value = await asyncio.to_thread(result.get, timeout=wait_s, disable_sync_subtasks=False)
        except CeleryTimeout:
            workflow_watch_start(agent_id=context.agent_id, run_id=context.run_id,
                                 tool_call_id=context.tool_call_id, result=result.as_tuple())
            return context.suspend({"workflowId": id, "taskId": result.id, "status": "running"})
        except Exception as exc:
            raise WorkflowFailed(f"workflow {id!r} failed: {type(exc).__name__}: {exc}") from None
        return _json(value)

    return Workflow(id=id, execute=execute, description=description, input_schema=input_schema,
                    resume_schema=RESUME_SCHEMA, timeout_s=timeout_s)


def workflow_watch_start(*, agent_id: str, run_id: str, tool_call_id: str, result: Any) -> None:
    """Ask a worker to wait for the canvas ``result`` (``AsyncResult.as_tuple()``) and resume the run."""
    current_app.send_task("agents.workflow_watch", kwargs={
        "agent_id": agent_id, "run_id": run_id, "tool_call_id": tool_call_id, "result": result}, countdown=0.2)


def workflow_outcome(result: Any) -> dict | None:
    """``{"result": value}`` or ``{"error": message}`` once the canvas is done, else None."""
    async_result = result_from_tuple(result, app=current_app)
    if not async_result.ready():
        return None
    try:
        return {"result": _json(async_result.get(disable_sync_subtasks=False, propagate=True))}
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


async def workflow_run_resume(*, agent_id: str, run_id: str, tool_call_id: str, outcome: dict) -> bool:
    """Resume the run suspended on a workflow call with its outcome; False when the run is not (yet)
    stored as suspended on that call (the watcher tries again)."""
    agent = get_mastra().get_agent(agent_id)
    try:
        output = await agent.resume_stream(outcome, run_id=run_id, tool_call_id=tool_call_id)
    except ToolApprovalError as exc:
        if exc.code in ("approval_not_found", "approval_stale"):
            return False
        raise
    await output.get_full_output()
    return True


__all__ = ["DEFAULT_WAIT_S", "WorkflowFailed", "celery_workflow", "workflow_outcome", "workflow_run_resume",
           "workflow_watch_start"]
