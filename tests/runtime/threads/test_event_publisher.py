"""The event publisher's outbox (``agents.runtime.threads.events.EventPublisher``): what a process
sends other processes while a publish is under way goes out together, each thread's chunks as one
message, in order."""

from __future__ import annotations

import asyncio

import pytest

from agents.runtime.threads.events import EventPublisher, LayerFailures

pytestmark = pytest.mark.asyncio


class GatedPubSub:
    """Records each publish; the first one waits for ``gate`` (a slow Redis round trip)."""

    def __init__(self, many: bool):
        self.gate = asyncio.Event()
        self.calls: list[list[tuple[str, dict]]] = []
        if many:
            self.publish_many = self._many

    async def _many(self, messages):
        self.calls.append(list(messages))
        await self.gate.wait()

    async def publish(self, key, message):
        self.calls.append([(key, message)])
        await self.gate.wait()

    async def subscribe(self, key, callback):
        return lambda: None


def delta(seq: int) -> dict:
    return {"seq": seq, "type": "text-delta"}


def sent(calls) -> list[list[tuple[str, list[int]]]]:
    return [[(key, [c["seq"] for c in message["chunks"]]) for key, message in call] for call in calls]


@pytest.mark.parametrize("many", [True, False])
async def test_what_waits_behind_a_publish_goes_out_together_each_thread_in_order(many):
    pubsub = GatedPubSub(many)
    publisher = EventPublisher(lambda key, chunks: None, pubsub, "p1")
    publisher.send("a", [delta(1)])
    await asyncio.sleep(0)  # the first publish is under way (held at the gate)
    for seq in (2, 3):
        publisher.send("a", [delta(seq)])
        publisher.send("b", [delta(seq)])
    ended = asyncio.ensure_future(publisher.remote("a", [delta(4)]))
    pubsub.gate.set()
    await asyncio.wait_for(ended, 5.0)
    if many:
        assert sent(pubsub.calls) == [[("a", [1])], [("a", [2, 3, 4]), ("b", [2, 3])]]
    else:
        assert sent(pubsub.calls) == [[("a", [1])], [("a", [2, 3, 4])], [("b", [2, 3])]]
    assert all(message["origin"] == "p1" for call in pubsub.calls for _, message in call)


async def test_a_failed_publish_is_logged_never_raised():
    class Down(GatedPubSub):
        async def _many(self, messages):
            raise ConnectionError("redis is down")

    failures = LayerFailures()
    publisher = EventPublisher(lambda key, chunks: None, Down(True), "p1", failures=failures)
    await asyncio.wait_for(publisher.remote("a", [delta(1)]), 5.0)
    assert failures.failing
