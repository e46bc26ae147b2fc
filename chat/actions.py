"""What the chat websocket's client frames do, on one thread the caller may use.

Each action returns the frames to send back (besides the thread's chunks, which reach every
subscriber through the thread's stream) or raises a ``MastraError`` whose ``code`` the consumer
sends as an error frame. The thread's identity and the caller's right to it were checked when the
socket connected (``agents.access.Caller``); actions that name something by id (a run, a queued
input) pass the thread to the runtime, which refuses what is not of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.connections import async_twin
from agents.model_choice import amodel_choice_check
from agents.models import Run
from agents.registry import get_mastra
from agents.runtime.errors import SignalError
from agents.runtime.tracing import if_idle_with_channel

from .frames import Frame
from .snapshot import athread_queued


@dataclass(frozen=True)
class Target:
    """The agent and thread a socket is bound to, and its signed-in user."""

    agent: Any
    resource_id: str
    thread_id: str
    user: Any = None


def accepted_frame(result) -> dict:
    """The answer to a send: as the HTTP signal routes answer (``accepted``, ``action``, ``runId``,
    ``signal``), as a frame."""
    return {"type": "accepted", "action": result.action, "runId": result.run_id,
            "signal": {"id": result.signal.get("id"), "type": result.signal.get("type")}}


async def queue_frame(target: Target) -> dict:
    return {"type": "queue", "queued": await athread_queued(resource_id=target.resource_id,
                                                            thread_id=target.thread_id)}


async def message_send(target: Target, frame: Frame) -> list[dict]:
    """``send-message`` (deliver into the active run, or wake the thread) and ``queue-message``
    (a run of its own after the active one); ``model`` (an id) picks the model of the run the
    message starts, as ``agents.model_choice`` allows the socket's user."""
    message: Any = {"contents": frame.message, "attributes": frame.attributes} if frame.attributes else frame.message
    send = target.agent.queue_message if frame.type == "queue-message" else target.agent.send_message
    branches: dict = {}
    if frame.model is not None:
        options = {"model": frame.model}
        await amodel_choice_check(options, agent=target.agent, user=target.user)
        branches["if_idle"] = {"stream_options": options}
    # a run the message starts was started from the chat page (the cost ledger's channel)
    branches["if_idle"] = if_idle_with_channel(branches.get("if_idle"), "chat")
    result = await send(message, resource_id=target.resource_id, thread_id=target.thread_id, **branches)
    frames = [accepted_frame(result)]
    if frame.type == "queue-message":
        frames.append(await queue_frame(target))
    return frames


async def run_abort(target: Target, frame: Frame) -> list[dict]:
    aborted = await target.agent.abort_thread(resource_id=target.resource_id, thread_id=target.thread_id)
    return [{"type": "abort-requested", "aborted": aborted}]


@async_twin
def run_agent_id(run_id: str) -> str | None:
    """The agent of run ``run_id``, else None (whose thread it is, the runtime checks)."""
    return Run.objects.filter(pk=run_id).values_list("agent_id", flat=True).first()


async def tool_decide(target: Target, frame: Frame) -> list[dict]:
    """Approve or decline the pending tool call of a run of this thread; the run continues with
    its own agent (the page may have switched agents since) and streams to the thread's subscribers.
    The decision is scoped to the socket's thread: a run of any other is ``approval_not_found``."""
    agent_id = await run_agent_id(frame.run_id) if isinstance(frame.run_id, str) else None
    agent = get_mastra().get_agents().get(agent_id, target.agent) if agent_id != target.agent.id else target.agent
    decide = agent.approve_tool_call if frame.approved else agent.decline_tool_call
    await decide(run_id=frame.run_id, tool_call_id=frame.tool_call_id, resource_id=target.resource_id,
                 thread_id=target.thread_id)
    return []


async def queued_cancel(target: Target, frame: Frame) -> list[dict]:
    cancelled = await target.agent.cancel_queued_inputs([frame.signal_id], resource_id=target.resource_id,
                                                        thread_id=target.thread_id)
    if not cancelled:
        raise SignalError(f"no input {frame.signal_id!r} waits in this thread", code="queued_input_not_found")
    return [await queue_frame(target)]


async def ping(target: Target, frame: Frame) -> list[dict]:
    return [{"type": "pong"}]


ACTIONS = {"send-message": message_send, "queue-message": message_send, "abort": run_abort,
           "tool-approval": tool_decide, "cancel-queued": queued_cancel, "ping": ping}
