"""AbortWatch: a model call's awaits end as soon as the run's abort signal fires, without a task per
await (``agents.runtime.providers.sdk``)."""

from __future__ import annotations

import asyncio

import pytest

from agents.runtime.abort import AbortController
from agents.runtime.providers.sdk import Aborted, AbortWatch


class Stalled:
    """An await that never ends by itself; records how it ended."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.ended: str | None = None

    async def wait(self) -> str:
        self.started.set()
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            self.ended = "cancelled"
            raise
        return "never"


@pytest.mark.asyncio
async def test_an_abort_ends_the_pending_await_and_the_run_goes_on_uncancelled():
    controller = AbortController()
    watch = AbortWatch(controller.signal)
    stalled = Stalled()
    asyncio.get_running_loop().call_later(0.01, controller.abort)
    with pytest.raises(Aborted):
        await watch.run(stalled.wait())
    assert stalled.ended == "cancelled"  # the awaited code unwound (its finally blocks ran)
    assert asyncio.current_task().cancelling() == 0  # the cancellation was taken back
    await asyncio.sleep(0)  # so the run's own awaits go on (its clean-up, the abort's chunks)
    watch.close()


@pytest.mark.asyncio
async def test_awaits_run_in_the_callers_task_without_a_task_of_their_own():
    controller = AbortController()
    watch = AbortWatch(controller.signal)
    seen = []

    async def read() -> str:
        seen.append((asyncio.current_task(), len(asyncio.all_tasks())))
        await asyncio.sleep(0)
        return "chunk"

    tasks_before = len(asyncio.all_tasks())
    assert [await watch.run(read()) for _ in range(3)] == ["chunk"] * 3
    assert seen == [(asyncio.current_task(), tasks_before)] * 3
    watch.close()
    assert controller.signal._listeners == []  # closed: the signal no longer points at the watch


@pytest.mark.asyncio
async def test_an_abort_between_awaits_stops_the_next_one_before_it_starts():
    controller = AbortController()
    watch = AbortWatch(controller.signal)
    assert await watch.run(asyncio.sleep(0, result="first")) == "first"
    controller.abort()
    stalled = Stalled()
    with pytest.raises(Aborted):
        await watch.run(stalled.wait())
    assert not stalled.started.is_set()
    watch.close()


@pytest.mark.asyncio
async def test_a_cancellation_from_elsewhere_stays_a_cancellation():
    controller = AbortController()
    watch = AbortWatch(controller.signal)
    stalled = Stalled()
    task = asyncio.create_task(watch.run(stalled.wait()))
    await stalled.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert stalled.ended == "cancelled"
    controller.abort()  # later: the watch no longer cancels anything
    watch.close()


@pytest.mark.asyncio
async def test_an_abort_that_meets_a_cancellation_from_elsewhere_leaves_it_a_cancellation():
    controller = AbortController()
    watch = AbortWatch(controller.signal)
    stalled = Stalled()
    task = asyncio.create_task(watch.run(stalled.wait()))
    await stalled.started.wait()
    task.cancel()  # the server shutting down ...
    controller.abort()  # ... and a user's abort, in the same turn of the loop
    with pytest.raises(asyncio.CancelledError):
        await task
    watch.close()


@pytest.mark.asyncio
async def test_an_await_that_swallows_the_abort_returns_and_the_next_one_is_aborted():
    controller = AbortController()
    watch = AbortWatch(controller.signal)

    async def shielded_close() -> str:  # as a client's close under a shielded cancel scope
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            return "closed"
        return "never"

    asyncio.get_running_loop().call_later(0.01, controller.abort)
    assert await watch.run(shielded_close()) == "closed"
    assert asyncio.current_task().cancelling() == 0
    with pytest.raises(Aborted):
        await watch.run(asyncio.sleep(0))
    watch.close()


@pytest.mark.asyncio
async def test_without_a_signal_it_is_a_plain_await():
    assert await AbortWatch(None).run(asyncio.sleep(0, result="ok")) == "ok"
