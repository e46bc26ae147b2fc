"""Subscriptions (``agents.runtime.threads.subscriptions``) on a scripted event log: what a subscriber
reads when another process's chunks never came through pub/sub."""

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

    async def thread_state(self, *, key):
        return self.state

    async def read_events(self, *, key, after_seq=0, run_id=None):
        return [e for e in self.events if e["seq"] > after_seq and (run_id is None or e["runId"] == run_id)]


def chunk(seq: int, run_id: str, kind: str = "text-delta") -> dict:
    return {"seq": seq, "type": kind, "runId": run_id, "from": "AGENT", "payload": {}}


def hub(log: ScriptedLog) -> Subscriptions:
    return Subscriptions(log, None, "this-process", runs={}, spawn=lambda coro: coro.close(),
                         on_abort=lambda key, run_id: None, abort=None)


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
