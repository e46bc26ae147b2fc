"""The ``PubSub`` protocol's contract (``agents.runtime.threads.store.PubSub``), once, on every
Channels layer the site can run: channels-redis's pub/sub layer and its list-based layer (the two
``MASTRA_CHANNEL_LAYER`` choices) and the in-memory layer. Two :class:`ChannelLayerPubSub` on two
layer instances stand for two processes.

A message published for a thread reaches every process subscribed to it, the sender included, in
the order it was published; nothing reaches a process after it unsubscribed, nor a subscriber of
another thread."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from channels.layers import InMemoryChannelLayer

from agents.threads.pubsub import ChannelLayerPubSub

pytestmark = pytest.mark.asyncio

TIMEOUT = 5.0


def redis_layer(kind: str, redis_url: str, prefix: str):
    if kind == "pubsub":
        from channels_redis.pubsub import RedisPubSubChannelLayer

        return RedisPubSubChannelLayer(hosts=[redis_url], prefix=prefix)
    from channels_redis.core import RedisChannelLayer

    return RedisChannelLayer(hosts=[redis_url], prefix=prefix)


@pytest.fixture(params=["redis-pubsub", "redis-core", "in-memory"])
async def processes(request):
    """Two pub/subs, as two processes on one layer backend."""
    if request.param == "in-memory":
        shared = InMemoryChannelLayer()  # one process's layer: both share it
        layers = [shared, shared]
    else:
        redis_url = request.getfixturevalue("redis_url")
        prefix = f"contract-{uuid.uuid4().hex[:8]}"
        layers = [redis_layer(request.param.removeprefix("redis-"), redis_url, prefix) for _ in range(2)]
    pubsubs = [ChannelLayerPubSub(layer) for layer in layers]
    yield pubsubs
    for pubsub in pubsubs:
        await pubsub.close()
    for layer in {id(layer): layer for layer in layers}.values():
        if hasattr(layer, "flush"):
            await layer.flush()


class Inbox:
    """A callback that keeps what it got and lets a test wait for a count."""

    def __init__(self):
        self.messages: list[dict] = []
        self.changed = asyncio.Event()

    def __call__(self, message: dict) -> None:
        self.messages.append(message)
        self.changed.set()

    async def wait_for(self, count: int) -> list[dict]:
        async def reach():
            while len(self.messages) < count:
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(reach(), TIMEOUT)
        return self.messages


async def test_a_message_reaches_every_subscribed_process_the_sender_included(processes):
    a, b = processes
    here, there = Inbox(), Inbox()
    await a.subscribe("u1\x1ft1", here)
    await b.subscribe("u1\x1ft1", there)
    await a.publish("u1\x1ft1", {"kind": "chunks", "seq": 1})
    assert await here.wait_for(1) == [{"kind": "chunks", "seq": 1}]
    assert await there.wait_for(1) == [{"kind": "chunks", "seq": 1}]


async def test_messages_of_one_publisher_arrive_in_order(processes):
    a, b = processes
    there = Inbox()
    await b.subscribe("u1\x1ft1", there)
    for seq in range(1, 51):
        await a.publish("u1\x1ft1", {"seq": seq})
    assert [m["seq"] for m in await there.wait_for(50)] == list(range(1, 51))


async def test_messages_published_together_arrive_in_order_each_to_its_thread(processes):
    """``publish_many`` (one pipeline on the pub/sub layer) keeps each thread's order, and the order
    with what the same process published before and after."""
    a, b = processes
    one, two, unheard = Inbox(), Inbox(), Inbox()
    await b.subscribe("u1\x1ft1", one)
    await b.subscribe("u1\x1ft2", two)
    await a.publish("u1\x1ft1", {"seq": 1})
    await a.publish_many([("u1\x1ft1", {"seq": 2}), ("u1\x1ft2", {"seq": 1}), ("u1\x1ft3", {"seq": 1}),
                          ("u1\x1ft1", {"seq": 3}), ("u1\x1ft2", {"seq": 2})])
    await a.publish("u1\x1ft1", {"seq": 4})
    assert [m["seq"] for m in await one.wait_for(4)] == [1, 2, 3, 4]
    assert [m["seq"] for m in await two.wait_for(2)] == [1, 2]
    assert unheard.messages == []


async def test_another_thread_and_an_unsubscribed_process_get_nothing(processes):
    a, b = processes
    other, gone, there = Inbox(), Inbox(), Inbox()
    await b.subscribe("u1\x1ft2", other)
    unsubscribe = await b.subscribe("u1\x1ft1", gone)
    await unsubscribe()
    await b.subscribe("u1\x1ft3", there)
    await a.publish("u1\x1ft1", {"seq": 1})
    await a.publish("u1\x1ft3", {"seq": 2})  # sent after: once it arrived, the first one would have too
    assert await there.wait_for(1) == [{"seq": 2}]
    assert other.messages == [] and gone.messages == []


async def test_two_callbacks_of_one_process_each_get_the_message_and_one_unsubscribing_keeps_the_other(processes):
    a, b = processes
    first, second = Inbox(), Inbox()
    unsubscribe_first = await b.subscribe("u1\x1ft1", first)
    await b.subscribe("u1\x1ft1", second)
    await a.publish("u1\x1ft1", {"seq": 1})
    await first.wait_for(1)
    await second.wait_for(1)
    await unsubscribe_first()
    await a.publish("u1\x1ft1", {"seq": 2})
    assert await second.wait_for(2) == [{"seq": 1}, {"seq": 2}]
    assert first.messages == [{"seq": 1}]
