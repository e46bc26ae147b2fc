"""Tool payload transforms: what display streams and transcripts show of tool payloads, while the
model sees the real ones.

Two targets: ``display`` (the chunks a run emits: ``on_chunk``, ``stream()``, thread subscribers,
``result.tool_calls`` / ``tool_results`` keep the real payloads) and ``transcript`` (the messages
saved to memory; a later turn reads them back, so the model of a later turn sees the transcript).
Phases: ``input-available`` (a call's args), ``approval`` (args of a call waiting for approval),
``output-available`` (a result), ``error`` (a tool error or a result with ``isError``) and
``suspend`` (a suspended call's payload).

- the agent's ``transform={"transform_tool_payload": f, "targets": ["display", "transcript"]}``
  (all targets when ``targets`` is missing) applies to every tool;
- a tool's ``create_tool(transform={"display": {"input": f, "output": f, "error": f, "approval": f,
  "suspend": f}, "transcript": {...}})`` applies to that tool.

``f(ctx)`` (sync or async) gets ``{"target", "phase", "tool_name", "tool_call_id", "input", "output",
"error", "suspend_payload", "request_context"}`` and returns the payload to show. As in Mastra, the
agent's policy runs first, then the tool's; the first value that is not None is shown; once a target
is configured for a tool, a payload nothing transformed (or whose transform raised) is shown as
``{"message": "Tool <phase> payload unavailable"}`` — never the real one.
"""

from __future__ import annotations

import copy
import inspect
import logging
from typing import Any, Awaitable, Callable

from .errors import AgentConfigError
from .naming import snake_keys

logger = logging.getLogger(__name__)

TARGETS = ("display", "transcript")
PHASE_KEYS = {"input-available": "input", "output-available": "output", "error": "error", "approval": "approval",
              "suspend": "suspend"}


def transform_policy_check(value: Any, field: str) -> dict | None:
    """The agent's ``transform`` policy, snake_case; raises :class:`AgentConfigError`."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise AgentConfigError(field, "must be {'transform_tool_payload': callable, 'targets': [...]}")
    value = snake_keys(value)
    if set(value) - {"transform_tool_payload", "targets"}:
        raise AgentConfigError(f"{field}.{sorted(set(value) - {'transform_tool_payload', 'targets'})[0]}", "unknown key")
    if not callable(value.get("transform_tool_payload")):
        raise AgentConfigError(f"{field}.transform_tool_payload", "must be callable")
    targets = value.get("targets")
    if targets is not None and (not isinstance(targets, (list, tuple)) or set(targets) - set(TARGETS)):
        raise AgentConfigError(f"{field}.targets", "must be a list of 'display' and/or 'transcript'")
    return value


def tool_transform_check(value: Any, field: str) -> dict | None:
    """A tool's ``transform`` (per target, per phase); raises :class:`AgentConfigError`."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - set(TARGETS):
        raise AgentConfigError(field, "must be {'display': {...}, 'transcript': {...}}")
    for target, config in value.items():
        if not isinstance(config, dict):
            raise AgentConfigError(f"{field}.{target}", "must be a dict of {phase: callable}")
        for phase, func in config.items():
            if phase not in PHASE_KEYS.values():
                raise AgentConfigError(f"{field}.{target}.{phase}", "unknown phase (input, output, error, approval, suspend)")
            if not callable(func):
                raise AgentConfigError(f"{field}.{target}.{phase}", "must be callable")
    return value


def _policy_applies(policy: dict | None, target: str) -> bool:
    return bool(policy) and (policy.get("targets") is None or target in policy["targets"])


def configured(policy: dict | None, tool: Any, target: str) -> bool:
    return _policy_applies(policy, target) or bool((getattr(tool, "transform", None) or {}).get(target))


async def payload_for(policy: dict | None, tool: Any, target: str, phase: str, ctx: dict) -> tuple[bool, Any]:
    """``(True, shown payload)`` when ``target`` is configured for ``tool``, else ``(False, None)``."""
    if not configured(policy, tool, target):
        return False, None
    funcs = []
    if _policy_applies(policy, target):
        funcs.append(policy["transform_tool_payload"])
    own = ((getattr(tool, "transform", None) or {}).get(target) or {}).get(PHASE_KEYS[phase])
    if own is not None:
        funcs.append(own)
    context = {"target": target, "phase": phase, **ctx}
    for func in funcs:
        try:
            value = func(context)
            if inspect.isawaitable(value):
                value = await value
        except Exception:
            logger.warning("tool payload transform of %s failed (%s, %s)", ctx.get("tool_name"), target, phase,
                           exc_info=True)
            break
        if value is not None:
            return True, value
    return True, {"message": f"Tool {phase} payload unavailable"}


