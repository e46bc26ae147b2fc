"""Thread messages between processes on a Channels layer (one group per thread).

Losing one of these messages loses nothing: subscribers fill gaps from the event log
(``agents.threads.events``); the layer is only a wake-up path. While the layer fails (its Redis is
down, say), :class:`ChannelLayerPubSub` tells the runtime's subscriptions so (``{"kind":
"layer-failing"}``), and they read the event log instead until it works again (``{"kind":
"layer-recovered"}``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from agents.runtime.threads import group_name

logger = logging.getLogger(__name__)

#: how often a process checks its channel while it listens to threads: it sends itself a message
PROBE_EVERY_S = 1.0
#: probes that did not come back before the channel counts as failing
PROBES_LOST = 2


class _ReaderTask(asyncio.Task):
    """The pub/sub reader's task; remembers that it was asked to stop (see ``_read``)."""

    stop_requested = False

    def cancel(self, msg=None) -> bool:
        self.stop_requested = True
        return super().cancel(msg)


class ChannelLayerPubSub:
    """Thread messages between processes through a Channels layer (one group per thread).

    Each process reads one channel of its own; callbacks run on the event loop that subscribed.
    ``failing`` is True from a failed layer operation, or probes that did not come back (the
    layers report a lost Redis connection to nobody: channels-redis's pub/sub layer logs it and
    waits), until a probe comes back; each change is logged once and told to every callback as
    ``{"kind": "layer-failing"}`` / ``{"kind": "layer-recovered"}``.
    """

    def __init__(self, layer: Any, *, probe_every_s: float = PROBE_EVERY_S):
        self.layer = layer
        self.channel: str | None = None
        self.callbacks: dict[str, list[Callable[[dict], None]]] = {}
        self.probe_every_s = probe_every_s
        self.failing = False
        self._probes_sent = 0
        self._probes_seen = 0
        self._probe_mark = 0  # the last probe sent before the last failure: only a later one proves recovery
        self._reader: asyncio.Task | None = None
        self._prober: asyncio.Task | None = None
        self._lock = asyncio.Lock()

    async def _ensure_channel(self) -> None:
        async with self._lock:
            if self.channel is None:
                try:
                    self.channel = await self.layer.new_channel()
                except Exception:
                    self._failed("open a channel")
                    raise
                self._reader = _ReaderTask(self._read(), loop=asyncio.get_running_loop())
                self._prober = asyncio.ensure_future(self._probe())

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
                self._failed("receive")
                await asyncio.sleep(0.5)
                continue
            if message.get("type") == "thread.probe":
                self._probes_seen = max(self._probes_seen, message.get("n", 0))
                continue
            for callback in list(self.callbacks.get(message.get("group"), ())):
                try:
                    callback(message["message"])
                except Exception:
                    logger.exception("thread pub/sub callback failed")

    async def _probe(self) -> None:
        """While this process listens to threads (or the layer fails): send this process's
        channel a message every ``probe_every_s``; ``failing`` while they do not come back."""
        while True:
            await asyncio.sleep(self.probe_every_s)
            if not self.failing and not any(self.callbacks.values()):
                continue
            if self._probes_sent - self._probes_seen >= PROBES_LOST:
                self._failed(f"{self._probes_sent - self._probes_seen} probe messages did not come back",
                             traceback=False)
            elif self.failing and self._probes_seen == self._probes_sent > self._probe_mark:
                self._recovered()
            self._probes_sent += 1
            try:
                await self.layer.send(self.channel, {"type": "thread.probe", "n": self._probes_sent})
            except Exception:
                self._failed("send a probe message")

    def _failed(self, what: str, *, traceback: bool = True) -> None:
        self._probe_mark = self._probes_sent
        if self.failing:
            logger.debug("channel layer still failing (%s)", what, exc_info=traceback)
            return
        self.failing = True
        logger.error("channel layer failed (%s): thread subscribers read the event log until it is back", what,
                     exc_info=traceback)
        self._tell({"kind": "layer-failing"})

    def _recovered(self) -> None:
        self.failing = False
        logger.warning("channel layer works again")
        self._tell({"kind": "layer-recovered"})

    def _tell(self, message: dict) -> None:
        for callbacks in list(self.callbacks.values()):
            for callback in list(callbacks):
                try:
                    callback(message)
                except Exception:
                    logger.exception("thread pub/sub callback failed")

    async def publish(self, key: str, message: dict) -> None:
        group = group_name(key)
        try:
            await self.layer.group_send(group, {"type": "thread.message", "group": group, "message": message})
        except Exception:
            self._failed("publish")
            raise

    async def publish_many(self, messages: list[tuple[str, dict]]) -> None:
        """``publish`` of several ``(key, message)`` at once, in order: on channels-redis's pub/sub
        layer one pipeline of PUBLISH commands per Redis shard (one round trip, where ``group_send``
        makes one per message, one at a time on the process's connection); on other layers one
        ``group_send`` after the other."""
        try:
            shards = self._redis_pubsub_shards(messages)
            if shards is None:
                for key, message in messages:
                    group = group_name(key)
                    await self.layer.group_send(group, {"type": "thread.message", "group": group, "message": message})
                return
            for shard, items in shards:
                async with shard._lock:  # the shard's own publishes take it too: they stay in order
                    shard._ensure_redis()
                    pipeline = shard._redis.pipeline(transaction=False)
                    for channel, data in items:
                        pipeline.publish(channel, data)
                    await pipeline.execute()
        except Exception:
            self._failed("publish")
            raise

    def _redis_pubsub_shards(self, messages: list[tuple[str, dict]]) -> list[tuple[Any, list]] | None:
        """The messages as ``(shard, [(redis channel, bytes)])`` of channels-redis's pub/sub layer
        (what its ``group_send`` publishes, shard by shard), or None on another layer."""
        if not all(hasattr(self.layer, name) for name in ("_get_layer", "serialize")):
            return None
        loop_layer = self.layer._get_layer()
        if not all(hasattr(loop_layer, name) for name in ("_get_group_channel_name", "_get_shard")):
            return None
        shards: dict[int, tuple[Any, list]] = {}
        for key, message in messages:
            group = group_name(key)
            channel = loop_layer._get_group_channel_name(group)
            shard = loop_layer._get_shard(channel)
            if not all(hasattr(shard, name) for name in ("_lock", "_ensure_redis", "_redis")):
                return None
            data = self.layer.serialize({"type": "thread.message", "group": group, "message": message})
            shards.setdefault(id(shard), (shard, []))[1].append((channel, data))
        return list(shards.values())

    async def subscribe(self, key: str, callback: Callable[[dict], None]) -> Callable:
        await self._ensure_channel()
        group = group_name(key)
        callbacks = self.callbacks.setdefault(group, [])
        if not callbacks:
            try:
                await self.layer.group_add(group, self.channel)
            except Exception:
                self._failed("subscribe")
                raise
        callbacks.append(callback)

        async def unsubscribe() -> None:
            if callback in callbacks:
                callbacks.remove(callback)
            if not callbacks:
                self.callbacks.pop(group, None)
                try:
                    await self.layer.group_discard(group, self.channel)
                except Exception:
                    self._failed("unsubscribe")

        return unsubscribe

    async def close(self) -> None:
        if self._prober is not None:
            self._prober.cancel()
        if self._reader is not None:
            self._reader.cancel()
