"""Resuming a run suspended by one of its tools (``context.suspend(payload)``) with the caller's data."""

from __future__ import annotations

from typing import Any

from ..errors import MastraError, ToolApprovalError
from ..storage import get_run_store
from ..tools import ToolValidationError
from .approvals import resume_output, resume_parts


class ResumeDataError(MastraError):
    """The resume data does not match the suspended tool's ``resume_schema`` (the run stays suspended)."""

    code = "resume_data_invalid"


async def resume_tool_output(agent: Any, resume_data: Any, *, run_id: str, tool_call_id: str | None,
                             options: dict):
    """Claim the run suspended by a tool, check ``resume_data`` against the tool's resume schema and
    continue the run (the tool runs again with ``context.resume_data``).

    A run waiting on an approval, or data that fails the schema, raises (:class:`ToolApprovalError`
    ``approval_required`` / :class:`ResumeDataError`) and leaves the run suspended as it was."""
    store = get_run_store()
    if tool_call_id is None:
        pending = await store.pending_approvals(run_id=run_id)
        if not pending:
            raise ToolApprovalError(f"no run is suspended under run id {run_id!r}", code="approval_not_found")
        tool_call_id = pending[0]["tool_call_id"]
    parts = await resume_parts(agent, run_id, tool_call_id, "resumed", options)
    state = parts["suspended_state"]
    original = {**state, "decisions": {k: v for k, v in state["decisions"].items() if v != "resumed"}}
    suspension = state.get("suspension") or {}
    call = next((c for c in state["pending_calls"] if c["payload"]["toolCallId"] == tool_call_id), None)

    async def keep_suspended() -> None:
        await store.save_suspended(run_id=run_id, agent_id=agent.id, tool_call_id=tool_call_id,
                                   tool_name=call["payload"]["toolName"], args=call["payload"]["args"],
                                   state=original)

    if suspension.get("tool_call_id") != tool_call_id or call is None:
        if call is not None:
            await keep_suspended()
        raise ToolApprovalError(f"run {run_id!r} waits for an approval of {tool_call_id!r}, not for resume data "
                                "(approve or decline it)", code="approval_required")
    tool = parts["tools"].get(call["payload"]["toolName"])
    if tool is not None and tool.resume_schema is not None:
        try:
            resume_data = tool.resume_schema.validate(resume_data)
        except ToolValidationError as exc:
            await keep_suspended()
            raise ResumeDataError(f"resume data for {call['payload']['toolName']!r} is invalid: {exc}") from None
    parts["suspended_state"] = {**original, "resume_data": {tool_call_id: resume_data}}
    return await resume_output(agent, run_id, tool_call_id, "resumed", options, parts=parts)


__all__ = ["ResumeDataError", "resume_tool_output"]
