"""Deciding a pending tool approval from outside the run's caller (the admin's actions).

One service: :func:`approval_decide` continues the suspended run through its agent's API
(``approve_tool_call`` / ``decline_tool_call``), exactly as the caller would, and waits for the
continuation to end. A thread run continues under the thread's lease (its subscribers see it).
"""

from __future__ import annotations

from asgiref.sync import async_to_sync

from agents.models import ToolApproval
from agents.registry import get_mastra
from agents.runtime.errors import MastraError

DECISIONS = ("approved", "declined")


def approval_decide(*, approval_id: int, decision: str) -> str:
    """Approve or decline the pending approval ``approval_id``; returns the run's finish reason.
    Raises :class:`MastraError` (``approval_not_found``, ``approval_stale``, ``agent_not_found``)."""
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {DECISIONS}")
    approval = ToolApproval.objects.filter(pk=approval_id).first()
    if approval is None or approval.status != ToolApproval.Status.PENDING:
        raise MastraError(f"approval {approval_id} is not pending", code="approval_stale")
    agent = get_mastra().get_agent(approval.agent_id)
    method = agent.approve_tool_call if decision == "approved" else agent.decline_tool_call

    async def decide() -> str:
        output = await method(run_id=approval.run_id, tool_call_id=approval.tool_call_id)
        result = await output.get_full_output()
        return result.finish_reason

    return async_to_sync(decide)()


__all__ = ["DECISIONS", "approval_decide"]
