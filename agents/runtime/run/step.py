"""One model step of a run: prepare the request, get the model's answer (``model_call``: the chain,
its retries and fallbacks; ``step_stream``: the answer as chunks), record the step.

A step that asked for tools goes on to the tool phase; any other step ends here (``Run.end_step``).
"""

from __future__ import annotations

import time
from typing import Any

from ..errors import AbortError
from ..messages import now_iso, system_messages
from ..providers.base import ModelRequest
from ..signal import echo_chunk, render_signal, state_to_signal
from ..stored_messages import to_model_messages
from ..providers.chain import chain_of
from ..tracing.steps import step_observed
from . import model_call, processing, spending, structured, tool_phase
from .hooks import maybe_await


async def model_step(run: Any) -> None:
    """Run one model step of ``run`` (a :class:`~agents.runtime.run.Run`) and record it."""
    if run.abort_signal is not None and run.abort_signal.aborted:
        # the cancellation may have been absorbed on the way (e.g. by a sub-agent run that ended
        # aborted on the same signal): never start a step after an abort
        raise AbortError(str(run.abort_signal.reason))
    opts = run.options
    step_number = len(run.steps)
    model = run.model
    tool_choice = opts.get("tool_choice", "auto")
    active = opts.get("active_tools")
    system = run.system
    messages = run.messages
    chain = None  # the run's own chain
    prepare = opts.get("prepare_step")
    if prepare is not None:
        prepared = await maybe_await(prepare({
            "step_number": step_number, "steps": run.steps, "messages": messages, "model": model,
            "run_id": run.run_id, "request_context": run.request_context,
        })) or {}
        if prepared.get("model") is not None:
            chain = chain_of(prepared["model"], field="prepare_step.model")
            model = next(e.model for e in chain if e.enabled)
        if "tool_choice" in prepared:
            tool_choice = prepared["tool_choice"]
        if "active_tools" in prepared:
            active = prepared["active_tools"]
        if prepared.get("system") is not None:
            system = system_messages(prepared["system"], "prepare_step.system")
        if prepared.get("messages") is not None:
            messages = prepared["messages"]
    if run.input_processors:  # (the awaits a run without processors need not make)
        messages = await processing.input_step_run(run, messages, step_number)
        for processor in run.input_processors:
            if getattr(processor, "compute_state_signal", None) is not None and getattr(processor, "state_id", None):
                await compute_state(run, processor, messages, step_number)
    await run.take_inputs_into(messages)
    request = _request(run, model, system, messages, tool_choice, active)
    if run.policy is not None:
        await spending.spend_check(run)  # may refuse the call (a budget, a limit): the run ends here
    span = run.span.create_child_span(
        # the system instructions stay out of stored spans, as out of chunks (docs/security.md)
        name=f"step: {step_number}", type="model_step",
        input=[m for m in request.messages if m.get("role") != "system"],
        attributes={"model_id": getattr(model, "model_id", None), "provider": getattr(model, "provider", None)},
    ) if run.span is not None else None
    started = time.monotonic()
    try:
        step = await model_call.step_answer(run, request, step_number, chain)
    except BaseException as exc:
        if span is not None:
            span.end(error=exc)
        raise
    if span is not None:
        span.end(output={"text": step.text, "tool_calls": [c["payload"] for c in step.tool_calls]},
                 attributes={"finish_reason": step.finish_reason, "usage": dict(step.usage)})
    step_observed(run, step, time.monotonic() - started)
    run.steps.append(step)
    if run.policy is not None:
        await spending.spend_record(run, step)
    if step.tool_calls:
        run.pending_calls = list(step.tool_calls)
        run.done_results = []
        await tool_phase.finish_tool_phase(run)
    else:
        await run.end_step(step)


def with_tool_inputs(messages: list[dict]) -> list[dict]:
    """``messages`` as the model gets them: each tool result part carries its call's arguments as
    ``input`` (Mastra's tool-result part). Only the request's copy changes: the run's messages, and
    what memory stores, keep their format."""
    args: dict[str, Any] = {}
    out = []
    for message in messages:
        content = message.get("content")
        if message.get("role") == "assistant" and isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("type") == "tool-call":
                    args[part.get("toolCallId")] = part.get("args")
        elif message.get("role") == "tool" and isinstance(content, list):
            parts = [{**part, "input": args[part.get("toolCallId")]}
                     if isinstance(part, dict) and part.get("type") == "tool-result" and "input" not in part
                     and part.get("toolCallId") in args else part for part in content]
            message = {**message, "content": parts}
        out.append(message)
    return out


