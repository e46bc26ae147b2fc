"""Sub-agents as tools of a supervisor, and the ``delegation`` option that governs them.

Each sub-agent in ``Agent(agents={key: sub})`` is a tool ``agent-<key>`` the supervisor's model may
call with ``{"prompt", "instructions"?, "maxSteps"?}``. A call runs ``sub.generate(prompt)`` with:

- ``context``: the supervisor's conversation without tool calls and results (Mastra's default), or
  what ``delegation.message_filter(context)`` returns;
- a copy of the supervisor's ``request_context`` (changes made by ``on_delegation_start`` reach the
  sub-agent only) and its ``abort_signal`` (an abort stops the running sub-agent too);
- when the sub-agent has memory and the supervisor runs on a thread: the supervisor's resource id
  and a thread derived from the supervisor's (``<thread id>--<key>``), loading no history of its own.

``delegation`` (a call option, snake_case or camelCase keys):

- ``on_delegation_start(context)`` before the sub-agent runs; returns None to go on, or a dict with
  ``proceed: False`` and ``rejection_reason`` (the supervisor's model gets the tool result
  ``{"text": "[Delegation Rejected] <reason>"}``), ``modified_prompt``, ``modified_instructions``,
  ``modified_max_steps``, ``modified_options`` (more generate options for the sub-agent). It may also
  change ``context["request_context"]``.
- ``on_delegation_complete(context)`` after it (also when it failed: ``success`` False, ``error``);
  ``context["bail"]()`` ends the supervisor's run after this tool phase (no further model step);
  returning ``{"feedback": "..."}`` saves the feedback into the supervisor's memory as an assistant
  message after the tool result (the model sees it from the next turn on); ``{"result_text": ...}``
  replaces the text the supervisor's model gets now.
- ``message_filter(context)`` returns the messages the sub-agent receives as context.
- ``hook_error_strategy``: ``"warn"`` (default: a hook that raises is logged and ignored) or
  ``"throw"`` (the delegation fails: the supervisor's model sees a tool error).
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import AgentConfigError, MastraError
from .ids import MAX_THREAD_ID
from .messages import new_id, now_iso
from .naming import option_dict, snake_keys
from .tools import Tool

logger = logging.getLogger(__name__)

DELEGATION_KEYS = frozenset({"on_delegation_start", "on_delegation_complete", "message_filter",
                             "hook_error_strategy"})
START_KEYS = frozenset({"proceed", "rejection_reason", "modified_prompt", "modified_instructions",
                        "modified_max_steps", "modified_options"})
REJECTED = "Delegation rejected by onDelegationStart hook"
SUB_AGENT_INPUT = {
    "type": "object",
    "properties": {
        "prompt": {"type": "string", "description": "The task for the agent"},
        "instructions": {"type": "string", "description": "Additional instructions, only when needed"},
        "maxSteps": {"type": "integer", "minimum": 1, "description": "Maximum steps of the agent"},
    },
    "required": ["prompt"],
}


#: a sub-agent runs its own tool loop: its call may take longer than a plain tool's
SUB_AGENT_TIMEOUT_S = 600.0


class SubAgentTool(Tool):
    """The tool of a sub-agent (the tool phase gives its calls a :class:`DelegationSeam`)."""

    def __init__(self, sub_agent: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.sub_agent = sub_agent


class DelegationError(MastraError):
    """A delegation hook failed under ``hook_error_strategy="throw"``, or the sub-agent failed."""

    code = "delegation_error"


def delegation_check(value: Any) -> dict:
    """The ``delegation`` option with snake_case keys; raises :class:`AgentConfigError`."""
    value = option_dict(value, "options.delegation", DELEGATION_KEYS,
                        expected="must be a dict (on_delegation_start, on_delegation_complete, "
                                 "message_filter, hook_error_strategy)")
    for name in ("on_delegation_start", "on_delegation_complete", "message_filter"):
        if value.get(name) is not None and not callable(value[name]):
            raise AgentConfigError(f"options.delegation.{name}", "must be callable")
    if value.get("hook_error_strategy", "warn") not in ("warn", "throw"):
        raise AgentConfigError("options.delegation.hook_error_strategy", "must be 'warn' or 'throw'")
    return value


@dataclass
class DelegationSeam:
    """The supervisor run's side of one sub-agent call (given to the tool in its context)."""

    config: dict
    messages: list[dict]
    iteration: int
    bail: Callable[[], None]
    remember: Callable[[dict], None]
    hook_errors: list[dict] = field(default_factory=list)


def delegation_seam(run: Any) -> DelegationSeam:
    """The seam for a sub-agent call made by ``run`` (its ``delegation`` option, conversation,
    ``bail`` and the feedback it keeps for memory)."""
    return DelegationSeam(
        config=run.options.get("delegation") or {}, messages=list(run.messages),
        iteration=max(1, sum(1 for m in run.messages if m.get("role") == "assistant")),
        bail=run.request_stop, remember=run.remember_after_tools)


def without_tool_parts(messages: list[dict]) -> list[dict]:
    """The conversation without tool calls and results (what a sub-agent gets by default)."""
    out = []
    for message in messages:
        if message.get("role") == "tool":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = [p for p in content if not (isinstance(p, dict) and p.get("type") in ("tool-call", "tool-result"))]
            if not content:
                continue
        out.append({"role": message["role"], "content": content})
    return out


