"""``is_task_complete``: scorers that decide, when the model would stop, whether the task is done.

When a step ends the run (no tool call to follow up), the scorers run on the step's text. Each
returns 1 (passed) or anything else (failed). ``strategy`` ``"all"`` (default) needs every scorer to
pass, ``"any"`` one; ``parallel`` (default True) runs them together, otherwise in order, stopping at
the first failure (``all``) or success (``any``); ``timeout`` (ms, default 600000) bounds them all: a
scorer still running then counts as failed (``errored``) and the result says ``timed_out``. A scorer
that raises counts as failed with ``errored``. ``on_complete(result)`` is called with the result.
Not complete and steps left: the feedback (Mastra's "Completion Check Results" text) is added as an
assistant message and the run goes on; with ``suppress_feedback`` the model sees it but it is kept
out of the result's messages and memory. Each check sends an ``is-task-complete`` chunk.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any

from ..errors import AgentConfigError
from ..messages import new_id, now_iso, text_of
from ..naming import camel_keys, option_dict
from .scorer import Scorer

KEYS = frozenset({"scorers", "strategy", "on_complete", "parallel", "timeout", "suppress_feedback"})
DEFAULT_TIMEOUT_MS = 600_000
UNFINISHED = "Scorer did not finish before the completion timeout"


def task_complete_check(value: Any) -> dict:
    """The ``is_task_complete`` option, snake_case; raises :class:`AgentConfigError`."""
    value = option_dict(value, "options.is_task_complete", KEYS, expected="must be a dict with 'scorers'")
    scorers = value.get("scorers")
    if not isinstance(scorers, (list, tuple)) or not scorers or not all(isinstance(s, Scorer) for s in scorers):
        raise AgentConfigError("options.is_task_complete.scorers", "must be a non-empty list of scorers (create_scorer)")
    if value.get("strategy", "all") not in ("all", "any"):
        raise AgentConfigError("options.is_task_complete.strategy", "must be 'all' or 'any'")
    timeout = value.get("timeout", DEFAULT_TIMEOUT_MS)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise AgentConfigError("options.is_task_complete.timeout", "must be a positive number of milliseconds")
    if value.get("on_complete") is not None and not callable(value["on_complete"]):
        raise AgentConfigError("options.is_task_complete.on_complete", "must be callable")
    return value


async def _single(scorer: Scorer, run_input: dict) -> dict:
    start = time.monotonic()
    out = {"scorer_id": scorer.id, "scorer_name": scorer.name}
    try:
        scored = await scorer.run(run_input)
    except Exception as exc:
        return {**out, "score": 0, "passed": False, "reason": f"Scorer threw an error: {exc}",
                "duration": _ms(start), "errored": True}
    return {**out, "score": scored["score"], "passed": scored["score"] == 1, "reason": scored.get("reason"),
            "duration": _ms(start)}


def _ms(start: float) -> int:
    return int((time.monotonic() - start) * 1000)


def _unfinished(scorer: Scorer, start: float) -> dict:
    return {"scorer_id": scorer.id, "scorer_name": scorer.name, "score": 0, "passed": False, "reason": UNFINISHED,
            "duration": _ms(start), "errored": True}


async def completion_scorers_run(scorers: list[Scorer], run_input: dict, *, strategy: str = "all",
                                 parallel: bool = True, timeout_ms: float = DEFAULT_TIMEOUT_MS) -> dict:
    """Run the completion scorers: ``{"complete", "completion_reason", "scorers", "total_duration",
    "timed_out"}`` (never raises for a scorer's failure or a timeout)."""
    start = time.monotonic()
    deadline = start + timeout_ms / 1000
    results: list[dict] = []
    timed_out = False
    if parallel:
        tasks = [asyncio.ensure_future(_single(s, run_input)) for s in scorers]
        done, pending = await asyncio.wait(tasks, timeout=timeout_ms / 1000)
        for task in pending:
            task.cancel()
        timed_out = bool(pending)
        results = [t.result() if t in done else _unfinished(s, start) for s, t in zip(scorers, tasks)]
    else:
        for scorer in scorers:
            left = deadline - time.monotonic()
            try:
                result = await asyncio.wait_for(_single(scorer, run_input), timeout=max(left, 0))
            except TimeoutError:
                timed_out = True
                results.append(_unfinished(scorer, start))
                break
            results.append(result)
            if (strategy == "all" and not result["passed"]) or (strategy == "any" and result["passed"]):
                break
    if strategy == "all":
        complete = len(results) == len(scorers) and all(r["passed"] for r in results)
    else:
        complete = any(r["passed"] for r in results)
    reason = next((r for r in results if r["passed"]), results[0] if results else {}).get("reason")
    return {"complete": complete, "completion_reason": reason, "scorers": results,
            "total_duration": _ms(start), "timed_out": timed_out}


def completion_feedback(result: dict, max_iteration_reached: bool) -> str:
    """Mastra's feedback text for the model (``formatStreamCompletionFeedback``)."""
    lines = ["#### Completion Check Results", "",
             f"Overall: {'✅ COMPLETE' if result['complete'] else '❌ NOT COMPLETE'}",
             f"Duration: {result['total_duration']}ms"]
    if result["timed_out"]:
        lines.append("⚠️ Scoring timed out")
    lines.append("")
    for scorer in result["scorers"]:
        lines.append(f"**{scorer['scorer_name']}** ({scorer['scorer_id']})")
        lines.append(f"Score: {scorer['score']} {'✅' if scorer['passed'] else '❌'}")
        if scorer.get("reason"):
            lines.append(f"Reason: {scorer['reason']}")
        lines.append("")
    if result["complete"]:
        lines.append("✅ The task is complete.")
    elif max_iteration_reached:
        lines.append("⚠️ Max iterations reached.")
    else:
        lines.append("🔄 The task is not yet complete. Please continue working based on the feedback above.")
    return "\n".join(lines)


async def task_completion_check(run: Any, max_steps: int) -> bool:
    """Run ``run``'s ``is_task_complete`` after its last step; True when the run must go on."""
    config = run.options["is_task_complete"]
    last = run.steps[-1]
    iteration = len(run.steps)
    first_user = next((m for m in run.input_messages if m.get("role") == "user"), None)
    context = {
        "iteration": iteration, "max_iterations": max_steps, "messages": run.messages,
        "original_task": text_of(first_user) if first_user else "Unknown task", "current_text": last.text,
        "tool_calls": [{"name": c["payload"]["toolName"], "args": c["payload"]["args"]} for c in last.tool_calls],
        "tool_results": [{"name": r["payload"]["toolName"], "result": r["payload"]["result"]} for r in last.tool_results],
        "agent_id": getattr(run.agent, "id", None), "agent_name": getattr(run.agent, "name", None),
        "run_id": run.run_id, "thread_id": (run.memory or {}).get("thread_id"),
        "resource_id": (run.memory or {}).get("resource_id"),
    }
    result = await completion_scorers_run(
        list(config["scorers"]), {"run_id": run.run_id, "input": context, "output": last.text,
                                  "request_context": run.request_context},
        strategy=config.get("strategy", "all"), parallel=config.get("parallel", True),
        timeout_ms=config.get("timeout", DEFAULT_TIMEOUT_MS))
    if config.get("on_complete") is not None:
        value = config["on_complete"](result)
        if inspect.isawaitable(value):
            await value
    max_reached = iteration >= max_steps
    if not result["complete"]:
        feedback = {"id": new_id(), "role": "assistant", "createdAt": now_iso(), "type": "completion-feedback",
                    "content": [{"type": "text", "text": completion_feedback(result, max_reached)}]}
        if config.get("suppress_feedback"):  # the model sees it; the result and memory do not
            run.messages.append(feedback)
        else:
            run.add_message(feedback)
    await run.send(run.chunk("is-task-complete", {
        "iteration": iteration, "passed": result["complete"], "results": [camel_keys(r) for r in result["scorers"]],
        "duration": result["total_duration"], "timedOut": result["timed_out"], "reason": result["completion_reason"],
        "maxIterationReached": max_reached, "suppressFeedback": bool(config.get("suppress_feedback")),
    }))
    return not result["complete"] and not max_reached


__all__ = ["completion_feedback", "completion_scorers_run", "task_complete_check", "task_completion_check"]
