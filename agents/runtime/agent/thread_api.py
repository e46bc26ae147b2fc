"""An agent's thread API (DESIGN §3-§4): subscribe, send messages and signals, abort, the queue.

Each function checks the agent's side (it needs memory) and hands the work to this process's
thread runtime (``agents.runtime.threads``). ``Agent``'s methods of the same names delegate here.
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import AgentConfigError, SignalError
from ..messages import new_id
from ..output import AgentOutput
from ..run import ThreadHooks
from ..signal import create_signal, message_to_signal, state_to_signal
from ..threads import ThreadSubscription, get_thread_runtime, thread_key
from ..threads.inputs import SendResult
from .building import run_build, options_merge, run_execute


def thread_runtime_for(agent: Any, feature: str):
    """This process's thread runtime, for ``feature`` (named in the error): raises
    :class:`AgentConfigError` when the agent has no memory (threads need one)."""
    if agent.memory is None:
        raise AgentConfigError("memory", f"{feature} needs memory=Memory() on agent {agent.id!r}")
    return get_thread_runtime()


async def thread_stream_start(agent: Any, messages: list[dict], options: dict, *, hooks: ThreadHooks,
                              prepared: tuple | None = None) -> AgentOutput:
    """Start a thread run (the thread runtime passes its ``hooks``) and return its output. Every
    chunk goes to ``hooks.emit``; the output completes after ``hooks.finalize(result)``."""
    options = await options_merge(agent, options)
    output = AgentOutput(options.get("run_id") or new_id(), on_chunk=hooks.emit)
    run = await run_build(agent, messages, options, output.emit, run_id=output.run_id, prepared=prepared,
                          hooks=hooks)

    async def execute():
        result = await run_execute(run)
        await hooks.finalize(result)
        return result

    return output.start(execute())


async def thread_subscribe(agent: Any, *, resource_id: str, thread_id: str,
                           after_seq: int | None = None) -> ThreadSubscription:
    """Subscribe to a memory thread's chunks (each with ``seq``); ``after_seq`` resumes after it."""
    runtime = thread_runtime_for(agent, "subscribe_to_thread")
    for name, value in (("resource_id", resource_id), ("thread_id", thread_id)):
        if not isinstance(value, str) or not value:
            raise SignalError(f"{name} must be a non-empty string", code="missing_target")
    if after_seq is not None and (not isinstance(after_seq, int) or isinstance(after_seq, bool) or after_seq < 0):
        raise SignalError("after_seq must be a non-negative integer", code="invalid_after_seq")
    return await runtime.subscribe(agent, resource_id, thread_id, after_seq)


async def thread_send(agent: Any, signal: dict, mode: str, *, what: str, resource_id: str | None = None,
                      thread_id: str | None = None, run_id: str | None = None, if_active: dict | None = None,
                      if_idle: dict | None = None, state: dict | None = None) -> SendResult:
    """Send one input (``mode`` ``send`` or ``queue``) for the public method ``what``."""
    runtime = thread_runtime_for(agent, what)
    return await runtime.send(agent, signal=signal, mode=mode, resource_id=resource_id, thread_id=thread_id,
                              run_id=run_id, if_active=if_active, if_idle=if_idle, state=state)


async def message_send(agent: Any, message: Any, *, queue: bool = False, **target: Any) -> SendResult:
    """``send_message`` (``queue=False``) and ``queue_message``."""
    return await thread_send(agent, message_to_signal(message), "queue" if queue else "send",
                             what="queue_message" if queue else "send_message", **target)


async def signal_send(agent: Any, signal: dict, **target: Any) -> SendResult:
    return await thread_send(agent, create_signal(signal), "send", what="send_signal", **target)


async def state_signal_send(agent: Any, state: dict, **target: Any) -> SendResult:
    signal, tracking = state_to_signal(state)
    return await thread_send(agent, signal, "send", what="send_state_signal", state=tracking, **target)


async def thread_abort(agent: Any, *, resource_id: str, thread_id: str) -> bool:
    return await thread_runtime_for(agent, "abort_thread").abort(thread_key(resource_id, thread_id))


async def thread_events_subscribe(agent: Any, *, resource_id: str, thread_id: str,
                                  listener: Callable[[dict], Any]) -> Callable[[], None]:
    """Mastra's ``subscribeThreadEvents``: ``listener`` gets ``{"type": "queue-count-changed",
    "count"}`` now and at each change of the thread's queue (``threads.thread_events``)."""
    runtime = thread_runtime_for(agent, "subscribe_thread_events")
    for name, value in (("resource_id", resource_id), ("thread_id", thread_id)):
        if not isinstance(value, str) or not value:
            raise SignalError(f"{name} must be a non-empty string", code="missing_target")
    if not callable(listener):
        raise SignalError("listener must be callable", code="invalid_listener")
    return await runtime.subscribe_thread_events(resource_id, thread_id, listener)


async def queued_inputs_list(agent: Any, *, resource_id: str, thread_id: str) -> list[dict]:
    return await thread_runtime_for(agent, "list_queued_inputs").list_queued(resource_id, thread_id)


async def queued_inputs_cancel(agent: Any, ids: list[str], *, resource_id: str, thread_id: str) -> int:
    return await thread_runtime_for(agent, "cancel_queued_inputs").cancel_queued(resource_id, thread_id, ids)


__all__ = ["message_send", "queued_inputs_cancel", "queued_inputs_list", "signal_send", "state_signal_send",
           "thread_abort", "thread_events_subscribe", "thread_runtime_for", "thread_send", "thread_stream_start",
           "thread_subscribe"]
