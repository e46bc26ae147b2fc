"""Reads of runs and approvals that the HTTP API needs (writes go through the runtime)."""

from __future__ import annotations

from agents.models import Run, ToolApproval


def pending_approval_run(*, thread_id: str, tool_call_id: str) -> str | None:
    """The id of the run of ``thread_id`` waiting for an approval of ``tool_call_id``, or None."""
    row = (ToolApproval.objects.filter(tool_call_id=tool_call_id, status=ToolApproval.Status.PENDING,
                                       run_id__in=Run.objects.filter(thread_id=thread_id).values("id"))
           .order_by("-created_at").values("run_id").first())
    return row["run_id"] if row else None
