"""The end of a run: structured output, output processors' last word, the ``finish`` chunk, the
saved messages and the run record, the ``on_finish`` callback and the result."""

from __future__ import annotations

import logging
from typing import Any

from ..errors import MastraError
from ..messages import new_id, now_iso
from ..redaction import redact_text
from ..results import GenerateResult, Usage
from ..scoring import scorers_start, scoring_data
from ..stored_messages import answers_stamped, error_entry, step_models, stored_form
from ..tracing import spans_export
from ..transforms import displayed_messages, transcript_messages
from ..run_policy import RESOURCE_ID_KEY
from . import processing, spending, structured
from .hooks import TripWire, maybe_await
from .payloads import chunk_metadata

logger = logging.getLogger(__name__)

_STATUS = {"suspended": "suspended", "error": "failed", "abort": "aborted"}


async def finalize(run: Any) -> GenerateResult:
    """End ``run``: send ``finish``, save and record it (one ``write_end`` for a thread run), return
    its result."""
    text = run.steps[-1].text if run.steps else ""
    if run.finish_reason not in ("error", "abort", "suspended") and run.tripwire is None:
        run.finish_reason = run.steps[-1].finish_reason if run.steps else "other"
        try:
            await structured.structure(run, "".join(s.text for s in run.steps[-1:]))
        except MastraError as exc:  # StructuredOutputError; a structuring model's error (strict); a processor's
            await run.finish_error(exc)
    if run.output_processors and run.finish_reason != "suspended":
        try:
            text = await processing.output_result_run(run, text)
        except MastraError as exc:  # a ProcessorError naming the processor
            if run.finish_reason == "error":  # the run failed first: that error stands
                logger.warning("run %s: an output processor failed after the run did", run.run_id, exc_info=True)
            else:
                await run.finish_error(exc)
    write_end = run.hooks.write_end if run.hooks is not None and run.finish_reason != "suspended" else None
    save = not run.options.get("save_per_step") or run.finish_reason in ("error", "abort")
    recorded = False
    if save and write_end is None:
        recorded = await save_memory_and_record(run)
        if not recorded:
            await save_memory(run)
    result = build_result(run, text)
    if run.displayed:
        result.display_messages = await displayed_messages(result.response.get("messages") or [], run.displayed)
    # before the thread's lease goes to the next run: that run must find this one's slot free
    await spending.spend_end(run)
    if not run.silent:
        payload = {"stepResult": {"reason": run.finish_reason}, "output": {"usage": run.usage.camel()},
                   "metadata": chunk_metadata(result.request, result.response)}
        if run.steps and run.steps[-1].message_id is not None:
            payload["messageId"] = run.steps[-1].message_id  # the last step's assistant message
        await run.send(run.chunk("finish", payload))
    if write_end is not None:
        # a thread run: its messages, its record and the thread's lease in one write; the
        # finish chunk reaches the thread's subscribers after it
        unsaved = unsaved_messages(run) if save else []
        await write_end(await stored_messages(run, unsaved), record_dict(run))
        if run.memory is not None:
            run.memory["saved_upto"] = run.memory.get("saved_upto", 0) + len(unsaved)
    elif not recorded:
        await _record(run)
    callback = run.options.get("on_finish")
    if callback is not None:
        try:
            await maybe_await(callback(result))
        except Exception:
            logger.exception("on_finish of run %s raised", run.run_id)
    scorers_start(run)
    await trace_end(run, text)
    return result


async def end_at_start(run: Any, exc: Exception) -> GenerateResult:
    """End a run whose first chunks failed: an output processor's tripwire, its error, or a
    callback's bug (``on_chunk``), as the run's steps end on them."""
    if isinstance(exc, TripWire):
        run.finish_reason = "other"
        await processing.tripwire_record(run, exc)
    else:
        if not isinstance(exc, MastraError):
            logger.exception("run %s failed", run.run_id)
        await run.finish_error(exc)
    return await finalize(run)


async def trace_end(run: Any, text: str) -> None:
    """End the run's root span; the run that opened the trace stores and exports its spans."""
    span = run.span
    if span is None:
        return
    span.end(output=text or None, error=run.error,
             attributes={"finish_reason": run.finish_reason, "usage": dict(run.usage),
                         **({"tripwire": run.tripwire["reason"]} if run.tripwire else {})})
    trace = span.trace
    if trace.spans[0] is not span:  # a run under another run's span: exported with that run
        return
    # the spans leave their trace: each span refers to the trace, and a trace still holding its
    # spans would make a cycle that keeps them (and their inputs and outputs) until a full
    # collection of the garbage collector
    spans, trace.spans = trace.spans, []
    for other in spans:
        if other.ended is None:  # e.g. cut by an abort
            other.end(error=RuntimeError("span not finished when its run ended"))
    await spans_export(spans, run.run_store, export=trace.export)


def build_result(run: Any, text: str) -> GenerateResult:
    steps = run.steps
    last = steps[-1] if steps else None
    return GenerateResult(
        run_id=run.run_id, text=text, object=run.object, tool_calls=[c for s in steps for c in s.tool_calls],
        tool_results=[r for s in steps for r in s.tool_results],
        usage=Usage(run.usage), total_usage=Usage(run.usage), steps=steps,
        finish_reason=run.finish_reason, response={**last.response, "messages": answers(run)} if last else {},
        request=dict(last.request) if last else {}, warnings=[w for s in steps for w in s.warnings],
        provider_metadata=last.provider_metadata if last else {},
        reasoning=[r for s in steps for r in s.reasoning],
        reasoning_text="".join(s.reasoning_text for s in steps),
        sources=[x for s in steps for x in s.sources], files=[x for s in steps for x in s.files],
        suspend_payload=run.suspend_payload, used_fallback_value=run.used_fallback_value,
        messages=run.remembered + run.input_messages + run.response_messages,
        remembered_messages=run.remembered, error=run.error, tripwire=run.tripwire,
        scoring_data=scoring_data(run) if run.options.get("return_scorer_data") else None,
        trace_id=run.span.trace_id if run.span is not None else None,
        span_id=run.span.span_id if run.span is not None else None,
    )


