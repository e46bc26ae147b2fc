"""The event-log writes of a process's runs go together (``EventLogWriter``): the batches handed
over in one turn of the event loop make one write, one call of the store for all their threads,
without waiting for the write before; a failure stays with the batch that caused it."""

from __future__ import annotations

import asyncio

import pytest

from agents.runtime.threads.events import EventLogWriter

pytestmark = pytest.mark.asyncio


class GroupStore:
    """A store that records its calls; the first ``append_events_many`` waits for ``release``."""

    def __init__(self, *, refuse_group: bool = False, poison: str | None = None):
        self.groups: list[list[str]] = []
        self.singles: list[str] = []
        self.release = asyncio.Event()
        self.refuse_group = refuse_group
        self.poison = poison

    async def append_events_many(self, *, writes):
        self.groups.append([w["key"] for w in writes])
        if len(self.groups) == 1:
            await self.release.wait()
        if self.refuse_group and any(w["key"] == self.poison for w in writes):
            raise ValueError("a chunk the store refuses")
        return [w["token"] == 1 for w in writes]

    async def append_events(self, *, key, token, events, reserve=None):
        self.singles.append(key)
        if key == self.poison:
            raise ValueError("a chunk the store refuses")
        return token == 1


async def test_the_batches_of_one_turn_go_together_without_waiting_for_the_write_before():
    store = GroupStore()
    writer = EventLogWriter(store)
    first = writer.append("a", 1, [{"seq": 1}])
    await asyncio.sleep(0)
    await asyncio.sleep(0)  # the write of "a" is in flight (the store holds it)
    later = [writer.append("b", 1, [{"seq": 1}]), writer.append("c", 2, [{"seq": 1}], reserve=300),
             writer.append("d", 1, [])]
    assert [await f for f in later] == [True, False, True]  # "c" lost its lease: fenced alone
    assert store.groups == [["a"], ["b", "c", "d"]] and not first.done()  # it did not wait for "a"
    store.release.set()
    assert await first is True
    assert writer.groups == 2 and store.singles == []


async def test_a_group_that_fails_is_written_again_one_batch_at_a_time():
    store = GroupStore(refuse_group=True, poison="bad")
    store.release.set()
    writer = EventLogWriter(store)
    good, bad, other = (writer.append("good", 1, [{"seq": 1}]), writer.append("bad", 1, [{"seq": 1}]),
                        writer.append("other", 2, [{"seq": 1}]))
    assert await good is True and await other is False
    with pytest.raises(ValueError, match="refuses"):
        await bad
    assert store.groups == [["good", "bad", "other"]] and store.singles == ["good", "bad", "other"]


async def test_a_store_without_group_writes_gets_one_call_per_batch():
    class SingleStore:
        def __init__(self):
            self.calls = []

        async def append_events(self, *, key, token, events, reserve=None):
            self.calls.append((key, reserve))
            return True

    store = SingleStore()
    writer = EventLogWriter(store)
    results = [writer.append("a", 1, [{"seq": 1}]), writer.append("b", 1, [{"seq": 1}], reserve=9)]
    assert [await f for f in results] == [True, True]
    assert store.calls == [("a", None), ("b", 9)]
