"""One fire of a schedule, as Mastra's ``executeAgentSchedule`` runs it: resolve the agent, run the
``prepare`` hook, then send a signal into the thread (threaded) or run ``agent.generate()``
(threadless), and call ``on_finish`` / ``on_error`` / ``on_abort``.

Hooks live on the ``Mastra`` instance: ``Mastra(schedules={"prepare": f, "on_finish": g, "on_error":
h, "on_abort": k})``; each takes one dict and may be sync or async. ``prepare`` returns a dict of
fields merged over the schedule's (``prompt``, ``thread_id``, ``resource_id``, ``signal_type``,
``tag_name``, ``attributes``, ``provider_options``, ``if_active``, ``if_idle``; ``{}`` keeps them) or
None to skip this fire. A hook that raises is logged and never changes the outcome (``prepare``
excepted: the fire fails with its error).

The outcome (:class:`FireResult`) is the trigger row's: ``succeeded`` (a run ended), ``delivered``
(the signal joined an active run), ``persisted``, ``discarded``, ``skipped``, ``aborted`` or ``failed``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import MastraError
from ..run.hooks import maybe_await
from ..run_policy import CHANNEL_KEY
from ..naming import snake_keys
from ..tracing.steps import CHANNEL_KEY, if_idle_with_channel
from .records import Schedule

logger = logging.getLogger(__name__)

EFFECTIVE_KEYS = ("thread_id", "resource_id", "prompt", "signal_type", "tag_name", "attributes", "provider_options",
                  "if_active", "if_idle")
DEFAULT_SIGNAL_TYPE = "notification"
DEFAULT_TAG = "schedule"


@dataclass(frozen=True)
class FireResult:
    """A fire's end: ``outcome`` and ``reason`` go on the trigger row; ``pause_schedule`` asks the
    store to pause a schedule that cannot fire any more (its agent or its thread is gone: Mastra
    deletes such a schedule, this project pauses it and keeps its history)."""

    outcome: str
    run_id: str | None = None
    reason: str | None = None
    pause_schedule: bool = False


def _effective(schedule: Schedule) -> dict:
    return {key: getattr(schedule, key) for key in EFFECTIVE_KEYS}


def _provider_options(effective: dict, schedule_id: str) -> dict:
    base = dict(effective.get("provider_options") or {})
    meta = {"scheduleId": schedule_id, **({"threadId": effective["thread_id"]} if effective.get("thread_id") else {})}
    base["mastra"] = {**(base.get("mastra") or {}), "schedule": meta}
    return base


async def _hook(hooks: dict, name: str, context: dict) -> None:
    hook = hooks.get(name)
    if hook is None:
        return
    try:
        await maybe_await(hook(context))
    except Exception:  # noqa: BLE001 - a hook never re-routes the fire (Mastra's rule)
        logger.exception("schedule hook %s raised; ignored", name)


async def execute_schedule_fire(mastra: Any, schedule: Schedule, *, kind: str, fired_at: datetime,
                                signal_id: str | None = None) -> FireResult:
    """Run one fire of the agent schedule ``schedule``. ``kind`` is ``cron`` or ``manual``;
    ``signal_id`` the id a threaded fire's signal gets (the trigger's: a retried send is refused as a
    duplicate instead of stored twice). Never raises for the agent's errors: they are the result."""
    hooks = mastra.schedule_hooks
    trigger = {"kind": kind, "fired_at": fired_at}
    try:
        agent = mastra.get_agent(schedule.agent_id)
    except MastraError:
        return FireResult("failed", reason=f'agent "{schedule.agent_id}" no longer registered', pause_schedule=True)
    base = {"mastra": mastra, "agent_id": schedule.agent_id, "schedule": schedule, "trigger": trigger}
    effective = _effective(schedule)
    if hooks.get("prepare") is not None:
        try:
            override = await maybe_await(hooks["prepare"](dict(base)))
        except Exception as exc:  # noqa: BLE001 - the user's hook: its error is the fire's
            await _hook(hooks, "on_error", {**base, "phase": "prepare", "error": exc, "effective": effective})
            return FireResult("failed", reason=str(exc) or type(exc).__name__)
        if override is None:
            await _hook(hooks, "on_finish", {**base, "outcome": "skipped", "effective": effective})
            return FireResult("skipped", reason="prepare returned None")
        if not isinstance(override, dict):
            error = MastraError("prepare must return a dict or None", code="invalid_prepare_result")
            await _hook(hooks, "on_error", {**base, "phase": "prepare", "error": error, "effective": effective})
            return FireResult("failed", reason=error.message)
        effective = {**effective, **{k: v for k, v in snake_keys(override).items() if k in EFFECTIVE_KEYS}}
    if effective.get("thread_id"):
        return await _fire_into_thread(agent, schedule, effective, base, hooks, signal_id)
    return await _fire_generate(agent, schedule, effective, base, hooks)


