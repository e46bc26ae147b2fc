"""Tools that suspend themselves: ``context.suspend(payload)`` ends the run ``suspended`` with a
``tool-call-suspended`` chunk; the stored run continues when the caller resumes it with data
(``Agent.resume_generate``), or a later run of the thread resumes the call from the user's next
message (``auto_resume_suspended_tools``).

A suspended call's tool-call part, as saved in the thread, carries ``suspended: {"runId",
"suspendPayload", "resumeSchema"}``: an auto-resuming run finds the open ones there, tells the model
about them (as Mastra does, in the system message) and, when the model calls the tool again with
``resumeData`` and ``suspendedToolCallId`` in its arguments, validates the data, claims the stored
suspension (it can be resumed once) and runs the tool with ``context.resume_data``.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ToolApprovalError
from ..tools import ToolValidationError
from . import ending, resume_state

RESUME_KEYS = ("resumeData", "suspendedToolCallId", "suspendedToolRunId")


def suspension_info(run: Any, call: dict, payload: Any) -> dict:
    """What is known of a suspended call: payload and resume schema (JSON Schema or None)."""
    tool = run.tools.get(call["payload"]["toolName"])
    schema = tool.resume_schema.json_schema if tool is not None and tool.resume_schema is not None else None
    return {"runId": run.run_id, "suspendPayload": payload, "resumeSchema": schema}


async def suspend_tool(run: Any, call: dict, payload: Any) -> None:
    """Stop the run on ``call``, which suspended itself: chunk, saved messages, stored state."""
    p = call["payload"]
    info = suspension_info(run, call, payload)
    run.finish_reason = "suspended"
    run.steps[-1].finish_reason = "suspended"
    run.suspension = {"tool_call_id": p["toolCallId"], **info}
    run.suspend_payload = {"tool_call_id": p["toolCallId"], "tool_name": p["toolName"], "args": p["args"],
                           "suspend_payload": payload, "resume_schema": info["resumeSchema"]}
    chunk = {"toolCallId": p["toolCallId"], "toolName": p["toolName"], "suspendPayload": payload}
    if info["resumeSchema"] is not None:
        chunk["resumeSchema"] = info["resumeSchema"]
    await run.send(run.chunk("tool-call-suspended", chunk))
    for message in run.response_messages:  # mark the call where the thread keeps it
        if message.get("role") == "assistant" and isinstance(message.get("content"), list):
            for part in message["content"]:
                if part.get("type") == "tool-call" and part.get("toolCallId") == p["toolCallId"]:
                    part["suspended"] = info
    await ending.save_memory(run)
    if run.run_store is not None:
        await run.run_store.save_suspended(run_id=run.run_id, agent_id=getattr(run.agent, "id", None),
                                           tool_call_id=p["toolCallId"], tool_name=p["toolName"],
                                           args=p["args"], state=resume_state.to_state(run))


def open_suspensions(history: list[dict]) -> list[dict]:
    """The suspended tool calls of a thread's history that no later tool result answers."""
    answered = {part.get("toolCallId") for m in history if m.get("role") == "tool"
                for part in (m.get("content") or []) if isinstance(part, dict)}
    found = []
    for message in history:
        if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
            continue
        for part in message["content"]:
            if part.get("type") == "tool-call" and part.get("suspended") and part["toolCallId"] not in answered:
                found.append({"toolCallId": part["toolCallId"], "toolName": part["toolName"], "args": part.get("args"),
                              **part["suspended"]})
    return found


def auto_resume_instructions(open_calls: list[dict]) -> str:
    """The system text that lets the model resume suspended calls from the user's message."""
    return ("Suspended tool calls are waiting for data from the user: " + json.dumps(open_calls)
            + "\nWhen the user's messages give the data one of them needs (matching its resumeSchema), call that "
              "tool again with its previous arguments plus \"resumeData\" (the data, never empty) and "
              "\"suspendedToolCallId\" (the toolCallId of the suspended call).")


async def auto_resume_args(run: Any, name: str, args: Any) -> tuple[Any, Any]:
    """For a call that resumes a suspended one: ``(args without the resume keys, resume data)``
    after validating the data and claiming the suspension; ``(args, None)`` for any other call.
    Raises :class:`ToolValidationError` (the model sees it) when the data or the target is wrong."""
    if not isinstance(args, dict) or "suspendedToolCallId" not in args:
        return args, None
    target = next((c for c in run.resumable if c["toolCallId"] == args["suspendedToolCallId"]), None)
    if target is None or target["toolName"] != name:
        raise ToolValidationError(f"no suspended call {args['suspendedToolCallId']!r} of tool {name!r} to resume")
    data = args.get("resumeData")
    if data in (None, {}, ""):
        raise ToolValidationError("resumeData is required to resume a suspended call")
    tool = run.tools[name]
    if tool.resume_schema is not None:
        data = tool.resume_schema.validate(data)
    try:
        await run.run_store.claim_suspended(run_id=target["runId"], tool_call_id=target["toolCallId"],
                                            decision="resumed")
    except ToolApprovalError as exc:
        raise ToolValidationError(f"the suspended call cannot be resumed: {exc.message}") from None
    run.resumable = [c for c in run.resumable if c is not target]
    return {k: v for k, v in args.items() if k not in RESUME_KEYS}, data


__all__ = ["RESUME_KEYS", "auto_resume_args", "auto_resume_instructions", "open_suspensions", "suspend_tool",
           "suspension_info"]
