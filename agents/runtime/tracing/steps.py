"""Model steps as records, for whoever keeps accounts of them (the cost ledger).

After each model step that a model answered, and after each other model call made for a run (the
title of its thread, :mod:`agents.runtime.agent.title`), every observer registered with
:func:`add_step_observer` is called with one record (a plain dict, on the run's event loop):

``kind`` (``step``: a step of the run; ``title``: its thread's title, asked after the run), ``run_id``, ``agent_id``, ``editor_version`` (the stored version the run used, else None),
``resource_id`` and ``thread_id`` (the run's memory thread; for a run without memory the resource
its caller named, ``request_context["mastra__resourceId"]``), ``channel`` (what started the run:
``request_context["mastra__channel"]``, see :data:`CHANNELS`; None when unknown), ``provider`` and
``model`` (the model that answered this step: a fallback chain may change it), ``step_number``
(a title's: the number of steps of its run),
``usage`` (the step's token counts in camelCase as the provider reported them, or None when it
reported none: unknown, not zero), ``latency_ms`` (from the request to the end of the answer,
retries and fallbacks included) and ``at`` (the step's end, an aware UTC datetime).

An observer must return at once (queue the record; never wait for I/O): it runs on the caller's
path. An observer that raises is logged and the run goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from ..providers.chain import label_parts

logger = logging.getLogger(__name__)

#: the request context key that names what started a run
CHANNEL_KEY = "mastra__channel"
#: the channels the site's entry points name
CHANNELS = ("chat", "api", "slack", "github", "webhook", "schedule")
#: the request context key of a run without memory's resource (as ``run.ending.RESOURCE_ID_KEY``)
RESOURCE_KEY = "mastra__resourceId"

_observers: list[Callable[[dict], Any]] = []


def add_step_observer(observer: Callable[[dict], Any]) -> Callable[[dict], Any]:
    """Call ``observer(record)`` after every answered model step (returns it, to remove it later)."""
    if observer not in _observers:
        _observers.append(observer)
    return observer


def remove_step_observer(observer: Callable[[dict], Any]) -> None:
    if observer in _observers:
        _observers.remove(observer)


def with_channel(options: dict | None, channel: str) -> dict:
    """``options`` (generate or stream options, snake_case) whose request context names ``channel``
    as what started the run."""
    options = dict(options or {})
    context = options.get("request_context")
    options["request_context"] = {**(context if isinstance(context, dict) else {}), CHANNEL_KEY: channel}
    return options


def if_idle_with_channel(if_idle: dict | None, channel: str) -> dict:
    """An input's ``if_idle`` branch whose stream options (those of the run the input may start,
    stored with it) name ``channel``. A branch that is not a dict (or whose stream options are not)
    is left as it is, for the input's own checks to refuse."""
    if if_idle is not None and not isinstance(if_idle, dict):
        return if_idle
    branch = dict(if_idle or {})
    key = "streamOptions" if "streamOptions" in branch else "stream_options"
    if branch.get(key) is not None and not isinstance(branch[key], dict):
        return branch
    branch[key] = with_channel(branch.get(key), channel)
    return branch


def step_observed(run: Any, step: Any, latency_s: float) -> None:
    """Tell the observers about ``step`` of ``run`` (see the module docstring)."""
    if _observers:
        call_observed(run, kind="step", model=step.model or "", step_number=step.step_number,
                      usage=step.usage.camel() if getattr(step, "usage_reported", True) else None,
                      latency_s=latency_s)


def call_observed(run: Any, *, kind: str, model: str, step_number: int, usage: dict | None,
                  latency_s: float) -> None:
    """Tell the observers about a model call of ``run``: ``kind`` (module docstring), ``model`` the
    label of the model that answered (``provider/model``), ``usage`` in camelCase (None: none
    reported)."""
    if not _observers:
        return
    context = run.request_context if isinstance(run.request_context, dict) else {}
    memory = run.memory or {}
    provider, model_id = label_parts(model)
    channel = context.get(CHANNEL_KEY)
    owner = context.get(RESOURCE_KEY)
    record = {
        "kind": kind, "run_id": run.run_id, "agent_id": getattr(run.agent, "id", None) or "",
        "editor_version": getattr(run, "editor_version", None),
        "resource_id": memory.get("resource_id") or (owner if isinstance(owner, str) else None),
        "thread_id": memory.get("thread_id"),
        "channel": channel if isinstance(channel, str) else None,
        "provider": provider, "model": model_id, "step_number": step_number, "usage": usage,
        "latency_ms": max(int(latency_s * 1000), 0), "at": datetime.now(timezone.utc),
    }
    for observer in list(_observers):
        try:
            observer(record)
        except Exception:  # noqa: BLE001 - bookkeeping never breaks a run
            logger.exception("step observer %r failed on run %s", observer, run.run_id)


__all__ = ["CHANNELS", "CHANNEL_KEY", "add_step_observer", "call_observed", "if_idle_with_channel", "remove_step_observer",
           "step_observed", "with_channel"]