async def _fire_into_thread(agent: Any, schedule: Schedule, effective: dict, base: dict, hooks: dict,
                            signal_id: str | None) -> FireResult:
    async def failed(reason: str, error: Exception | None = None, pause: bool = False) -> FireResult:
        await _hook(hooks, "on_error", {**base, "phase": "run", "error": error or MastraError(reason),
                                        "effective": effective})
        return FireResult("failed", reason=reason, pause_schedule=pause)

    thread_id, resource_id = effective["thread_id"], effective.get("resource_id")
    if not resource_id:
        return await failed("resourceId required when threadId is set")
    try:
        if agent.memory is not None and await agent.memory.get_thread_by_id(
                resource_id=resource_id, thread_id=thread_id) is None:
            return await failed(f'thread "{thread_id}" not found', pause=True)
        signal = {"type": effective.get("signal_type") or DEFAULT_SIGNAL_TYPE,
                  "tag_name": effective.get("tag_name") or DEFAULT_TAG, "contents": effective.get("prompt") or "",
                  "provider_options": _provider_options(effective, schedule.id)}
        if effective.get("attributes"):
            signal["attributes"] = effective["attributes"]
        if signal_id is not None:
            signal["id"] = signal_id
        result = await agent.send_signal(signal, resource_id=resource_id, thread_id=thread_id,
                                         if_active=effective.get("if_active"),
                                         if_idle=if_idle_with_channel(effective.get("if_idle"), "schedule"))
    except Exception as exc:  # noqa: BLE001 - refused or failed: the fire's error
        return await failed(str(exc) or type(exc).__name__, exc)
    outcome = {"deliver": "delivered", "persist": "persisted", "discard": "discarded", "blocked": "skipped"}.get(
        result.action, "succeeded")
    context = {**base, "outcome": outcome, "run_id": result.run_id, "effective": effective}
    if outcome == "delivered":
        context["joined_existing_run"] = True
    await _hook(hooks, "on_finish", context)
    reason = "the thread is held by another agent's suspended run" if result.action == "blocked" else None
    return FireResult(outcome, run_id=result.run_id, reason=reason)


async def _fire_generate(agent: Any, schedule: Schedule, effective: dict, base: dict, hooks: dict) -> FireResult:
    try:
        result = await agent.generate(effective.get("prompt") or "",
                                      provider_options=_provider_options(effective, schedule.id),
                                      request_context={CHANNEL_KEY: "schedule"})
        error = result.error
    except Exception as exc:  # noqa: BLE001 - the run's error is the fire's
        result, error = None, exc
    run_id = getattr(result, "run_id", None)
    if result is not None and result.finish_reason == "abort":
        await _hook(hooks, "on_abort", {**base, "run_id": run_id, "effective": effective})
        return FireResult("aborted", run_id=run_id, reason="the run was aborted")
    if error is not None:
        await _hook(hooks, "on_error", {**base, "phase": "run", "error": error, "run_id": run_id,
                                        "effective": effective})
        return FireResult("failed", run_id=run_id, reason=str(error) or type(error).__name__)
    snapshot = {"text": result.text, "usage": result.usage.camel(), "finish_reason": result.finish_reason}
    await _hook(hooks, "on_finish", {**base, "outcome": "succeeded", "run_id": run_id, "result": snapshot,
                                     "effective": effective})
    return FireResult("succeeded", run_id=run_id)


@dataclass(frozen=True)
class WorkflowFireContext:
    """The ``context`` a scheduled workflow's ``execute(input, context)`` gets."""

    run_id: str
    schedule_id: str
    resource_id: str | None
    initial_state: Any
    request_context: dict


async def execute_workflow_fire(mastra: Any, schedule: Schedule, *, run_id: str) -> FireResult:
    """Run the workflow of ``schedule`` once with its ``input_data`` (to its end)."""
    try:
        workflow = mastra.get_workflow(schedule.workflow_id)
    except MastraError:
        return FireResult("failed", reason=f'workflow "{schedule.workflow_id}" no longer registered',
                          pause_schedule=True)
    context = WorkflowFireContext(run_id=run_id, schedule_id=schedule.id, resource_id=schedule.resource_id,
                                  initial_state=schedule.initial_state, request_context=schedule.request_context or {})
    try:
        await maybe_await(workflow.execute(schedule.input_data if schedule.input_data is not None else {}, context))
    except Exception as exc:  # noqa: BLE001 - the workflow's error is the fire's
        logger.warning("scheduled workflow %s failed", schedule.workflow_id, exc_info=exc)
        return FireResult("failed", run_id=run_id, reason=str(exc) or type(exc).__name__)
    return FireResult("succeeded", run_id=run_id)
