"""Inputs are accepted a few at a time, so that accepting them does not crowd out the runs going on.

A process's event loop runs everything ready in the order it became ready. Without a limit, every
input that arrives is accepted at once: with 50 ``send-message`` requests in flight, the loop holds
the pieces of 50 acceptances (the transaction's result, the run's start, the first chunk) between
any two steps of a run already going, and a run waits its turn behind all of them. Measured with
500 runs in one daphne process (``bench/concurrency.py``; docs/deployment.md, "Sizing"), accepting
one input at a time brought the time between a run's model steps from p99 45 to 77 ms down to 16 to
21 ms on SQLite (29 to 76 down to 14 to 16 on PostgreSQL and Redis), and the event loop's lag p99
under half, while the 500 inputs took as long to be accepted: their database work went one at a
time already (the thread runtime's database thread).

:class:`AcceptGate` holds that limit (``MASTRA_ACCEPTS_AT_ONCE``; 0: none). The inputs waiting for a
turn take it in the order they came to the gate (asyncio's semaphore is first come, first served);
one whose caller gives up meanwhile takes none. An input sent by code that runs while an acceptance
holds the gate (an agent's instructions resolver, a thread-events listener, the run a wake starts
and anything it sends, any task they start) goes through without waiting: it cannot wait for the
acceptance that is running it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from typing import AsyncIterator

#: the gate whose turn the current task (or the task that started it) holds
_HOLDING: contextvars.ContextVar["AcceptGate | None"] = contextvars.ContextVar("mastra_accept_turn", default=None)


class AcceptGate:
    """At most ``limit`` acceptances at once on an event loop (``0``: no limit)."""

    def __init__(self, limit: int):
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise ValueError(f"the number of inputs accepted at once must be an integer >= 0, not {limit!r}")
        self.limit = limit
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore: asyncio.Semaphore | None = None

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Wait for a turn (none with no limit, or inside a turn of this gate), hold it while the
        block runs."""
        if not self.limit or _HOLDING.get() is self:
            yield
            return
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a semaphore serves the loop it first waited on
            self._loop, self._semaphore = loop, asyncio.Semaphore(self.limit)
        async with self._semaphore:
            held = _HOLDING.set(self)
            try:
                yield
            finally:
                _HOLDING.reset(held)
