"""Reads of runs and approvals that the HTTP API needs (writes go through the runtime)."""

from __future__ import annotations

from agents.models import Run, ToolApproval


def run_id_taken(run_id: str) -> bool:
    """Whether a run (or a pending approval) already uses ``run_id``."""
    return Run.objects.filter(pk=run_id).exists() or ToolApproval.objects.filter(run_id=run_id).exists()


def pending_approval_run(*, key: str, tool_call_id: str) -> str | None:
    """The id of the run of the thread ``key`` waiting for an approval of ``tool_call_id``, or None."""
    row = (ToolApproval.objects.filter(tool_call_id=tool_call_id, status=ToolApproval.Status.PENDING,
                                       run_id__in=Run.objects.filter(thread_id=key).values("id"))
           .order_by("-created_at").values("run_id").first())
    return row["run_id"] if row else None
