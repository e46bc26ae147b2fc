"""A thread input before the store decides on it: its target, its ``if_active`` / ``if_idle``
branches (DESIGN §4), the stream options kept with it, and what a send returns (:class:`SendResult`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import SignalError
from ..naming import snake_keys
from ..redaction import options_for_storage
from ..signal import check_attributes, signal_wire

IF_ACTIVE = ("deliver", "persist", "discard")
IF_IDLE = ("wake", "persist", "discard")


@dataclass
class SendResult:
    """What ``send_message`` / ``queue_message`` / ``send_signal`` / ``send_state_signal`` return."""

    action: str | None
    signal: dict | None = None
    run_id: str | None = None
    output: Any = None
    skipped: bool = False
    reason: str | None = None
    accepted: bool = True

    def to_dict(self) -> dict:
        data = {"accepted": self.accepted, "action": self.action, "runId": self.run_id,
                "signal": signal_wire(self.signal)}
        if self.skipped:
            data.update({"skipped": True, "reason": self.reason})
        elif self.reason is not None:  # ``blocked``: ``thread-blocked``
            data["reason"] = self.reason
        return data


def parse_branch(value: Any, behaviors: tuple, name: str) -> dict:
    """``if_active`` / ``if_idle`` as ``{"behavior", "attributes", "stream_options"}`` (the first of
    ``behaviors`` by default); raises :class:`SignalError` on an unknown key or behavior."""
    if value is None:
        return {"behavior": behaviors[0], "attributes": {}}
    if not isinstance(value, dict):
        raise SignalError(f"{name} must be a dict", code="invalid_options")
    value = snake_keys(value)
    unknown = set(value) - {"behavior", "attributes", "stream_options"}
    if unknown or (name == "if_active" and "stream_options" in value):
        bad = sorted(unknown or {"stream_options"})[0]
        raise SignalError(f"{name}.{bad} is not an option", code="invalid_options")
    behavior = value.get("behavior") or behaviors[0]
    if behavior not in behaviors:
        raise SignalError(f"{name}.behavior must be one of {', '.join(behaviors)}", code="invalid_behavior")
    return {"behavior": behavior, "attributes": check_attributes(value.get("attributes"), f"{name}.attributes"),
            "stream_options": value.get("stream_options")}


def input_branches(*, signal: dict, mode: str, resource_id: str | None, thread_id: str | None, run_id: str | None,
                   if_active: Any, if_idle: Any) -> tuple[dict, dict, dict]:
    """Check an input's target and branches: ``(if_active, if_idle, stream_options)``.

    As in Mastra: ``queue`` (``queue_message``) and ``if_active`` ``persist`` need a thread target;
    ``queue`` always wakes an idle thread, whatever ``if_idle.behavior`` says; a ``transient``
    signal is never stored in the history, so where a branch would persist it, it is discarded."""
    if_active = parse_branch(if_active, IF_ACTIVE, "if_active")
    if_idle = parse_branch(if_idle, IF_IDLE, "if_idle")
    if run_id is not None and not isinstance(run_id, str):
        raise SignalError("run_id must be a string", code="invalid_target")
    if (resource_id is None) != (thread_id is None):
        raise SignalError("resource_id and thread_id go together", code="missing_target")
    if resource_id is None and run_id is None:
        raise SignalError("give run_id, or resource_id and thread_id", code="missing_target")
    for name, value in (("resource_id", resource_id), ("thread_id", thread_id)):
        if value is not None and (not isinstance(value, str) or not value):
            raise SignalError(f"{name} must be a non-empty string", code="missing_target")
    if mode == "queue":
        if resource_id is None or thread_id is None:
            raise SignalError("resourceId and threadId are required to queue a message", code="missing_target")
        if_idle["behavior"] = "wake"
    if resource_id is None and if_active["behavior"] == "persist":
        raise SignalError("resourceId and threadId are required to persist an active signal", code="missing_target")
    if signal.get("transient"):
        for branch in (if_active, if_idle):
            if branch["behavior"] == "persist":
                branch["behavior"] = "discard"
    stream_options = if_idle.get("stream_options") or {}
    if not isinstance(stream_options, dict):
        raise SignalError("if_idle.stream_options must be a dict of generate options", code="invalid_stream_options")
    return if_active, if_idle, stream_options


def storable_options(options: dict) -> dict:
    """Stream options stored with a queued input: JSON only (callables apply in process only; a
    ``structured_output`` is kept without its ``logger``), and no credentials
    (``redaction.options_for_storage``: model keys, headers, URL passwords)."""
    out = {}
    for k, v in options_for_storage(options).items():
        if k in ("structured_output", "structuredOutput") and isinstance(v, dict) and "logger" in v:
            v = {name: value for name, value in v.items() if name != "logger"}
        try:
            json.dumps(v)
        except (TypeError, ValueError):
            continue
        out[k] = v
    return out


__all__ = ["IF_ACTIVE", "IF_IDLE", "SendResult", "input_branches", "parse_branch", "storable_options"]
