"""Thread events (Mastra's ``Agent.subscribeThreadEvents``): what a thread's queue looks like, for
a client that shows it ("2 messages queued").

Mastra emits one event, ``{"type": "queue-count-changed", "count": n}``: ``n`` is the number of
messages waiting for a run of their own (``queue_message`` on an active thread, and a wake that
waits behind another agent's run), and a listener gets the current count when it subscribes, then
each new count (never the same count twice in a row). Mastra counts the queue of its own process;
here the queue is in the thread store, so the count is the thread's, whichever process accepted
the inputs or runs them: a process that changes the queue (accepts a queued input, starts the run
of one, cancels some) publishes ``{"kind": "queue-changed"}`` on the thread's pub/sub, beside its
chunks, and every process with listeners on the thread reads the count again from the store. The
store is the source of truth; a lost pub/sub message delays an event until the next change.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Callable

from .decision import QUEUE
from .store import PubSub, ThreadStore

logger = logging.getLogger(__name__)

QUEUE_COUNT_CHANGED = "queue-count-changed"


@dataclass(eq=False)
class Listener:
    key: str
    callback: Callable[[dict], Any]
    last_count: int | None = None
    active: bool = field(default=True)


class ThreadEvents:
    """The thread event listeners of one process, by thread key.

    ``publish(key)`` tells other processes a thread's queue changed (best effort, never raises);
    :meth:`changed` is called where this process changed a queue, :meth:`refresh` when another
    process said so."""

    def __init__(self, store: ThreadStore, pubsub: PubSub | None, process_id: str, *, failures: Any):
        self.store = store
        self.pubsub = pubsub
        self.process_id = process_id
        self.failures = failures
        self.by_key: dict[str, list[Listener]] = {}
        self._lock = asyncio.Lock()  # counts are read and told in order: an older one never comes last

    def __contains__(self, key: str) -> bool:
        return bool(self.by_key.get(key))

    async def queued_count(self, key: str) -> int:
        """Inputs of the thread waiting for a run of their own."""
        return sum(1 for item in await self.store.list_queued(key=key) if item.get("kind") == QUEUE)

    async def add(self, key: str, callback: Callable[[dict], Any]) -> Listener:
        """Register ``callback`` and give it the current count."""
        listener = Listener(key, callback)
        self.by_key.setdefault(key, []).append(listener)
        async with self._lock:
            await self._notify(listener, await self.queued_count(key))
        return listener

    def remove(self, listener: Listener) -> None:
        listener.active = False
        listeners = self.by_key.get(listener.key)
        if listeners is not None and listener in listeners:
            listeners.remove(listener)
            if not listeners:
                self.by_key.pop(listener.key, None)

    async def refresh(self, key: str) -> None:
        """Read the thread's count again and tell the listeners whose last count differs."""
        listeners = list(self.by_key.get(key, ()))
        if not listeners:
            return
        async with self._lock:
            count = await self.queued_count(key)
            for listener in listeners:
                await self._notify(listener, count)

    async def changed(self, key: str) -> None:
        """This process changed the thread's queue: its listeners, then the other processes'."""
        try:
            await self.refresh(key)
        except Exception:
            logger.exception("could not read the queue of thread %r for its listeners", key)
        if self.pubsub is None:
            return
        try:
            await self.pubsub.publish(key, {"kind": "queue-changed", "origin": self.process_id})
        except Exception:
            self.failures.failed("publish a queue change")
        else:
            self.failures.succeeded()

    async def _notify(self, listener: Listener, count: int) -> None:
        if not listener.active or count == listener.last_count:
            return
        listener.last_count = count
        try:
            result = listener.callback({"type": QUEUE_COUNT_CHANGED, "count": count})
            if hasattr(result, "__await__"):
                await result
        except Exception:  # a listener's error is its own (Mastra ignores it too)
            logger.exception("a thread event listener of %r raised", listener.key)
