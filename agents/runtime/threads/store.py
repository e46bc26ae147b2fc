"""The thread runtime's storage and messaging seams: the :class:`ThreadStore` and :class:`PubSub`
protocols, and the runtime's name of a thread (:func:`thread_key`).

Two stores implement :class:`ThreadStore`: ``agents.threads.store.DjangoThreadStore`` on the
database, and :class:`~agents.runtime.threads.memory_store.InMemoryThreadStore` for runtime tests.
Both pass the same contract tests (``tests/runtime/threads/store_contract.py``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol


def thread_key(resource_id: str, thread_id: str) -> str:
    """The runtime's name of a thread (the key of its lease, inputs and events)."""
    return f"{resource_id}\x1f{thread_id}"


def group_name(key: str) -> str:
    """A channel-layer group name for a thread (ASCII, short, stable)."""
    return "mastra.thread." + hashlib.sha1(key.encode()).hexdigest()


@dataclass(frozen=True)
class RunLease:
    """The lease a run starts (or resumes) under: it numbers its chunks after ``last_seq`` and logs
    any beyond ``reserved_seq`` before it hands them out; ``token`` fences its writes. ``signals`` are
    the inputs it answers (as stored, with their rendered content); ``events``: the echo chunks a
    takeover wrote for inputs persisted during the dead run (published by the new owner)."""

    key: str
    run_id: str
    token: int
    last_seq: int
    reserved_seq: int
    agent_id: str
    resource_id: str
    thread_id: str
    signals: list[dict] = field(default_factory=list)
    stream_options: dict = field(default_factory=dict)
    events: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class Acceptance:
    """What :meth:`ThreadStore.accept` decided and stored for one input.

    ``action``: ``wake`` (``lease``: the run it starts, ``prepared`` its memory when asked),
    ``deliver`` (``run_id``: the active run, or a new one for a ``queued`` input), ``persist``
    (``events``: the synthetic run written on an idle thread), ``discard``, ``blocked``
    (``reason``, ``run_id`` of the holder) or ``skipped`` (a state signal that is current)."""

    action: str
    key: str | None
    signal: dict
    resource_id: str | None
    thread_id: str | None
    run_id: str | None = None
    reason: str | None = None
    queued: bool = False
    events: list[dict] = field(default_factory=list)
    lease: RunLease | None = None
    prepared: tuple | None = None


@dataclass(frozen=True)
class RunEnd:
    """What :meth:`ThreadStore.finish` did: ``next`` is the lease of the run started for waiting
    inputs (None: the thread is idle), ``events`` the echo chunks written for inputs persisted
    during the run; ``fenced``: the lease had been taken over, nothing was written; ``failed``: the
    end could not be written and the run ended failed instead."""

    next: RunLease | None = None
    events: list[dict] = field(default_factory=list)
    fenced: bool = False
    failed: bool = False


@dataclass(frozen=True)
class Renewal:
    """A lease renewal: ``ok`` False when the caller lost the lease; ``abort`` when an abort was
    requested for its run."""

    ok: bool
    abort: bool = False


@dataclass(frozen=True)
class AbortRequest:
    """An abort asked of a thread's active run ``run_id``: a suspended run is ended in the store
    (``released``, with its ``events``); a running one is flagged for its owner."""

    run_id: str
    events: list[dict] = field(default_factory=list)
    released: bool = False