def sub_agent_thread(thread_id: str, key: str) -> str:
    """The sub-agent's thread for a supervisor thread: ``<thread>--<key>`` (hashed past the limit)."""
    derived = f"{thread_id}--{key}"
    if len(derived) <= MAX_THREAD_ID:
        return derived
    return f"{hashlib.sha256(thread_id.encode()).hexdigest()[:32]}--{key}"[:MAX_THREAD_ID]


async def _hook(seam: DelegationSeam, name: str, context: dict, call_id: str, sub_id: str, run_id: str) -> Any:
    hook = seam.config.get(name)
    if hook is None:
        return None
    try:
        value = hook(context)
        return await value if inspect.isawaitable(value) else value
    except Exception as exc:
        seam.hook_errors.append({"hook": name, "primitive_id": sub_id, "tool_call_id": call_id, "run_id": run_id,
                                 "name": type(exc).__name__, "message": str(exc)})
        if seam.config.get("hook_error_strategy") == "throw":
            raise DelegationError(f"delegation hook {name} failed: {type(exc).__name__}: {exc}") from exc
        logger.warning("delegation hook %s failed (ignored)", name, exc_info=True)
        return None


def sub_agent_tool(key: str, sub: Any) -> Tool:
    """The tool ``agent-<key>`` that delegates a task to the sub-agent ``sub``."""
    async def execute(input: dict, context) -> dict:
        seam = context.delegation or DelegationSeam(config={}, messages=[], iteration=1, bail=lambda: None,
                                                    remember=lambda m: None)
        supervisor = context.agent
        base = {"primitive_id": sub.id, "primitive_type": "agent", "iteration": seam.iteration,
                "run_id": context.run_id, "thread_id": context.thread_id, "resource_id": context.resource_id,
                "parent_agent_id": getattr(supervisor, "id", None), "parent_agent_name": getattr(supervisor, "name", None),
                "tool_call_id": context.tool_call_id}
        hook_args = (context.tool_call_id, sub.id, context.run_id)
        messages = without_tool_parts(seam.messages)
        request_context = dict(context.request_context or {})
        prompt, instructions, max_steps = input["prompt"], input.get("instructions"), input.get("maxSteps")
        extra: dict = {}
        start = await _hook(seam, "on_delegation_start", {
            **base, "prompt": prompt, "params": {"instructions": instructions, "max_steps": max_steps},
            "messages": messages, "request_context": request_context}, *hook_args) or {}
        start = snake_keys(start) if isinstance(start, dict) else {}
        if start.get("proceed") is False:
            return {"text": f"[Delegation Rejected] {start.get('rejection_reason') or REJECTED}"}
        prompt = start.get("modified_prompt", prompt)
        instructions = start.get("modified_instructions", instructions)
        max_steps = start.get("modified_max_steps", max_steps)
        extra = snake_keys(start.get("modified_options") or {})
        if seam.config.get("message_filter") is not None:
            filtered = await _hook(seam, "message_filter", {**base, "prompt": prompt, "messages": messages}, *hook_args)
            if isinstance(filtered, list):
                messages = filtered
        options: dict = {"request_context": request_context, "context": messages, **extra}
        if context.abort_signal is not None:
            options["abort_signal"] = context.abort_signal
        if context.versions:  # the caller's editor versions select the sub-agent's too
            options["versions"] = context.versions
        if context.tracing_context is not None:  # the sub-agent's run goes under the delegation's span
            options["tracing_context"] = context.tracing_context
        if instructions:
            own = await sub.get_instructions(request_context)
            options["instructions"] = own + [{"role": "system", "content": instructions}]
        if max_steps:
            options["max_steps"] = max_steps
        out: dict = {}
        if sub.memory is not None and context.thread_id and context.resource_id:
            out = {"subAgentThreadId": sub_agent_thread(context.thread_id, key),
                   "subAgentResourceId": context.resource_id}
            options["memory"] = {"resource": context.resource_id, "thread": out["subAgentThreadId"],
                                 "options": {"last_messages": 0, "generate_title": False}}
        began = time.monotonic()
        result = await sub.generate(prompt, **options)
        failed = result.error is not None or result.finish_reason in ("error", "abort")
        text = result.text
        done = await _hook(seam, "on_delegation_complete", {
            **base, "prompt": prompt, "duration": int((time.monotonic() - began) * 1000), "success": not failed,
            "error": result.error,
            "result": {"text": text, "finish_reason": result.finish_reason, "usage": dict(result.usage), **out,
                       "sub_agent_tool_results": [r["payload"] for r in result.tool_results]},
            "messages": result.messages, "bail": seam.bail}, *hook_args)
        done = snake_keys(done) if isinstance(done, dict) else {}
        if done.get("feedback"):
            seam.remember({"id": new_id(), "role": "assistant", "content": [{"type": "text", "text": str(done["feedback"])}],
                           "createdAt": now_iso(), "type": "delegation-feedback"})
        if isinstance(done.get("result_text"), str):
            text = done["result_text"]
        if failed:
            reason = str(result.error) if result.error is not None else result.finish_reason
            raise DelegationError(f"sub-agent {sub.id!r} failed: {reason}" if text == result.text else text)
        return {"text": text, **out}

    return SubAgentTool(sub, id=f"agent-{sub.id}", description=sub.description or f"Agent: {key}",
                        input_schema=SUB_AGENT_INPUT, execute=execute, timeout_s=SUB_AGENT_TIMEOUT_S)


__all__ = ["DELEGATION_KEYS", "DelegationError", "DelegationSeam", "SUB_AGENT_INPUT", "SubAgentTool", "delegation_check",
           "delegation_seam", "sub_agent_thread", "sub_agent_tool", "without_tool_parts"]
