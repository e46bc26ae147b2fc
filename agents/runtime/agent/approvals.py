"""Continuing a run suspended on a tool approval (approve or decline the pending call)."""

from __future__ import annotations

from typing import Any

from ..errors import AgentConfigError
from ..naming import snake_keys
from ..output import AgentOutput
from ..run import Run, ThreadHooks
from ..storage import get_run_store
from ..threads import get_thread_runtime
from .building import options_merge, run_execute, run_parts


def thread_scope(resource_id: Any, thread_id: Any) -> tuple[str, str] | None:
    """``(resource_id, thread_id)`` a decision is scoped to, or None (both omitted)."""
    if resource_id is None and thread_id is None:
        return None
    if not (isinstance(resource_id, str) and resource_id and isinstance(thread_id, str) and thread_id):
        raise AgentConfigError("resource_id", "resource_id and thread_id go together (both, or neither)")
    return resource_id, thread_id


async def resume_parts(agent: Any, run_id: str, tool_call_id: str, decision: str, options: dict, *,
                       thread: tuple[str, str] | None = None) -> dict:
    """Claim the suspended run and return what its continuation is built from (its stored state
    with ``decision`` for the call, its memory and the merged options). With ``thread``
    (``(resource_id, thread_id)``) only a run of that thread is claimed."""
    if not isinstance(run_id, str) or not isinstance(tool_call_id, str):
        raise AgentConfigError("run_id", "run_id and tool_call_id must be strings")
    scope = {"thread": thread} if thread is not None else {}
    state = await get_run_store().claim_suspended(run_id=run_id, tool_call_id=tool_call_id, decision=decision,
                                                  **scope)
    stored = state.get("options") or {}
    if state.get("trace"):  # the continuation joins the suspended run's trace
        stored = {**stored, "tracing_options": {"trace_id": state["trace"]["trace_id"],
                                                "parent_span_id": state["trace"]["span_id"]}}
    merged = await options_merge(agent, {**stored, **snake_keys(options)})
    merged["request_context"] = merged.get("request_context") or state.get("request_context") or {}
    mem = state.get("memory")
    parts = await run_parts(agent, None, merged, run_id=run_id)
    if mem:
        if agent.memory is None:
            raise AgentConfigError("memory", f"agent {agent.id!r} has no memory to resume thread runs")
        parts["memory"] = {**mem, "store": agent.memory.store}
    parts["suspended_state"] = {**state, "decisions": {**state["decisions"], tool_call_id: decision}}
    return parts


async def resume_output(agent: Any, run_id: str, tool_call_id: str, decision: str, options: dict, *,
                        parts: dict | None = None, thread: tuple[str, str] | None = None) -> AgentOutput:
    """Claim the suspended run (of ``thread`` only, when given) and continue it (``parts``: already
    claimed and built). A thread run continues under the thread's lease (its chunks reach the
    thread's subscribers); any other run continues here."""
    if parts is None:
        parts = await resume_parts(agent, run_id, tool_call_id, decision, options, thread=thread)
    user_on_chunk = snake_keys(options).get("on_chunk")

    def make(hooks: ThreadHooks | None) -> AgentOutput:
        def on_chunk(chunk: dict) -> Any:
            if hooks is not None:
                hooks.emit(chunk)
            return user_on_chunk(chunk) if user_on_chunk is not None else None

        output = AgentOutput(run_id, on_chunk=on_chunk)
        run = Run(**parts, emit=output.emit, hooks=hooks)

        async def execute():
            result = await run_execute(run, resuming=True)
            if hooks is not None:
                await hooks.finalize(result)
            return result

        return output.start(execute())

    if parts["memory"] is not None:
        async def resume(hooks: ThreadHooks) -> AgentOutput:
            return make(hooks)

        try:
            runtime = get_thread_runtime()
        except AgentConfigError:  # no thread store in this process: a plain memory run
            runtime = None
        output = await runtime.resume_suspended(agent, run_id=run_id, resume=resume) if runtime else None
        if output is not None:
            return output
    return make(None)


__all__ = ["resume_output", "resume_parts", "thread_scope"]
