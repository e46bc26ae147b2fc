"""Thread messages between processes on a Channels layer (one group per thread).

Losing one of these messages loses nothing: subscribers fill gaps from the event log
(``agents.threads.events``); the layer is only a wake-up path.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from agents.runtime.threads import group_name

logger = logging.getLogger(__name__)


class _ReaderTask(asyncio.Task):
    """The pub/sub reader's task; remembers that it was asked to stop (see ``_read``)."""

    stop_requested = False

    def cancel(self, msg=None) -> bool:
        self.stop_requested = True
        return super().cancel(msg)


class ChannelLayerPubSub:
    """Thread messages between processes through a Channels layer (one group per thread).

    Each process reads one channel of its own; callbacks run on the event loop that subscribed.
    """

    def __init__(self, layer: Any):
        self.layer = layer
        self.channel: str | None = None
        self.callbacks: dict[str, list[Callable[[dict], None]]] = {}
        self._reader: asyncio.Task | None = None
        self._lock = asyncio.Lock()

    async def _ensure_channel(self) -> None:
        async with self._lock:
            if self.channel is None:
                self.channel = await self.layer.new_channel()
                self._reader = _ReaderTask(self._read(), loop=asyncio.get_running_loop())

    async def _read(self) -> None:
        reader = asyncio.current_task()
        while True:
            # channels-redis may swallow a cancellation or turn it into another error (its receive
            # bookkeeping): a cancelled reader stops anyway, or it outlives its loop's shutdown
            if getattr(reader, "stop_requested", False):
                raise asyncio.CancelledError()
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                if getattr(reader, "stop_requested", False):
                    raise asyncio.CancelledError() from None
                logger.exception("channel layer receive failed")
                await asyncio.sleep(0.5)
                continue
            for callback in list(self.callbacks.get(message.get("group"), ())):
                try:
                    callback(message["message"])
                except Exception:
                    logger.exception("thread pub/sub callback failed")

    async def publish(self, key: str, message: dict) -> None:
        group = group_name(key)
        await self.layer.group_send(group, {"type": "thread.message", "group": group, "message": message})

    async def subscribe(self, key: str, callback: Callable[[dict], None]) -> Callable:
        await self._ensure_channel()
        group = group_name(key)
        callbacks = self.callbacks.setdefault(group, [])
        if not callbacks:
            await self.layer.group_add(group, self.channel)
        callbacks.append(callback)

        async def unsubscribe() -> None:
            if callback in callbacks:
                callbacks.remove(callback)
            if not callbacks:
                self.callbacks.pop(group, None)
                await self.layer.group_discard(group, self.channel)

        return unsubscribe

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
