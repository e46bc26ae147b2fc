"""A run's processors at work: each hook called at its point of the run, with its ``abort`` and its
per-run ``state`` (the protocol is in ``agents.runtime.processors``).

A :class:`~agents.runtime.run.hooks.TripWire` out of a hook ends the run (or retries the step);
any other exception becomes a :class:`ProcessorError` naming the processor and the hook.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from ..errors import AbortError, MastraError, ProcessorError
from ..processors import hook_call, processor_id
from .hooks import TripWire, maybe_await

NOTHING = object()
#: the chunks that end a run: they go out even after a stream processor failed (without it)
CLOSING_CHUNKS = frozenset({"error", "abort", "tripwire", "finish"})

logger = logging.getLogger(__name__)


def processor_abort(processor: Any) -> Callable:
    """The ``abort(reason, retry=..., metadata=...)`` a processor's hooks receive."""
    def abort(reason: str = "blocked", *, retry: bool = False, metadata: Any = None):
        raise TripWire(reason, retry=retry, metadata=metadata, processor_id=processor_id(processor))
    return abort


async def hook_run(run: Any, processor: Any, name: str, /, **kwargs: Any) -> Any:
    """Call ``processor.<name>`` (NOTHING when it has no such hook) with the run's arguments."""
    hook = getattr(processor, name, None)
    if hook is None:
        return NOTHING
    state = run.processor_states.setdefault(id(processor), {})
    # one span per hook call, but not per streamed chunk
    span = run.span.create_child_span(name=f"processor: '{processor_id(processor)}' {name}", type="processor",
                                      attributes={"processor_id": processor_id(processor), "hook": name}
                                      ) if run.span is not None and name != "process_output_stream" else None
    try:
        result = await maybe_await(hook_call(hook, {**kwargs, "abort": processor_abort(processor), "state": state,
                                                    "request_context": run.request_context}))
    except (TripWire, AbortError, asyncio.CancelledError, MastraError) as exc:
        if span is not None:
            span.end(error=exc, attributes={"tripwire": exc.reason} if isinstance(exc, TripWire) else None)
        raise
    except Exception as exc:
        error = ProcessorError(f"processor {processor_id(processor)!r} failed in {name}: {type(exc).__name__}: {exc}",
                               details={"processorId": processor_id(processor), "hook": name})
        if span is not None:
            span.end(error=error)
        raise error from exc
    if span is not None:
        span.end()
    return result


async def input_run(run: Any) -> None:
    """``process_input`` of each input processor, before the first step."""
    for processor in run.input_processors:
        result = await hook_run(run, processor, "process_input", messages=run.messages)
        if isinstance(result, list):
            run.messages[:] = result


async def input_step_run(run: Any, messages: list[dict], step_number: int) -> list[dict]:
    """``process_input_step`` of each input processor: the messages of this step."""
    for processor in run.input_processors:
        result = await hook_run(run, processor, "process_input_step", messages=messages, step_number=step_number,
                                steps=run.steps, send_signal=run.send_signal, run=run)
        if isinstance(result, list):
            messages = result
    return messages


async def output_stream_run(run: Any, chunk: dict) -> list[dict]:
    """The chunks to emit for ``chunk`` after every output processor's ``process_output_stream``."""
    chunks = [chunk]
    for processor in run.output_processors:
        if getattr(processor, "process_output_stream", None) is None:
            continue
        out: list[dict] = []
        for item in chunks:
            result = await hook_run(run, processor, "process_output_stream", chunk=item)
            if isinstance(result, list):
                out.extend(result)
            elif result is not None:
                out.append(result)
        chunks = out
    return chunks


async def stream_out(run: Any, chunk: dict) -> list[dict]:
    """What goes out for ``chunk`` of a run with output processors. A ``process_output_stream`` that
    fails raises its error (the run ends with it), and from then on only the run's end
    (``CLOSING_CHUNKS``) goes out, as the run made it; a tripwire is raised as well. On a closing
    chunk nothing is raised: the run's end goes out whatever a stream processor makes of it (a
    failure is logged)."""
    if run.stream_failed:
        return [chunk] if chunk["type"] in CLOSING_CHUNKS else []
    try:
        return await output_stream_run(run, chunk)
    except (MastraError, TripWire) as exc:
        failed = isinstance(exc, MastraError)
        run.stream_failed = failed
        if chunk["type"] not in CLOSING_CHUNKS:
            raise  # the run ends with this error (ProcessorError names the processor) or tripwire
        if failed:
            logger.warning("run %s: an output processor failed on its %s chunk; the chunk goes out as it is",
                           run.run_id, chunk["type"], exc_info=True)
        return [chunk]


async def output_result_run(run: Any, text: str) -> str:
    """``process_output_result`` of each output processor: the result text. A tripwire here is
    recorded on the run (the model's answer is withheld from nobody: the run already streamed)."""
    for processor in run.output_processors:
        try:
            changed = await hook_run(run, processor, "process_output_result", messages=run.response_messages,
                                     text=text)
        except TripWire as trip:
            await tripwire_record(run, trip)
            continue
        if isinstance(changed, str):
            text = changed
    return text


async def tripwire_record(run: Any, trip: TripWire) -> None:
    """End the run on a processor's tripwire: ``result.tripwire`` and a ``tripwire`` chunk."""
    run.tripwire = trip.to_dict()
    await run.send(run.chunk("tripwire", {"reason": trip.reason, "processorId": trip.processor_id}))


__all__ = ["CLOSING_CHUNKS", "NOTHING", "hook_run", "input_run", "input_step_run", "output_result_run",
           "output_stream_run", "processor_abort", "stream_out", "tripwire_record"]
