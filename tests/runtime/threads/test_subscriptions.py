"""Subscriptions (``agents.runtime.threads.subscriptions``) on a scripted event log: what a subscriber
reads when another process's chunks never came through pub/sub."""

import asyncio

import pytest

from agents.runtime.threads.store import thread_key
from agents.runtime.threads.subscriptions import Subscriptions

pytestmark = pytest.mark.asyncio

R, T = "user-1", "thread-1"
KEY = thread_key(R, T)


class ScriptedLog:
    """The two reads a subscription makes of the thread store."""

    def __init__(self):
        self.events: list[dict] = []
        self.state: dict | None = None
        self.reads = 0

    async def thread_state(self, *, key):
        return self.state

    async def read_events(self, *, key, after_seq=0, run_id=None):
        self.reads += 1
        return [e for e in self.events if e["seq"] > after_seq and (run_id is None or e["runId"] == run_id)]


def chunk(seq: int, run_id: str, kind: str = "text-delta") -> dict:
    return {"seq": seq, "type": kind, "runId": run_id, "from": "AGENT", "payload": {}}


def hub(log: ScriptedLog, spawn=lambda coro: coro.close()) -> Subscriptions:
    return Subscriptions(log, None, "this-process", runs={}, spawn=spawn,
                         on_abort=lambda key, run_id: None, abort=None)


def remote(*chunks: dict) -> dict:
    return {"kind": "chunks", "origin": "other-process", "chunks": list(chunks)}


async def read_again(log: ScriptedLog, times: int = 2) -> None:
    """Until the log has been read ``times`` more times."""
    target = log.reads + times

    async def reads():
        while log.reads < target:
            await asyncio.sleep(0.005)
    await asyncio.wait_for(reads(), 5.0)


async def read(sub, count: int) -> list[int]:
    """The seqs of the next ``count`` chunks the subscriber reads."""
    stream = sub.stream
    return [(await asyncio.wait_for(stream.__anext__(), 5.0))["seq"] for _ in range(count)]


async def test_a_run_starting_here_first_gives_a_subscriber_that_saw_nothing_the_logged_chunks_before_it():
    """A subscriber joined a thread with no history (its last seq is 0); another process's run logged
    seqs 1-2 and died before pub/sub brought them. The run that takes the thread over here numbers
    its chunks from 257: the subscriber reads 1-2 from the log before 257, none lost, in order."""
    log = ScriptedLog()
    subscriptions = hub(log)
    sub = await subscriptions.subscribe(None, R, T)
    assert sub.last_seq == 0
    log.events = [chunk(1, "dead", "start"), chunk(2, "dead")]
    await subscriptions.catch_up(KEY, 256)
    subscriptions.publish(KEY, [chunk(257, "recovery", "start")])
    assert [(c["seq"], c["runId"]) for c in sub.take_buffered()] == [(1, "dead"), (2, "dead"), (257, "recovery")]


async def test_a_subscriber_up_to_date_reads_nothing_from_the_log():
    log = ScriptedLog()
    log.state = {"last_seq": 9, "active_run_id": None}
    subscriptions = hub(log)
    sub = await subscriptions.subscribe(None, R, T)
    assert sub.last_seq == 9
    log.events = [chunk(9, "old")]
    await subscriptions.catch_up(KEY, 9)
    assert sub.take_buffered() == []


async def test_a_gap_before_another_process_s_chunks_waits_for_the_log_that_fills_it():
    """Another process hands its chunks out (and publishes them) before it logs them: a subscriber
    here that sees 12 after 9 (10-11 were published before it listened, or lost) holds 12, and what
    comes after it, until the log has 10-11; then reads them all in order, none lost."""
    log = ScriptedLog()
    log.state = {"last_seq": 9, "active_run_id": "r"}
    subscriptions = hub(log, spawn=asyncio.ensure_future)
    sub = await subscriptions.subscribe(None, R, T, after_seq=9)
    subscriptions._on_remote(KEY, remote(chunk(12, "r")))
    await read_again(log)  # nothing there to give yet
    subscriptions._on_remote(KEY, remote(chunk(13, "r")))
    assert sub.peek_buffered() == []
    log.events = [chunk(10, "r"), chunk(11, "r")]
    assert await read(sub, 4) == [10, 11, 12, 13]
    subscriptions._on_remote(KEY, remote(chunk(14, "r")))
    assert await read(sub, 1) == [14]
    sub.unsubscribe()