class ThreadStore(Protocol):
    """What the thread runtime needs from storage (``agents.threads.store.DjangoThreadStore`` on the
    database). Every method is one transaction; ``key`` is the runtime's name of a thread
    (:func:`thread_key`). Lease changes are fenced by the owner's run id and ``token``."""

    def prepares_memory_of(self, memory_store: Any) -> bool:
        """Whether ``accept`` can prepare ``memory_store``'s thread and history for a wake."""
        ...

    async def accept(self, *, key: str | None, agent_id: str, resource_id: str | None, thread_id: str | None,
                     signal: dict, mode: str, if_active: dict, if_idle: dict, target_run_id: str | None,
                     new_run_id: str, stream_options: dict, ttl_ms: int, process_id: str, state: dict | None,
                     prepare: dict | None) -> Acceptance:
        """Store one input and decide (DESIGN §4's table, ``decision.input_decide``)."""
        ...

    async def take_inputs(self, *, key: str, run_id: str, token: int) -> list[dict]:
        """Waiting inputs for the owner's next step, marked consumed: ``[{"kind", "signal"}]``."""
        ...

    async def finish(self, *, key: str, run_id: str, token: int, last_seq: int, new_run_id: str, process_id: str,
                     ttl_ms: int, events: list[dict] | None = None, messages: list[dict] | None = None,
                     record: dict | None = None) -> RunEnd:
        """End a run: write its last events, messages and record; start the next run or go idle."""
        ...

    async def renew(self, *, key: str, run_id: str, token: int, ttl_ms: int) -> Renewal:
        """Extend the owner's lease."""
        ...

    async def append_events(self, *, key: str, token: int, events: list[dict], reserve: int | None = None) -> bool:
        """Write numbered chunks to the event log and, with ``reserve``, reserve the seqs up to it for
        the owner (``reserved_seq``); False when ``token`` lost the lease."""
        ...

    async def append_events_many(self, *, writes: list[dict]) -> list[bool]:
        """Several :meth:`append_events` at once (``[{"key", "token", "events", "reserve"}]``, in
        order), each fenced by its own token: one result per write (an exception in place of a
        write that failed on its own, when the store could tell). A store written by many runs at
        once makes it few transactions; a store without it gets one ``append_events`` per write
        (``events.EventLogWriter``). Raising means nothing was written."""
        ...

    async def read_events(self, *, key: str, after_seq: int | None = None, run_id: str | None = None) -> list[dict]:
        """Logged chunks after ``after_seq`` (a snapshot first when pruned), or those of ``run_id``."""
        ...

    async def thread_state(self, *, key: str) -> dict | None:
        """``{"active_run_id", "status", "agent_id", "last_seq"}``, or None for an unknown thread."""
        ...

    async def request_abort(self, *, key: str) -> AbortRequest | None:
        """Abort the active run; None when the thread is idle."""
        ...

    async def suspend(self, *, key: str, run_id: str, token: int, last_seq: int,
                      events: list[dict] | None = None) -> None:
        """The run waits on a tool approval: the thread stays held without expiry."""
        ...

    async def resume(self, *, run_id: str, process_id: str, ttl_ms: int) -> RunLease | None:
        """Take the suspended run's lease again; None when it is not suspended."""
        ...

    async def recover(self, *, process_id: str, ttl_ms: int, new_run_id: Callable[[], str],
                      agent_ids: list[str] | None = None) -> list[RunLease]:
        """The leases of the runs started for dead owners' threads and waiting inputs."""
        ...

    async def list_queued(self, *, key: str) -> list[dict]:
        """Inputs waiting for a run, oldest first."""
        ...

    async def cancel_queued(self, *, key: str, ids: list[str]) -> int:
        """Cancel waiting inputs of the thread ``key``; how many were still waiting there."""
        ...


class PubSub(Protocol):
    """Thread messages between processes (``agents.threads.pubsub.ChannelLayerPubSub``): a message
    published for a thread reaches every process subscribed to it, the sender included; losing one
    loses nothing (subscribers fill gaps from the event log). A pub/sub may also have
    ``publish_many([(key, message), ...])``: the same, in order, at once (one Redis round trip); the
    runtime's outbox uses it when there."""

    async def publish(self, key: str, message: dict) -> None: ...

    async def subscribe(self, key: str, callback: Callable[[dict], None]) -> Callable[[], Any]: ...


__all__ = ["AbortRequest", "Acceptance", "PubSub", "Renewal", "RunEnd", "RunLease", "ThreadStore", "group_name",
           "thread_key"]
