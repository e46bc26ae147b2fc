"""The tool phase of a step: approvals, executing the calls, recording their results and errors.

A call that needs an approval without a decision suspends the run (its state goes to the run
store); a resumed run comes back here with the decision and executes the calls left.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..delegation import SubAgentTool, delegation_seam
from ..errors import AbortError
from ..messages import new_id, now_iso
from ..results import StepResult
from ..tools import ToolContext, ToolSuspended, ToolValidationError, to_jsonable
from . import ending, resume_state, tool_suspension
from .hooks import maybe_await

DECLINED_MESSAGE = "Tool call was not approved by the user"


def needs_approval(run: Any, call: dict) -> bool:
    name = call["payload"]["toolName"]
    tool = run.tools.get(name)
    if call["payload"].get("argsError") or tool is None:
        return False
    return bool(run.options.get("require_tool_approval")) or tool.require_approval


def client_calls_pending(step: StepResult) -> bool:
    """Calls of ``step`` that nobody executed here (client tools): the caller runs them."""
    done = {r["payload"]["toolCallId"] for r in step.tool_results}
    return any(c["payload"]["toolCallId"] not in done for c in step.tool_calls)


async def finish_tool_phase(run: Any) -> None:
    """Execute the pending calls of the last step (may suspend), then end the step."""
    step = run.steps[-1]
    pending = run.pending_calls
    concurrency = run.options.get("tool_call_concurrency")
    if concurrency is None:
        may_approve = bool(run.options.get("require_tool_approval")) or any(
            t.require_approval for t in run.tools.values())
        concurrency = 1 if may_approve else 10
    while pending:
        call = pending[0]
        if needs_approval(run, call) and call["payload"]["toolCallId"] not in run.decisions:
            await suspend(run, call)
            return
        if concurrency == 1 or len(pending) == 1:
            pending.pop(0)
            await run_call(run, call, step)
        else:
            batch = []
            while pending and len(batch) < concurrency:
                c = pending[0]
                if needs_approval(run, c) and c["payload"]["toolCallId"] not in run.decisions:
                    break
                batch.append(pending.pop(0))
            await asyncio.gather(*(run_call(run, c, step) for c in batch))
        if run.suspended_calls:  # a tool suspended itself: it runs again on resume
            calls, run.suspended_calls = run.suspended_calls, []
            pending[:0] = [c for c, _ in calls]
            await tool_suspension.suspend_tool(run, *calls[0])
            return
    if run.done_results:
        order = {c["payload"]["toolCallId"]: i for i, c in enumerate(step.tool_calls)}
        content = sorted(run.done_results, key=lambda p: order.get(p["toolCallId"], 0))
        run.add_message({"id": new_id(), "role": "tool", "content": content, "createdAt": now_iso()})
        run.done_results = []
    if run.after_tools:  # e.g. delegation feedback: kept for memory after the tool results
        run.response_messages.extend(run.after_tools)
        run.after_tools = []
    await run.end_step(step)


async def suspend(run: Any, call: dict) -> None:
    """Stop the run on ``call``'s approval: send ``tool-call-approval`` and store the run's state."""
    p = call["payload"]
    run.finish_reason = "suspended"
    run.steps[-1].finish_reason = "suspended"
    run.suspend_payload = {"tool_call_id": p["toolCallId"], "tool_name": p["toolName"], "args": p["args"]}
    await run.send(run.chunk("tool-call-approval", {"toolCallId": p["toolCallId"], "toolName": p["toolName"],
                                                    "args": p["args"]}))
    # save the thread's messages now, so that the stored state knows they are saved (``saved_upto``)
    # and the resumed run does not save them a second time
    await ending.save_memory(run)
    if run.run_store is not None:
        await run.run_store.save_suspended(run_id=run.run_id, agent_id=getattr(run.agent, "id", None),
                                           tool_call_id=p["toolCallId"], tool_name=p["toolName"],
                                           args=p["args"], state=resume_state.to_state(run))


async def run_call(run: Any, call: dict, step: StepResult) -> None:
    """Execute one call (or record why it is not executed) with the tool hooks around it."""
    p = call["payload"]
    cid, name, args = p["toolCallId"], p["toolName"], p["args"]
    tool = run.tools.get(name)
    if run.decisions.get(cid) == "declined":
        await record_result(run, step, cid, name, DECLINED_MESSAGE, is_error=True)
        return
    if p.get("argsError"):
        await record_error(run, step, cid, name, p["argsError"])
        return
    if tool is None:
        subs = [n[len("agent-"):] for n, t in run.tools.items() if isinstance(t, SubAgentTool)]
        if name.startswith("agent-") and subs:
            await record_error(run, step, cid, name, f"unknown sub-agent {name[len('agent-'):]!r}; sub-agents: {', '.join(subs)}")
            return
        await record_error(run, step, cid, name, f"unknown tool {name!r}; available: {', '.join(run.tools) or 'none'}")
        return
    if tool.execute is None:  # client tool: the caller runs it; the run ends with tool-calls
        return
    try:
        args, resume_data = await tool_suspension.auto_resume_args(run, name, args) if run.resumable else (args, None)
    except ToolValidationError as exc:
        await record_error(run, step, cid, name, str(exc))
        return
    span = run.span.create_child_span(
        name=f"tool: '{name}'", type="delegation" if isinstance(tool, SubAgentTool) else "tool_call", input=args,
        attributes={"tool_call_id": cid}) if run.span is not None else None
    try:
        await _execute(run, step, call, tool, args, resume_data, span)
    except BaseException as exc:
        if span is not None:
            span.end(error=exc)
        raise
    if span is not None:
        last = next((r for r in reversed(run.done_results) if r["toolCallId"] == cid), None)
        suspended_here = any(c is call for c, _ in run.suspended_calls)
        span.end(output=last["result"] if last else None,
                 error=RuntimeError(str(last["result"])) if last and last.get("isError") else None,
                 attributes={"suspended": True} if suspended_here else None)


async def _execute(run: Any, step: StepResult, call: dict, tool: Any, args: Any, resume_data: Any, span: Any) -> None:
    """Execute one call with the tool hooks around it; its result or error is recorded."""
    p = call["payload"]
    cid, name = p["toolCallId"], p["toolName"]
    hooks = run.options.get("hooks") or {}
    agent_hooks = getattr(run.agent, "hooks", None) or {}
    before = hooks.get("before_tool_call", agent_hooks.get("before_tool_call"))
    after = hooks.get("after_tool_call", agent_hooks.get("after_tool_call"))
    context = meta = None  # a tool whose execute takes no context, without hooks: nobody reads them
    if before is not None or after is not None or tool.takes_context:
        context = ToolContext(run_id=run.run_id, tool_call_id=cid, agent_id=getattr(run.agent, "id", None),
                              thread_id=run.memory and run.memory.get("thread_id"),
                              resource_id=run.memory and run.memory.get("resource_id"),
                              request_context=run.request_context, abort_signal=run.abort_signal,
                              agent=run.agent, send_signal=run.send_signal,
                              delegation=delegation_seam(run) if isinstance(tool, SubAgentTool) else None,
                              suspend=suspender(tool), resume_data=resume_data if resume_data is not None
                              else run.resume_data.get(cid),
                              tracing_context={"current_span": span} if span is not None else None,
                              versions=run.options.get("versions"))
        meta = {"agent_id": getattr(run.agent, "id", None), "agent_name": getattr(run.agent, "name", None)}
    if before is not None:
        verdict = await maybe_await(before({"tool_name": name, "input": args, "context": context, "metadata": meta}))
        if isinstance(verdict, dict) and verdict.get("proceed") is False:
            await record_result(run, step, cid, name, to_jsonable(verdict.get("output")))
            return
    try:
        output = await tool.run(args, context)
    except (asyncio.CancelledError, AbortError):
        raise
    except ToolSuspended as suspension_:
        run.suspended_calls.append((call, suspension_.payload))
        return
    except ToolValidationError as exc:
        message = f"invalid arguments for tool {name!r}: {exc}" if "output" not in str(exc)[:6] else str(exc)
        if after is not None:
            await maybe_await(after({"tool_name": name, "input": args, "context": context, "metadata": meta,
                                     "output": None, "error": exc}))
        await record_error(run, step, cid, name, message)
        return
    except Exception as exc:
        if after is not None:
            await maybe_await(after({"tool_name": name, "input": args, "context": context, "metadata": meta,
                                     "output": None, "error": exc}))
        await record_error(run, step, cid, name, f"{type(exc).__name__}: {exc}")
        return
    if after is not None:
        await maybe_await(after({"tool_name": name, "input": args, "context": context, "metadata": meta,
                                 "output": output, "error": None}))
    await record_result(run, step, cid, name, output)


def suspender(tool: Any):
    """The ``context.suspend(payload)`` of a call of ``tool``: checks the payload against the tool's
    ``suspend_schema`` and raises :class:`ToolSuspended` (also when called without ``await``)."""
    def suspend(payload: Any = None):
        if tool.suspend_schema is not None:
            tool.suspend_schema.validate(payload)
        raise ToolSuspended(payload)
    return suspend


async def record_result(run: Any, step: StepResult, cid: str, name: str, result: Any, *,
                        is_error: bool = False) -> None:
    payload = {"toolCallId": cid, "toolName": name, "result": result}
    if is_error:
        payload["isError"] = True
    chunk = run.chunk("tool-result", payload)
    step.tool_results.append(chunk)
    part = {"type": "tool-result", "toolCallId": cid, "toolName": name, "result": result}
    if is_error:
        part["isError"] = True
    run.done_results.append(part)
    await run.send(chunk)


async def record_error(run: Any, step: StepResult, cid: str, name: str, message: str) -> None:
    await run.send(run.chunk("tool-error", {"toolCallId": cid, "toolName": name, "error": message}))
    result = {"error": message}
    step.tool_results.append(run.chunk("tool-result", {"toolCallId": cid, "toolName": name, "result": result,
                                                       "isError": True}))
    run.done_results.append({"type": "tool-result", "toolCallId": cid, "toolName": name, "result": result,
                             "isError": True})
