"""Celery tasks of the agents app (thin: each calls one service)."""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from celery import shared_task

from agents.runtime.errors import AgentConfigError
from agents.runtime.threads import get_thread_runtime
from agents.workflows import workflow_outcome, workflow_run_resume

logger = logging.getLogger(__name__)

#: how long a watcher keeps waiting for a canvas (and for the run to be stored as suspended)
WATCH_RETRIES = 3600
WATCH_INTERVAL_S = 1.0
#: how many times a finished workflow tries to resume a run not (yet) stored as suspended on its call
RESUME_ATTEMPTS = 30
RUN_DRAIN_TIMEOUT_S = 600


async def _resume(**kwargs) -> bool:
    resumed = await workflow_run_resume(**kwargs)
    try:  # a thread run continues on this event loop: let it finish before async_to_sync closes it
        runtime = get_thread_runtime()
    except AgentConfigError:  # no thread store in this process: a plain run, already finished
        return resumed
    await runtime.drain_background(timeout=RUN_DRAIN_TIMEOUT_S)
    return resumed


def workflow_watch_step(*, agent_id: str, run_id: str, tool_call_id: str, result, resume_attempts: int) -> str:
    """One look at a workflow: ``"running"`` (look again later), ``"resumed"``, ``"not-suspended"``
    (the run is not stored as suspended on the call yet: try again) or ``"dropped"`` (it never was,
    after ``RESUME_ATTEMPTS`` tries: logged)."""
    outcome = workflow_outcome(result)
    if outcome is None:
        return "running"
    if async_to_sync(_resume)(agent_id=agent_id, run_id=run_id, tool_call_id=tool_call_id, outcome=outcome):
        return "resumed"
    if resume_attempts + 1 >= RESUME_ATTEMPTS:
        logger.error("workflow of run %s ended but the run is not suspended on call %s: result dropped",
                     run_id, tool_call_id)
        return "dropped"
    return "not-suspended"


@shared_task(bind=True, name="agents.workflow_watch", max_retries=WATCH_RETRIES, ignore_result=True)
def workflow_watch(self, *, agent_id: str, run_id: str, tool_call_id: str, result, resume_attempts: int = 0) -> str:
    """Wait for a workflow's canvas, then resume the run suspended on it (the watcher may start
    before the run is stored as suspended: it tries again, at most ``RESUME_ATTEMPTS`` times)."""
    state = workflow_watch_step(agent_id=agent_id, run_id=run_id, tool_call_id=tool_call_id, result=result,
                                resume_attempts=resume_attempts)
    if state in ("running", "not-suspended"):
        raise self.retry(countdown=WATCH_INTERVAL_S, kwargs={
            "agent_id": agent_id, "run_id": run_id, "tool_call_id": tool_call_id, "result": result,
            "resume_attempts": resume_attempts + (state == "not-suspended")})
    return state
