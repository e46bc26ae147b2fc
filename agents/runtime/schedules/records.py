"""A schedule and a fire of it (a trigger) as the runtime and its store exchange them, and their
wire form (Mastra's flat ``AgentSchedule`` / ``WorkflowSchedule`` and ``ScheduleTrigger`` views).

Times are milliseconds since the epoch, as on Mastra's wire."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

#: schedule id prefixes (Mastra's): ``mastra.schedules.create(agent_id=...)``, ``(workflow_id=...)``
AGENT_SCHEDULE_PREFIX = "agent_"
WORKFLOW_SCHEDULE_PREFIX = "schedule_"
STATUSES = ("active", "paused")
SIGNAL_TYPES = ("user", "state", "reactive", "notification", "user-message", "system-reminder")
#: what happens to fires that fell due while no scheduler ran (docs/schedules.md)
MISFIRE_POLICIES = ("skip", "once", "all")
DEFAULT_MISFIRE_POLICY = "once"
DEFAULT_MISFIRE_CAP = 10
MAX_MISFIRE_CAP = 1000
#: a trigger's outcome: ``claimed`` and ``running`` while in flight (ours), then Mastra's
FINAL_OUTCOMES = ("succeeded", "delivered", "persisted", "discarded", "skipped", "aborted", "failed")
OUTCOMES = ("claimed", "running", *FINAL_OUTCOMES)
TRIGGER_KINDS = ("schedule-fire", "manual")


def to_ms(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)


def from_ms(value: int | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value / 1000, tz=timezone.utc)


@dataclass(frozen=True)
class Schedule:
    """One schedule. ``kind`` is ``agent`` (``agent_id``, ``prompt``...) or ``workflow``
    (``workflow_id``, ``input_data``...). ``created_by``: the id of the user who created it over
    HTTP or in the admin (None from code); it decides who sees a threadless schedule."""

    id: str
    kind: str
    cron: str
    status: str
    next_fire_at: int
    created_at: int
    updated_at: int
    agent_id: str | None = None
    workflow_id: str | None = None
    prompt: str | None = None
    name: str | None = None
    thread_id: str | None = None
    resource_id: str | None = None
    timezone: str | None = None
    signal_type: str | None = None
    tag_name: str | None = None
    attributes: dict | None = None
    provider_options: dict | None = None
    if_active: dict | None = None
    if_idle: dict | None = None
    input_data: Any = None
    initial_state: Any = None
    request_context: dict | None = None
    metadata: dict | None = None
    last_fire_at: int | None = None
    last_run_id: str | None = None
    last_outcome: str | None = None
    misfire_policy: str = DEFAULT_MISFIRE_POLICY
    misfire_cap: int = DEFAULT_MISFIRE_CAP
    created_by: int | None = None

    def to_dict(self) -> dict:
        """Mastra's flat view (its key order; absent values left out), then ours: ``misfirePolicy``,
        ``misfireCap`` and ``lastOutcome``."""
        def put(out: dict, key: str, value: Any) -> None:
            if value is not None:
                out[key] = value

        out: dict = {"id": self.id}
        if self.kind == "agent":
            out["agentId"] = self.agent_id
            put(out, "name", self.name)
            put(out, "threadId", self.thread_id or None)
            put(out, "resourceId", self.resource_id or None)
            out["prompt"] = self.prompt or ""
        else:
            out["workflowId"] = self.workflow_id
        out["cron"] = self.cron
        put(out, "timezone", self.timezone or None)
        out["status"] = self.status
        out["nextFireAt"] = self.next_fire_at
        put(out, "lastFireAt", self.last_fire_at)
        put(out, "lastRunId", self.last_run_id or None)
        if self.kind == "agent":
            put(out, "signalType", self.signal_type or None)
            put(out, "tagName", self.tag_name or None)
            put(out, "attributes", self.attributes)
            put(out, "providerOptions", self.provider_options)
            put(out, "ifActive", self.if_active)
            put(out, "ifIdle", self.if_idle)
        else:
            put(out, "inputData", self.input_data)
            put(out, "initialState", self.initial_state)
            put(out, "requestContext", self.request_context)
            put(out, "resourceId", self.resource_id or None)
        put(out, "metadata", self.metadata)
        out["createdAt"] = self.created_at
        out["updatedAt"] = self.updated_at
        out["misfirePolicy"] = self.misfire_policy
        out["misfireCap"] = self.misfire_cap
        put(out, "lastOutcome", self.last_outcome)
        return out


@dataclass(frozen=True)
class Trigger:
    """One fire of a schedule: claimed by its row (unique per schedule and scheduled fire time for
    cron fires) before it runs. ``claim_id`` is Mastra's (``sched_<id>_<ms>``, ``manual_<id>_<ms>``);
    ``run_id`` the agent run it started, when there is one."""

    id: str
    schedule_id: str
    claim_id: str
    scheduled_fire_at: int
    actual_fire_at: int
    outcome: str
    trigger_kind: str
    run_id: str | None = None
    error: str | None = None
    metadata: dict = field(default_factory=dict)
    finished_at: int | None = None

    def to_dict(self) -> dict:
        """Mastra's ``ScheduleTrigger`` (``runId``: the run, else the claim id)."""
        out: dict = {"id": self.id, "scheduleId": self.schedule_id, "runId": self.run_id or self.claim_id,
                     "scheduledFireAt": self.scheduled_fire_at, "actualFireAt": self.actual_fire_at,
                     "outcome": self.outcome, "triggerKind": self.trigger_kind}
        if self.error:
            out["error"] = self.error
        if self.metadata:
            out["metadata"] = self.metadata
        return out


@dataclass(frozen=True)
class ScheduleFilter:
    """``mastra.schedules.list`` filters (each None: any)."""

    agent_id: str | None = None
    workflow_id: str | None = None
    status: str | None = None
    thread_id: str | None = None
    resource_id: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class RunReceipt:
    """What ``mastra.schedules.run`` returns (Mastra's ``{scheduleId, claimId, scheduledFireAt}``)."""

    schedule_id: str
    claim_id: str
    scheduled_fire_at: int
    trigger_id: str

    def to_dict(self) -> dict:
        return {"scheduleId": self.schedule_id, "claimId": self.claim_id, "scheduledFireAt": self.scheduled_fire_at}
