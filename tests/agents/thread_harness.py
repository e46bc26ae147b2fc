"""Shared helpers of the thread-signal tests (tests/agents/test_thread_*.py, test_state_signals.py).

Every wait is bounded (``asyncio.wait_for``) so that a broken runtime fails a test instead of hanging it.
"""

from __future__ import annotations

import asyncio
from typing import Callable

from asgiref.sync import sync_to_async

from agents.memory import Memory
from agents.runtime import Agent
from agents.runtime.providers.echo import EchoModel
from agents.runtime.testing import drain_thread_runtime
from agents.runtime.threads import get_thread_runtime

TIMEOUT = 5.0


class GatedEcho(EchoModel):
    """``local/echo`` that holds its model calls at a gate until the test opens it (``open()``):
    before its first event (``after=0``) or after ``after`` events, so a run stays active (or a
    model call stays in flight) for as long as a test needs, whatever the machine's load."""

    def __init__(self, *, after: int = 0):
        super().__init__()
        self.gate = asyncio.Event()
        self.after = after
        self.calls = 0

    def open(self) -> None:
        self.gate.set()

    def close(self) -> None:
        self.gate = asyncio.Event()

    async def stream(self, request):
        self.calls += 1
        if self.after == 0:
            await asyncio.wait_for(self.gate.wait(), TIMEOUT)
        sent = 0
        async for event in super().stream(request):
            yield event
            sent += 1
            if sent == self.after:
                await asyncio.wait_for(self.gate.wait(), TIMEOUT)


def make_agent(id: str = "bot", delay: float = 0, *, model=None, memory=None, gate: int | None = None,
               **kwargs) -> Agent:
    """An agent on ``local/echo`` (``delay`` ms before each streamed line keeps a run active;
    ``gate=N`` uses :class:`GatedEcho` holding after N events, opened with ``agent.model.open()``)."""
    if gate is not None:
        model = GatedEcho(after=gate)
    return Agent(id=id, instructions="You are a test agent.",
                 model=model if model is not None else {"id": "local/echo", "delay_ms": delay},
                 memory=memory if memory is not None else Memory(), **kwargs)


async def finish(agent: Agent, output):
    """Open the agent's gate (if any) and wait for the run's result."""
    if isinstance(agent.model, GatedEcho):
        agent.model.open()
    return await bounded(output.get_full_output())


async def bounded(awaitable, timeout: float = TIMEOUT):
    return await asyncio.wait_for(awaitable, timeout)


async def collect(sub, until: Callable[[dict], bool] | str = "finish", n: int = 1,
                  timeout: float = TIMEOUT) -> list[dict]:
    """Read ``sub.stream`` until ``n`` chunks matched ``until`` (a chunk type or a predicate)."""
    match = (lambda c: c["type"] == until) if isinstance(until, str) else until
    out: list[dict] = []

    async def go():
        count = 0
        async for chunk in sub.stream:
            out.append(chunk)
            if match(chunk):
                count += 1
                if count == n:
                    return

    await asyncio.wait_for(go(), timeout)
    return out


def buffered(sub) -> list[dict]:
    """Chunks a subscription holds that nobody read yet (without waiting)."""
    return sub.take_buffered()


def finish_of(sub_chunks: list[dict], run_id: str | None = None) -> dict:
    finishes = [c for c in sub_chunks if c["type"] == "finish" and (run_id is None or c["runId"] == run_id)]
    assert len(finishes) == 1, finishes
    return finishes[0]


def texts_by_run(chunks: list[dict]) -> dict[str, str]:
    """The streamed text of every run (in order of first appearance)."""
    out: dict[str, str] = {}
    for c in chunks:
        if c["type"] == "start":
            out.setdefault(c["runId"], "")
        if c["type"] == "text-delta":
            out[c["runId"]] = out.get(c["runId"], "") + c["payload"]["text"]
    return out


def ends_run(chunk: dict) -> bool:
    """The last chunk of a run on a thread: ``abort`` (an aborted run ends there, as Mastra's), or a
    ``finish`` that is not a pause on tool calls or an approval."""
    return chunk["type"] == "abort" or (
        chunk["type"] == "finish" and chunk["payload"]["stepResult"]["reason"] not in ("tool-calls", "suspended"))


def types(chunks: list[dict]) -> list[str]:
    return [c["type"] for c in chunks]


def starts(chunks: list[dict]) -> list[str]:
    return [c["runId"] for c in chunks if c["type"] == "start"]


async def wait_for_chunk(sub, predicate: Callable[[dict], bool], timeout: float = TIMEOUT) -> list[dict]:
    return await collect(sub, predicate, 1, timeout)


async def settle(timeout: float = TIMEOUT) -> None:
    """Let every background run and event flush of this loop's runtime finish; fails the test when
    they are not done within ``timeout`` seconds."""
    await drain_thread_runtime(get_thread_runtime(), timeout=timeout)


async def wait_idle(resource_id: str, thread_id: str, timeout: float = TIMEOUT) -> None:
    """Wait until the thread's lease is released (the last run ended and nothing waits)."""
    from agents.models import ThreadLease

    async def idle():
        while True:
            lease = await sync_to_async(lambda: ThreadLease.objects.filter(
                thread__resource_id=resource_id, thread__thread_id=thread_id).first())()
            if lease is None or lease.owner_run_id is None:
                return
            await asyncio.sleep(0.01)

    await asyncio.wait_for(idle(), timeout)


@sync_to_async
def db(fn: Callable):
    """Run ``fn()`` (ORM queries) in the worker thread."""
    return fn()


@sync_to_async
def counts() -> dict:
    from agents.models import Message, ThreadEvent, ThreadInput, ThreadLease

    return {"inputs": ThreadInput.objects.count(), "messages": Message.objects.count(),
            "events": ThreadEvent.objects.count(), "leases": ThreadLease.objects.count()}


@sync_to_async
def inputs(thread_id: str) -> list[dict]:
    from agents.models import ThreadInput

    return list(ThreadInput.objects.filter(thread__thread_id=thread_id).order_by("id").values(
        "input_id", "kind", "status", "run_id", "consumed_by", "agent_id"))


@sync_to_async
def history(thread_id: str) -> list[dict]:
    """The thread's history as the model is shown it (read from Mastra's stored format: a signal as
    its XML in a ``user`` message, a tool call's results as a ``tool`` message)."""
    from agents.models import Message
    from agents.runtime.stored_messages import to_model_messages

    return to_model_messages([m.to_dict() for m in Message.objects.filter(thread__thread_id=thread_id).order_by("id")])


def user_contents(messages: list[dict]) -> list:
    return [m["content"] for m in messages if m["role"] == "user"]
