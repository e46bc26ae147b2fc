"""``AgentOutput``: the handle ``stream()`` returns.

The run starts at once in its own task and buffers its chunks, so a consumer may start reading late
(or several consumers may read): each ``full_stream`` iteration replays the run from its first chunk.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Awaitable, Callable

from .results import GenerateResult


class AgentOutput:
    """A run's output as it streams. Made before the run (the run is built with :meth:`emit` as its
    chunk sink), then :meth:`start` runs it."""

    def __init__(self, run_id: str, *, on_chunk: Callable | None = None):
        self.run_id = run_id
        self.chunks: list[dict] = []
        self._waiters: list[asyncio.Future] = []
        self._on_chunk = on_chunk
        self._result: GenerateResult | None = None
        self._task: asyncio.Future | None = None

    def start(self, run: Awaitable[GenerateResult]) -> "AgentOutput":
        """Run ``run`` (the run that emits into this output); returns this output."""
        if self._task is not None:
            raise RuntimeError("this output's run has started already")
        self._task = asyncio.ensure_future(run)
        self._task.add_done_callback(self._done)
        return self

    def emit(self, chunk: dict) -> Any:
        """A chunk of the run: kept, handed to ``on_chunk``, and to every reader waiting."""
        self.chunks.append(chunk)
        self._wake()
        if self._on_chunk is not None:
            return self._on_chunk(chunk)
        return None

    def _wake(self) -> None:
        if self._waiters:
            waiters, self._waiters = self._waiters, []
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    def _done(self, task: asyncio.Task) -> None:
        if not task.cancelled() and task.exception() is None:
            self._result = task.result()
        self._wake()

    @property
    def done(self) -> bool:
        return self._task.done()

    @property
    def full_stream(self) -> AsyncIterator[dict]:
        """Every chunk of the run from the start, then live until the run ends."""
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[dict]:
        index = 0
        while True:
            while index < len(self.chunks):
                yield self.chunks[index]
                index += 1
            if self._task.done():
                if index >= len(self.chunks):
                    return
                continue
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            await fut

    @property
    def text_stream(self) -> AsyncIterator[str]:
        async def texts():
            async for chunk in self._iterate():
                if chunk["type"] == "text-delta":
                    yield chunk["payload"]["text"]
        return texts()

    async def consume_stream(self, on_error: Callable[[BaseException], Any] | None = None) -> None:
        """Wait for the run to end. Errors of the run are in the result; bugs are re-raised or
        passed to ``on_error``."""
        try:
            await asyncio.shield(self._task)
        except Exception as exc:
            if on_error is None:
                raise
            on_error(exc)

    async def get_full_output(self) -> GenerateResult:
        await asyncio.shield(self._task)
        return self._task.result()

    async def get_text(self) -> str:
        return (await self.get_full_output()).text

    @property
    def result(self) -> GenerateResult | None:
        """The result once the run has ended, else None."""
        return self._result

    def __await__(self):
        return self.get_full_output().__await__()
