"""Server-sent events as ``@mastra/client-js`` reads them (DESIGN §5): each event is exactly one
``data: <json>`` line and a blank line, no ``id:`` or ``event:`` lines; comments (``: connected``,
``: keep-alive``) for the connection; ``data: [DONE]`` ends a generate-style stream (never a thread
subscription)."""

from __future__ import annotations

import asyncio
from typing import AsyncIterator

from django.conf import settings
from django.http import StreamingHttpResponse

from agents.json_text import dumps_compact

CONNECTED = b": connected\n\n"
KEEP_ALIVE = b": keep-alive\n\n"
DONE = b"data: [DONE]\n\n"


def sse_event(chunk: dict) -> bytes:
    return b"data: " + dumps_compact(chunk).encode() + b"\n\n"


def keepalive_interval() -> float:
    return float(settings.MASTRA_API_KEEPALIVE_S)


async def with_keepalive(chunks: AsyncIterator[dict], interval: float) -> AsyncIterator[bytes]:
    """Events for ``chunks``, with a keep-alive comment after every ``interval`` seconds of silence.
    The pending read survives a keep-alive (cancelling it would end the source generator). A
    thread subscription has a timed read of its own (``ThreadSubscription.read``)."""
    iterator = chunks.__aiter__()
    pending: asyncio.Future | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(iterator.__anext__())
            done, _ = await asyncio.wait({pending}, timeout=interval)
            if not done:
                yield KEEP_ALIVE
                continue
            try:
                chunk = pending.result()
            except StopAsyncIteration:
                return
            finally:
                pending = None
            yield sse_event(chunk)
    finally:
        if pending is not None:
            pending.cancel()


async def run_events(chunks: AsyncIterator[dict]) -> AsyncIterator[bytes]:
    """A generate-style stream: every chunk, then ``[DONE]``."""
    async for chunk in with_keepalive(chunks, keepalive_interval()):
        yield chunk
    yield DONE


def sse_response(events: AsyncIterator[bytes]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(events, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