def _request(run: Any, model: Any, system: list[dict], messages: list[dict], tool_choice: Any,
             active: Any) -> ModelRequest:
    opts = run.options
    names = [n for n in run.tools if active is None or n in active]
    if tool_choice == "none":
        tool_specs = []
    else:
        tool_specs = [run.tools[n].spec(n, run.tool_descriptions.get(n)) for n in names]
    messages = with_tool_inputs(messages)
    request_messages = system + messages if system else list(messages)
    response_format = structured.response_format(run.options)
    injection = (opts.get("structured_output") or {}).get("json_prompt_injection")
    if response_format is not None and injection in (True, "system", "inline"):
        request_messages = structured.inject_json_instruction(request_messages, response_format["schema"],
                                                              inline=injection == "inline")
        response_format = None
    return ModelRequest(
        messages=request_messages, tools=tool_specs, tool_choice=tool_choice,
        settings=opts.get("model_settings") or {}, provider_options=opts.get("provider_options") or {},
        response_format=response_format, abort_signal=run.abort_signal,
        include_raw=bool(opts.get("include_raw_chunks")),
        sdk_retries=0,  # the model chain retries (``model_call``), never the SDK
    )


async def compute_state(run: Any, processor: Any, messages: list[dict], step_number: int) -> None:
    """Ask a state-owning processor for its channel's next state signal (once per model step).

    ``last_snapshot`` / ``deltas_since_snapshot`` come from the context window, else from the
    thread's full history; an update with the cache key and mode already current is skipped.
    """
    state_id = processor.state_id

    def states(items: list[dict]) -> list[dict]:
        found = []
        for m in items:
            sig = (m.get("metadata") or {}).get("signal")
            if sig and sig.get("type") == "state" and state_of(sig).get("id") == state_id:
                found.append(sig)
        return found

    window = states(messages)
    history = window
    if not any(state_of(s).get("mode") == "snapshot" for s in window) and run.memory is not None:
        stored = await run.memory["store"].list_messages(resource_id=run.memory["resource_id"],
                                                         thread_id=run.memory["thread_id"])
        saved = states(to_model_messages(stored))
        ids = {s.get("id") for s in saved}
        # the window's signals already saved are in ``saved``: keep each signal once
        history = saved + [s for s in window if s.get("id") not in ids]
    last_snapshot, deltas = None, []
    for sig in history:
        if state_of(sig).get("mode") == "snapshot":
            last_snapshot, deltas = sig, []
        elif last_snapshot is not None:
            deltas.append(sig)
    update = await maybe_await(processor.compute_state_signal({
        "state_id": state_id, "last_snapshot": last_snapshot, "deltas_since_snapshot": deltas,
        "active_state_signals": window, "context_window": {"has_snapshot": any(
            state_of(s).get("mode") == "snapshot" for s in window)},
        "messages": messages, "step_number": step_number, "request_context": run.request_context,
    }))
    if not update:
        return
    signal, tracking = state_to_signal({"id": state_id, **update})
    memory = run.memory
    if memory is not None and not memory.get("read_only"):
        # the thread's tracking decides (Mastra's applyStateSignal with the context window)
        signal = await memory["store"].record_state_signal(
            resource_id=memory["resource_id"], thread_id=memory["thread_id"], state=tracking, signal=signal,
            window_ids=[s.get("id") for s in window])
        if signal is None:
            return
    else:  # no stored thread: the history decides
        current = state_of(history[-1]) if history else {}
        if current.get("cacheKey") == tracking["cache_key"] and current.get("mode") == tracking["mode"]:
            return
    signal["acceptedAt"] = now_iso()
    await run.send(echo_chunk(signal, run.run_id))
    message = render_signal(signal)
    messages.append(message)
    if messages is not run.messages:
        run.messages.append(message)
    run.response_messages.append(message)


def state_of(signal: dict) -> dict:
    """A state signal's tracking data (``metadata.state``: id, cache key, mode)."""
    return (signal.get("metadata") or {}).get("state") or {}
