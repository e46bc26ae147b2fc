"""A schedule's fields as ``mastra.schedules.create`` and ``update`` take them: validation (with
Mastra's messages), id normalization, and the changes an update makes.

Pure functions: the store only persists what they return."""

from __future__ import annotations

import json
import re
import unicodedata
import uuid
from datetime import datetime
from typing import Any

from ..errors import MastraError, SignalError
from ..ids import MAX_AGENT_ID, MAX_RESOURCE_ID, MAX_THREAD_ID, id_check
from ..naming import camel_keys
from ..signal import check_attributes, check_name
from ..threads.inputs import IF_ACTIVE, IF_IDLE, parse_branch
from .cron import cron_check
from .records import (AGENT_SCHEDULE_PREFIX, DEFAULT_MISFIRE_CAP, DEFAULT_MISFIRE_POLICY, MAX_MISFIRE_CAP,
                      MISFIRE_POLICIES, SIGNAL_TYPES, STATUSES, WORKFLOW_SCHEDULE_PREFIX, Schedule, from_ms)

MAX_SCHEDULE_ID = 255
MAX_NAME = 255
#: the fields ``update`` accepts (snake_case); the target (agent, workflow, thread, resource of an
#: agent schedule) is fixed after create, as in Mastra
AGENT_PATCH = ("cron", "timezone", "status", "metadata", "prompt", "name", "signal_type", "tag_name", "attributes",
               "if_active", "if_idle", "provider_options", "misfire_policy", "misfire_cap")
WORKFLOW_PATCH = ("cron", "timezone", "status", "metadata", "input_data", "initial_state", "request_context",
                  "resource_id", "misfire_policy", "misfire_cap")
THREADED_ONLY = (("signal_type", "signalType"), ("if_active", "ifActive"), ("if_idle", "ifIdle"))


class ScheduleError(MastraError):
    """A schedule call was refused (each refusal has its own ``code``; docs/schedules.md)."""

    code = "invalid_schedule"


class ScheduleNotFound(ScheduleError):
    code = "schedule_not_found"