async def test_a_gap_the_log_never_fills_is_passed_once_the_thread_is_past_it():
    """Seqs a dead run reserved and never logged: once the thread's ``last_seq`` is past them (the
    run that took over logged after them), the held chunks go on without them."""
    log = ScriptedLog()
    log.state = {"last_seq": 9, "active_run_id": "dead"}
    subscriptions = hub(log, spawn=asyncio.ensure_future)
    sub = await subscriptions.subscribe(None, R, T, after_seq=9)
    subscriptions._on_remote(KEY, remote(chunk(266, "takeover", "start")))
    await read_again(log)
    assert sub.peek_buffered() == []
    log.state = {"last_seq": 266, "active_run_id": "takeover"}
    assert await read(sub, 1) == [266]
    sub.unsubscribe()


async def test_a_live_chunk_that_arrives_while_subscribing_after_unlogged_ones_waits_for_them():
    """A subscriber joins another process's run: it reads the run's logged chunks (1-3) while 6
    arrives live (4-5 were handed out there, not logged yet). 6 waits for 4-5 from the log."""
    log = ScriptedLog()
    log.state = {"last_seq": 3, "active_run_id": "r"}
    log.events = [chunk(1, "r", "start"), chunk(2, "r"), chunk(3, "r")]
    subscriptions = hub(log, spawn=asyncio.ensure_future)
    reads = log.read_events

    async def read_events(**kwargs):
        events = await reads(**kwargs)
        subscriptions._on_remote(KEY, remote(chunk(6, "r")))  # arrives while the replay reads
        return events

    log.read_events = read_events
    sub = await subscriptions.subscribe(None, R, T)
    log.read_events = reads
    assert await read(sub, 3) == [1, 2, 3]
    await read_again(log)
    assert sub.peek_buffered() == []
    log.events += [chunk(4, "r"), chunk(5, "r")]
    assert await read(sub, 3) == [4, 5, 6]
    sub.unsubscribe()


async def test_a_timed_read_takes_every_chunk_at_once_and_says_silence_and_end_apart():
    """``read(timeout)`` (what an SSE subscriber reads): the chunks that came together at once, []
    after a silence of ``timeout``, the chunks left and then None once the subscription ended."""
    subscriptions = hub(ScriptedLog())
    sub = await subscriptions.subscribe(None, R, T)
    subscriptions.publish(KEY, [chunk(1, "r", "start"), chunk(2, "r")])
    assert [c["seq"] for c in await sub.read(5.0)] == [1, 2]
    loop = asyncio.get_running_loop()
    loop.call_later(0.02, subscriptions.publish, KEY, [chunk(3, "r")])
    assert [c["seq"] for c in await asyncio.wait_for(sub.read(5.0), 5.0)] == [3]  # woken by the chunk
    began = loop.time()
    assert await sub.read(0.05) == []  # silence: the caller sends a keep-alive
    assert loop.time() - began >= 0.05
    subscriptions.publish(KEY, [chunk(4, "r")])
    sub.unsubscribe()
    assert [c["seq"] for c in await sub.read(5.0)] == [4]  # what it holds, then the end
    assert await sub.read(5.0) is None
    waiting = await subscriptions.subscribe(None, R, T)
    pending = asyncio.ensure_future(waiting.read(5.0))
    await asyncio.sleep(0)
    waiting.unsubscribe()  # a reader waiting when the subscription ends gets the end at once
    assert await asyncio.wait_for(pending, 1.0) is None


async def test_a_dropped_subscriber_reads_its_chunks_then_the_overflow_error_then_the_end():
    subscriptions = hub(ScriptedLog())
    sub = await subscriptions.subscribe(None, R, T)
    sub.buffer_max = 2
    subscriptions.publish(KEY, [chunk(1, "r", "start"), chunk(2, "r"), chunk(3, "r")])
    got = await sub.read(5.0)
    assert [c.get("seq") for c in got] == [1, 2, None]
    assert got[-1]["payload"]["error"]["code"] == "subscriber_overflow"
    assert await sub.read(5.0) is None