_CHUNK_FIELDS = {"tool-call": ("input-available", "args"), "tool-call-approval": ("approval", "args"),
                 "tool-result": ("output-available", "result"), "tool-error": ("error", "error"),
                 "tool-call-suspended": ("suspend", "suspendPayload")}
_CTX_KEY = {"args": "input", "result": "output", "error": "error", "suspendPayload": "suspend_payload"}


async def display_chunk(run: Any, chunk: dict) -> dict:
    """``chunk`` as displays see it (a copy when a transform applies; the run keeps the original).
    A payload a transform changed is also kept in ``run.displayed`` by ``(chunk type, toolCallId)``:
    the result's UI messages show it (:func:`displayed_messages`)."""
    spec = _CHUNK_FIELDS.get(chunk.get("type"))
    if spec is None:
        return chunk
    payload = chunk["payload"]
    phase, key = spec
    if chunk["type"] == "tool-result" and payload.get("isError"):
        phase = "error"
    tool = run.tools.get(payload.get("toolName"))
    changed, shown = await payload_for(getattr(run.agent, "transform", None), tool, "display", phase, {
        "tool_name": payload.get("toolName"), "tool_call_id": payload.get("toolCallId"),
        _CTX_KEY[key]: payload.get(key), "request_context": run.request_context})
    if not changed:
        return chunk
    shown_payload = run.displayed[chunk["type"], payload.get("toolCallId")] = {**payload, key: shown}
    return {**chunk, "payload": shown_payload}


async def _tool_parts_rewritten(messages: list[dict], rewrite: Callable[[dict, str], Awaitable[dict]]) -> list[dict]:
    """``messages`` with each ``tool-call`` / ``tool-result`` part of their assistant and tool
    messages through ``await rewrite(part, kind)`` (copies of the messages it touches)."""
    out = []
    for message in messages:
        content = message.get("content")
        if message.get("role") not in ("assistant", "tool") or not isinstance(content, list):
            out.append(message)
            continue
        parts = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            parts.append(await rewrite(part, kind) if kind in ("tool-call", "tool-result") else part)
        out.append({**message, "content": parts})
    return out


async def transcript_messages(run: Any, messages: list[dict]) -> list[dict]:
    """``messages`` as memory keeps them: tool-call args and tool results through the transcript
    transforms (copies; the run's own messages keep the real payloads)."""
    policy = getattr(run.agent, "transform", None)
    if not policy and not any(getattr(t, "transform", None) for t in run.tools.values()):
        return messages

    async def rewrite(part: dict, kind: str) -> dict:
        key = "args" if kind == "tool-call" else "result"
        phase = "input-available" if kind == "tool-call" else ("error" if part.get("isError") else "output-available")
        changed, shown = await payload_for(policy, run.tools.get(part.get("toolName")), "transcript", phase, {
            "tool_name": part.get("toolName"), "tool_call_id": part.get("toolCallId"),
            _CTX_KEY[key]: part.get(key), "request_context": run.request_context})
        return {**part, key: copy.deepcopy(shown)} if changed else part

    return await _tool_parts_rewritten(messages, rewrite)


async def displayed_messages(messages: list[dict], shown: dict[tuple[str, Any], dict]) -> list[dict]:
    """``messages`` (a run's answers) with the tool payloads its display chunks showed: ``shown``
    maps ``(chunk type, toolCallId)`` to the payload of the ``tool-call``, ``tool-result`` or
    ``tool-error`` chunk a display transform changed (copies; the transforms are not run again)."""

    async def rewrite(part: dict, kind: str) -> dict:
        call_id = part.get("toolCallId")
        if kind == "tool-call" and ("tool-call", call_id) in shown:
            return {**part, "args": shown["tool-call", call_id]["args"]}
        if part.get("isError") and ("tool-error", call_id) in shown:
            return {**part, "result": shown["tool-error", call_id]["error"]}
        if kind == "tool-result" and ("tool-result", call_id) in shown:
            return {**part, "result": shown["tool-result", call_id]["result"]}
        return part

    return await _tool_parts_rewritten(messages, rewrite)


def transforming(run: Any) -> bool:
    """Whether any display transform may apply to ``run``'s chunks."""
    return bool(getattr(run.agent, "transform", None)) or any(getattr(t, "transform", None) for t in run.tools.values())


__all__ = ["PHASE_KEYS", "TARGETS", "display_chunk", "displayed_messages", "payload_for", "tool_transform_check",
           "transcript_messages", "transform_policy_check", "transforming"]