def slugify(text: str) -> str:
    """Mastra's id slug: ASCII, ``camelCase`` split, lower case, runs of other characters → ``-``."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"([a-z\d])([A-Z])", r"\1 \2", text.replace("&", " and ")).lower()
    return re.sub(r"[^a-z\d]+", "-", text).strip("-")


def canonical_id(raw: str, prefix: str) -> str:
    """``<prefix><slug>`` (the prefix added when missing), or ``""`` when nothing slug-able remains."""
    trimmed = raw.strip()
    slug = slugify(trimmed[len(prefix):] if trimmed.startswith(prefix) else trimmed)
    return f"{prefix}{slug}" if slug else ""


def schedule_id_for(raw: str | None, prefix: str) -> str:
    """The id a new schedule gets: ``raw`` normalized, or ``<prefix><uuid>``."""
    if raw is None:
        return f"{prefix}{uuid.uuid4()}"
    if not isinstance(raw, str):
        raise ScheduleError("schedules.create: id must be a string", code="invalid_schedule_id")
    canonical = canonical_id(raw, prefix)
    if not canonical or len(canonical) > MAX_SCHEDULE_ID:
        raise ScheduleError(f'schedules.create: id "{raw}" is empty after normalization. Provide an id with at '
                            "least one alphanumeric character.", code="invalid_schedule_id")
    return canonical


def _json(value: Any, name: str) -> Any:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise ScheduleError(f"{name} must be JSON data", code="invalid_field") from None
    return value


def _dict(value: Any, name: str) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ScheduleError(f"{name} must be an object", code="invalid_field")
    return _json(value, name)


def _text(value: Any, name: str, max_length: int | None = None, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise ScheduleError(f"{name} is required", code="missing_field")
        return None
    if not isinstance(value, str):
        raise ScheduleError(f"{name} must be a string", code="invalid_field")
    if max_length is not None and len(value) > max_length:
        raise ScheduleError(f"{name} must be at most {max_length} characters", code="invalid_field")
    return value


def _branch(value: Any, behaviors: tuple, name: str, wire: str) -> dict | None:
    """``if_active`` / ``if_idle`` checked as the signal API checks them, kept in wire form."""
    if value is None:
        return None
    try:
        parse_branch(value, behaviors, name)
    except SignalError as exc:
        raise ScheduleError(exc.message.replace(name, wire, 1), code=exc.code) from None
    out = camel_keys(value)
    if isinstance(out.get("streamOptions"), dict):
        out["streamOptions"] = camel_keys(out["streamOptions"])
    return _json(out, wire)


def _signal_fields(fields: dict) -> dict:
    """The signal fields of an agent schedule, checked (only those present in ``fields``)."""
    out = {}
    if "signal_type" in fields and fields["signal_type"] is not None:
        if fields["signal_type"] not in SIGNAL_TYPES:
            raise ScheduleError(f"signalType must be one of {', '.join(SIGNAL_TYPES)}", code="invalid_signal_type")
        out["signal_type"] = fields["signal_type"]
    if "tag_name" in fields and fields["tag_name"] is not None:
        try:
            out["tag_name"] = check_name(fields["tag_name"], "tag")
        except SignalError as exc:
            raise ScheduleError(exc.message, code=exc.code) from None
    if "attributes" in fields and fields["attributes"] is not None:
        try:
            out["attributes"] = check_attributes(fields["attributes"])
        except SignalError as exc:
            raise ScheduleError(exc.message, code=exc.code) from None
    if "if_active" in fields:
        out["if_active"] = _branch(fields["if_active"], IF_ACTIVE, "if_active", "ifActive")
    if "if_idle" in fields:
        out["if_idle"] = _branch(fields["if_idle"], IF_IDLE, "if_idle", "ifIdle")
    if "provider_options" in fields:
        out["provider_options"] = _dict(fields["provider_options"], "providerOptions")
    if "prompt" in fields:
        out["prompt"] = _text(fields["prompt"], "prompt")
    if "name" in fields:
        out["name"] = _text(fields["name"], "name", MAX_NAME)
    return out


def _common_fields(fields: dict) -> dict:
    out = {}
    if "status" in fields and fields["status"] is not None:
        if fields["status"] not in STATUSES:
            raise ScheduleError("status must be active or paused", code="invalid_status")
        out["status"] = fields["status"]
    if "metadata" in fields:
        out["metadata"] = _dict(fields["metadata"], "metadata")
    if "misfire_policy" in fields and fields["misfire_policy"] is not None:
        if fields["misfire_policy"] not in MISFIRE_POLICIES:
            raise ScheduleError(f"misfirePolicy must be one of {', '.join(MISFIRE_POLICIES)}",
                                code="invalid_misfire_policy")
        out["misfire_policy"] = fields["misfire_policy"]
    if "misfire_cap" in fields and fields["misfire_cap"] is not None:
        cap = fields["misfire_cap"]
        if not isinstance(cap, int) or isinstance(cap, bool) or not 1 <= cap <= MAX_MISFIRE_CAP:
            raise ScheduleError(f"misfireCap must be a whole number from 1 to {MAX_MISFIRE_CAP}",
                                code="invalid_misfire_cap")
        out["misfire_cap"] = cap
    return out


def schedule_build(fields: dict, *, now_ms: int, created_by: int | None = None) -> Schedule:
    """A new schedule from ``create``'s keyword arguments (snake_case), validated; raises
    :class:`ScheduleError` (Mastra's refusals: ``missing_target``, ``missing_resource_id``,
    ``threadless_options``, ``invalid_schedule_id``; ours: ``invalid_field``, ...) or ``CronError``."""
    agent_id, workflow_id = fields.get("agent_id"), fields.get("workflow_id")
    if agent_id and workflow_id:
        raise ScheduleError("schedules.create takes `agentId` or `workflowId`, not both.", code="ambiguous_target")
    if not agent_id and not workflow_id:
        raise ScheduleError("schedules.create requires `agentId` or `workflowId`.", code="missing_target")
    timezone = _text(fields.get("timezone"), "timezone", 64) or None
    cron = _text(fields.get("cron"), "cron", required=True)
    next_fire = cron_check(cron, timezone, now=from_ms(now_ms))
    common = _common_fields(fields)
    row: dict[str, Any] = dict(cron=cron, timezone=timezone, status=common.get("status", "active"),
                               next_fire_at=int(next_fire.timestamp() * 1000), created_at=now_ms, updated_at=now_ms,
                               metadata=common.get("metadata"),
                               misfire_policy=common.get("misfire_policy", DEFAULT_MISFIRE_POLICY),
                               misfire_cap=common.get("misfire_cap", DEFAULT_MISFIRE_CAP), created_by=created_by)
    if workflow_id:
        id_check(workflow_id, "workflowId", MAX_AGENT_ID)
        agent_only = [wire for name, wire in (("prompt", "prompt"), ("thread_id", "threadId"), *THREADED_ONLY,
                                              ("tag_name", "tagName"), ("attributes", "attributes"))
                      if fields.get(name) is not None]
        if agent_only:
            raise ScheduleError(f"schedules.create: {', '.join(agent_only)} only apply to agent schedules.",
                                code="invalid_workflow_schedule")
        resource_id = fields.get("resource_id")
        if resource_id is not None:
            id_check(resource_id, "resourceId", MAX_RESOURCE_ID)
        return Schedule(id=schedule_id_for(fields.get("id"), WORKFLOW_SCHEDULE_PREFIX), kind="workflow",
                        workflow_id=workflow_id, input_data=_json(fields.get("input_data"), "inputData"),
                        initial_state=_json(fields.get("initial_state"), "initialState"),
                        request_context=_dict(fields.get("request_context"), "requestContext"),
                        resource_id=resource_id, **row)
    id_check(agent_id, "agentId", MAX_AGENT_ID)
    thread_id, resource_id = fields.get("thread_id"), fields.get("resource_id")
    if thread_id and not resource_id:
        raise ScheduleError("schedules.create requires `resourceId` when `threadId` is set.",
                            code="missing_resource_id")
    if not thread_id:
        offenders = [wire for name, wire in (*THREADED_ONLY, ("resource_id", "resourceId"))
                     if fields.get(name) is not None]
        if offenders:
            raise ScheduleError(f"schedules.create: {', '.join(offenders)} require a threadId.",
                                code="threadless_options")
    else:
        id_check(thread_id, "threadId", MAX_THREAD_ID)
        id_check(resource_id, "resourceId", MAX_RESOURCE_ID)
    signal = _signal_fields({**fields, "prompt": _text(fields.get("prompt"), "prompt", required=True)})
    return Schedule(id=schedule_id_for(fields.get("id"), AGENT_SCHEDULE_PREFIX), kind="agent", agent_id=agent_id,
                    thread_id=thread_id or None, resource_id=resource_id or None, **signal, **row)


def schedule_changes(existing: Schedule, patch: dict, *, now_ms: int) -> dict:
    """The fields ``update(patch)`` changes on ``existing`` (snake_case), ``updated_at`` and, when
    the cron or the time zone changes or a paused schedule is resumed, ``next_fire_at`` computed from
    ``now_ms`` (a long pause fires no backlog)."""
    allowed = AGENT_PATCH if existing.kind == "agent" else WORKFLOW_PATCH
    unknown = sorted(set(patch) - set(allowed) - {"thread_id", "resource_id", "agent_id", "workflow_id"})
    if unknown:
        raise ScheduleError(f"schedules.update: {unknown[0]} is not a schedule field", code="invalid_field")
    for name in ("agent_id", "workflow_id", *(("thread_id", "resource_id") if existing.kind == "agent" else ())):
        if name in patch and patch[name] is not None and patch[name] != getattr(existing, name):
            raise ScheduleError(f"schedules.update: {name} is fixed after create; delete the schedule and create "
                                "another to re-target it.", code="schedule_target_fixed")
    patch = {k: v for k, v in patch.items() if k in allowed}
    if existing.kind == "workflow":
        offenders = [k for k in ("prompt", "name", "signal_type", "tag_name", "attributes", "provider_options",
                                 "if_active", "if_idle") if k in patch]
        if offenders:
            raise ScheduleError(f"schedules.update: {', '.join(offenders)} only apply to agent schedules.",
                                code="invalid_workflow_patch")
    elif not existing.thread_id:
        offenders = [wire for name, wire in THREADED_ONLY if patch.get(name) is not None]
        if offenders:
            raise ScheduleError(f"schedules.update: {', '.join(offenders)} require a threadId.",
                                code="threadless_options")
    changes: dict[str, Any] = _common_fields(patch)
    if existing.kind == "agent":
        changes.update({k: v for k, v in _signal_fields(patch).items() if k in patch})
    else:
        for name, wire in (("input_data", "inputData"), ("initial_state", "initialState")):
            if name in patch:
                changes[name] = _json(patch[name], wire)
        if "request_context" in patch:
            changes["request_context"] = _dict(patch["request_context"], "requestContext")
        if patch.get("resource_id") is not None:
            changes["resource_id"] = id_check(patch["resource_id"], "resourceId", MAX_RESOURCE_ID)
    cron = _text(patch.get("cron"), "cron") or existing.cron
    timezone = _text(patch["timezone"], "timezone", 64) or None if "timezone" in patch else existing.timezone
    resuming = changes.get("status") == "active" and existing.status == "paused"
    if "cron" in patch or "timezone" in patch or resuming:
        now = from_ms(now_ms)
        changes.update(cron=cron, timezone=timezone, next_fire_at=_ms(cron_check(cron, timezone, now=now)))
    changes["updated_at"] = now_ms
    return changes


def _ms(value: datetime) -> int:
    return int(value.timestamp() * 1000)