def answers(run: Any) -> list[dict]:
    """The run's response messages (``result.response["messages"]``): its assistant and tool
    messages, every step's, as Mastra's (the inputs taken in during the run are not answers)."""
    return [m for m in run.response_messages if m.get("role") in ("assistant", "tool")]


def unsaved_messages(run: Any) -> list[dict]:
    mem = run.memory
    if not mem or mem.get("read_only"):
        return []
    return (run.input_messages + run.response_messages)[mem.get("saved_upto", 0):]


async def save_memory(run: Any) -> None:
    """Save the run's messages not saved yet into its memory thread (none without memory)."""
    mem = run.memory
    if not mem or mem.get("read_only"):
        return
    pending = unsaved_messages(run)
    messages = await stored_messages(run, pending)
    if not messages:
        return
    await mem["store"].save_messages(resource_id=mem["resource_id"], thread_id=mem["thread_id"], messages=messages)
    mem["saved_upto"] = mem.get("saved_upto", 0) + len(pending)


async def save_memory_and_record(run: Any) -> bool:
    """Save the run's unsaved messages and its record in one write, when its memory store keeps the
    run store's records too (the site's: one transaction, one hop to the database); True when it
    did. Else (another store, read-only memory, no memory) the two are written apart."""
    mem = run.memory
    if not mem or mem.get("read_only") or run.run_store is None:
        return False
    store = mem["store"]
    together = getattr(store, "records_runs_of", None)
    if together is None or not together(run.run_store):
        return False
    pending = unsaved_messages(run)
    messages = await stored_messages(run, pending)
    await store.save_messages_and_run(resource_id=mem["resource_id"], thread_id=mem["thread_id"], messages=messages,
                                      run=record_dict(run))
    mem["saved_upto"] = mem.get("saved_upto", 0) + len(pending)
    return True


async def stored_messages(run: Any, pending: list[dict]) -> list[dict]:
    """``pending`` (the run's messages not saved yet) as memory stores them: through the transcript
    transforms, in Mastra's stored format (``stored_form``), each answer naming its agent and run
    (``answers_stamped``); a failed run adds its :func:`error_entry`. A tool result whose call was
    saved before (a run resumed after an approval) comes with that call's assistant message, saved
    again."""
    agent_id = getattr(run.agent, "id", None)
    failure = []
    if run.finish_reason == "error" and run.memory and not run.memory.get("read_only"):
        # the reason stays in the thread: a reader who reloads sees why the run failed
        error = run.error
        failure = [error_entry(message_id=new_id(), created_at=now_iso(), agent_id=agent_id, run_id=run.run_id,
                               code=getattr(error, "code", None) or "run_failed",
                               reason=redact_text(str(error)) if error else "the run failed")]
    if run.notices and run.memory and not run.memory.get("read_only"):
        # a soft budget's notice, then why the run failed; each notice is saved once
        failure = run.notices + failure
        run.notices = []
    if not pending:
        return failure
    mem = run.memory or {}
    earlier: list[dict] = []
    if answers_earlier_calls(pending):
        saved = (run.input_messages + run.response_messages)[:mem.get("saved_upto", 0)]
        earlier = run.remembered + await transcript_messages(run, saved)
    stored = stored_form(await transcript_messages(run, pending), earlier=earlier)
    return answers_stamped(stored, agent_id=agent_id, run_id=run.run_id, models=step_models(run.steps)) + failure


def answers_earlier_calls(messages: list[dict]) -> bool:
    """Whether a tool result in ``messages`` answers a call made before them."""
    calls = {p.get("toolCallId") for m in messages if m.get("role") == "assistant" and isinstance(m.get("content"), list)
             for p in m["content"] if isinstance(p, dict) and p.get("type") == "tool-call"}
    return any(isinstance(p, dict) and p.get("type") == "tool-result" and p.get("toolCallId") not in calls
               for m in messages if m.get("role") == "tool" for p in m.get("content") or [])


async def _record(run: Any) -> None:
    """Store the run record: always for memory runs, otherwise for runs that did not end well."""
    if run.run_store is None:
        return
    if run.memory is None and run.finish_reason not in ("error", "abort", "suspended") and not run.resumed:
        return
    try:
        await run.run_store.record_run(record_dict(run))
    except Exception:
        logger.exception("could not record run %s", run.run_id)




def record_dict(run: Any) -> dict:
    memory = run.memory
    owner = (run.request_context or {}).get(RESOURCE_ID_KEY) if isinstance(run.request_context, dict) else None
    return {
        "id": run.run_id, "agent_id": getattr(run.agent, "id", None),
        "resource_id": (memory and memory.get("resource_id")) or (owner if isinstance(owner, str) else None),
        "thread_id": memory and memory.get("thread_id"),
        "status": _STATUS.get(run.finish_reason, "completed"),
        "finish_reason": run.finish_reason, "usage": dict(run.usage),
        "error": redact_text(str(run.error)) if run.error else None,
        "error_code": getattr(run.error, "code", "error") if run.error else None, "started_at": run.started_at,
        "finished_at": now_iso(), "steps": len(run.steps),
        # the model that answered each step (``provider/model_id``): a fallback chain may change it
        "models": [s.model for s in run.steps],
    }
