"""The suspended state of a run: what a resume in any process needs, JSON-safe.

``to_state(run)`` is stored with the pending approval; ``load_state(run, state)`` rebuilds a run
from it (``Run(..., suspended_state=state)``)."""

from __future__ import annotations

import json
from typing import Any

from ..redaction import options_for_storage
from ..results import StepResult, Usage

#: the call options a resumed run keeps (the others are callbacks or objects, given again by the caller)
JSON_OPTIONS = frozenset({"max_steps", "require_tool_approval", "tool_call_concurrency", "model_settings",
                          "tool_choice", "active_tools", "provider_options", "save_per_step",
                          "include_raw_chunks", "instructions", "system"})


def _jsonable_option(name: str, value: Any) -> bool:
    if name not in JSON_OPTIONS:
        return False
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _step_state(step: StepResult) -> dict:
    """A step as stored: without the provider request (the system instructions) or the response
    headers (docs/security.md)."""
    data = step.to_state()
    data["request"] = {}
    data["response"] = {k: v for k, v in (data.get("response") or {}).items() if k != "headers"}
    return data


def to_state(run: Any) -> dict:
    """JSON-safe state of a suspended run."""
    opts = options_for_storage({k: v for k, v in run.options.items() if _jsonable_option(k, v)})
    return {
        "run_id": run.run_id, "messages": run.messages, "input_messages": run.input_messages,
        "response_messages": run.response_messages, "steps": [_step_state(s) for s in run.steps],
        "usage": dict(run.usage), "pending_calls": run.pending_calls, "done_results": run.done_results,
        "decisions": run.decisions, "options": opts, "remembered": run.remembered,
        # JSON-safe: no store, no callback, no title setting (it may hold a model object; the title
        # generation already started when the run suspended, so the resumed run must not start another)
        "memory": {k: v for k, v in (run.memory or {}).items()
                   if k not in ("store", "on_title_generated", "generate_title")} or None,
        "request_context": run.request_context, "started_at": run.started_at,
        "suspension": run.suspension, "chain_index": run.chain_index,
        # what the display transforms showed of the calls before the suspension (the UI messages)
        "displayed": [[kind, call_id, payload] for (kind, call_id), payload in run.displayed.items()],
        # the resumed run joins this trace, under this run's root span
        "trace": {"trace_id": run.span.trace_id, "span_id": run.span.span_id} if run.span is not None else None,
    }


def load_state(run: Any, state: dict) -> None:
    """Put a stored state into a freshly built run (before it executes)."""
    run.messages = state["messages"]
    run.input_messages = state["input_messages"]
    run.response_messages = state["response_messages"]
    run.steps = [StepResult.from_state(s) for s in state["steps"]]
    if run.steps and run.steps[-1].finish_reason == "suspended":
        run.steps[-1].finish_reason = "tool-calls"
    run.usage = Usage(state["usage"])
    run.pending_calls = state["pending_calls"]
    run.done_results = state["done_results"]
    run.decisions = dict(state["decisions"])
    run.remembered = state.get("remembered") or []
    run.displayed = {(kind, call_id): payload for kind, call_id, payload in state.get("displayed") or []}
    run.started_at = state.get("started_at") or run.started_at
    run.resume_data = dict(state.get("resume_data") or {})
    # the resumed run asks the model that answered last (a chain's fallback stays), if it is still there
    index = state.get("chain_index") or 0
    run.chain_index = index if isinstance(index, int) and 0 <= index < len(run.chain) else 0
