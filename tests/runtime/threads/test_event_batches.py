"""When a run's chunks are written to the event log (``ActiveRun``'s batching): the opening chunks
wait for the first step, a step's chunks for its end or a short timer, and the run's last step's
tail for the run's final transaction. Each write is a transaction on the thread's database queue,
so a write that could have gone with the next one costs every other run's time too."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from agents.runtime.threads.events import FLUSH_DELAY_S, FLUSH_MAX, STEP_END_DELAY_S, TAIL_DELAY_S, ActiveRun

pytestmark = pytest.mark.asyncio


def active_run(spawned: list) -> ActiveRun:
    def spawn(coro) -> None:
        spawned.append((coro.__qualname__, coro.cr_frame.f_locals.get("self")))
        coro.close()  # not run: the test looks at what was asked for

    publisher = SimpleNamespace(local=lambda key, chunks: None, send=lambda key, chunks: None)
    return ActiveRun(key="k", agent=None, run_id="run-1", token=1, last_seq=0, resource_id="u", thread_id="t",
                     store=None, publisher=publisher, spawn=spawn, reserved_seq=256)


def timer_in(run: ActiveRun) -> float | None:
    """Seconds until the run flushes, on a timer of its own or the writer's tick (None: neither)."""
    handle = run.flush_handle if run.flush_handle is not None else run.writer.tick if run.flush_due else None
    if handle is None:
        return None
    return handle.when() - asyncio.get_running_loop().time()


def step_finish(continued: bool) -> dict:
    return {"type": "step-finish", "payload": {"stepResult": {"isContinued": continued}}}


async def test_the_opening_chunks_wait_for_the_first_step():
    spawned: list = []
    run = active_run(spawned)
    run.emit({"type": "start", "payload": {}})
    run.emit({"type": "data-user-message", "data": {"text": "hi"}})
    assert (timer_in(run), spawned, len(run.pending)) == (None, [], 2)
    run.emit({"type": "step-start", "payload": {}})
    assert 0 < timer_in(run) <= FLUSH_DELAY_S
    run.emit({"type": "text-delta", "payload": {"text": "h"}})
    assert 0 < timer_in(run) <= FLUSH_DELAY_S and spawned == []


async def test_a_step_end_writes_just_after_it_and_the_last_step_leaves_its_tail_to_the_end():
    spawned: list = []
    run = active_run(spawned)
    for chunk in ({"type": "start", "payload": {}}, {"type": "step-start", "payload": {}}, step_finish(True)):
        run.emit(chunk)
    # a continued step's end: on a short timer of its own, not the tick (the next request goes first)
    assert spawned == [] and run.flush_handle is not None and 0 < timer_in(run) <= STEP_END_DELAY_S
    await asyncio.sleep(STEP_END_DELAY_S + 0.02)
    assert spawned == [("ActiveRun.flush", run)]
    run.flush_handle = None  # the flush itself (not run here) clears it
    run.emit({"type": "step-start", "payload": {}})
    run.emit({"type": "text-delta", "payload": {"text": "done"}})
    assert 0 < timer_in(run) <= FLUSH_DELAY_S
    run.emit(step_finish(False))
    assert len(spawned) == 1 and FLUSH_DELAY_S < timer_in(run) <= TAIL_DELAY_S
    run.flush_handle.cancel()


async def test_fast_steps_do_not_postpone_their_ends_write():
    """Steps quicker than the delay (a tool loop on a local model): each end would set the timer
    again; the first end's write stays due, and takes the later chunks with it."""
    spawned: list = []
    run = active_run(spawned)
    run.emit({"type": "start", "payload": {}})
    run.emit({"type": "step-start", "payload": {}})
    run.emit(step_finish(True))
    handle = run.flush_handle
    for _ in range(3):
        run.emit({"type": "step-start", "payload": {}})
        run.emit(step_finish(True))
    assert run.flush_handle is handle and not handle.cancelled() and spawned == []
    handle.cancel()


async def test_a_full_batch_at_a_step_end_writes_at_once():
    spawned: list = []
    run = active_run(spawned)
    run.emit({"type": "start", "payload": {}})
    run.emit({"type": "step-start", "payload": {}})
    for _ in range(FLUSH_MAX - 3):
        run.emit({"type": "text-delta", "payload": {"text": "h"}})
    assert spawned == [] and len(run.pending) == FLUSH_MAX - 1
    run.emit(step_finish(True))
    assert spawned == [("ActiveRun.flush", run)]


async def test_the_steps_in_progress_of_several_runs_flush_together_on_the_writers_tick():
    """No timer per run: the runs whose step is streaming flush on the process's tick, at most
    FLUSH_DELAY_S after the first of them, and their batches make one write."""
    spawned: list = []
    first = active_run(spawned)
    second = active_run(spawned)
    second.writer = first.writer  # one process, one writer
    for run in (first, second):
        run.emit({"type": "start", "payload": {}})
        run.emit({"type": "step-start", "payload": {}})
        run.emit({"type": "text-delta", "payload": {"text": "h"}})
    assert first.flush_handle is None and second.flush_handle is None and spawned == []
    assert first.writer.tick is not None and 0 < timer_in(second) <= FLUSH_DELAY_S
    await asyncio.sleep(FLUSH_DELAY_S + 0.02)
    assert spawned == [("ActiveRun.flush", first), ("ActiveRun.flush", second)]


async def test_a_run_scheduled_otherwise_since_is_not_flushed_by_the_tick():
    spawned: list = []
    run = active_run(spawned)
    run.emit({"type": "start", "payload": {}})
    run.emit({"type": "step-start", "payload": {}})
    run.emit(step_finish(False))  # the last step: its tail waits for the run's end
    assert FLUSH_DELAY_S < timer_in(run) <= TAIL_DELAY_S
    await asyncio.sleep(FLUSH_DELAY_S + 0.02)
    assert spawned == []
    run.flush_handle.cancel()


async def test_a_steps_end_writes_on_its_own_and_a_streaming_step_on_the_tick_with_the_others():
    """The tick's batches go in one grouped write; a step's end is written just after it, alone
    (grouped, it would wait for the whole group's write)."""
    calls = []

    class Store:
        async def append_events(self, *, key, token, events, reserve=None):
            calls.append(("single", key, [c["type"] for c in events]))
            return True

        async def append_events_many(self, *, writes):
            calls.append(("group", [w["key"] for w in writes]))
            return [True] * len(writes)

    publisher = SimpleNamespace(local=lambda key, chunks: None, send=lambda key, chunks: None)
    runs = [ActiveRun(key=key, agent=None, run_id=f"run-{key}", token=1, last_seq=0, resource_id="u",
                      thread_id=key, store=Store(), publisher=publisher, spawn=asyncio.ensure_future,
                      reserved_seq=256) for key in ("k1", "k2")]
    runs[1].writer = runs[0].writer
    for run in runs:
        run.emit({"type": "start", "payload": {}})
        run.emit({"type": "step-start", "payload": {}})
        run.emit({"type": "text-delta", "payload": {"text": "h"}})
    await asyncio.sleep(FLUSH_DELAY_S + 0.05)
    assert calls == [("group", ["k1", "k2"])]
    runs[0].emit(step_finish(True))
    await asyncio.sleep(0)
    assert calls[1:] == []  # not at once: the next step's request goes first
    await asyncio.sleep(STEP_END_DELAY_S + 0.02)
    assert calls[1:] == [("single", "k1", ["step-finish"])]
