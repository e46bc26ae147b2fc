"""The process's worker thread (``agents.worker_thread``): where async code's ``WORKER`` calls run,
in order, with the caller's context, on the thread of asgiref's thread-sensitive calls, and where
they do not go (under ``async_to_sync``, inside a ``ThreadSensitiveContext``)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest
from asgiref.sync import ThreadSensitiveContext, async_to_sync, sync_to_async
from django.utils import translation

from agents import connections
from agents.connections import async_twin

pytestmark = [pytest.mark.django_db(transaction=True)]  # a call's end looks at the thread's connection

REQUEST = contextvars.ContextVar("test_worker_request", default=None)


def where() -> tuple[str, int]:
    return threading.current_thread().name, threading.get_ident()


def test_calls_from_the_event_loop_run_on_the_worker_thread_in_the_order_they_were_made():
    """The thread of asgiref's thread-sensitive calls (Django's request signals, Channels' session
    and user), one queue for all."""
    order: list[int] = []

    def note(n: int) -> int:
        order.append(n)
        return threading.get_ident()

    async def main():
        return await asyncio.gather(*(async_twin(note)(n) for n in range(50))), await sync_to_async(where)()

    idents, (_, asgirefs) = asyncio.run(main())
    assert set(idents) == {asgirefs} and asgirefs != threading.get_ident()
    assert order == list(range(50))


def test_a_call_sees_the_callers_context_variables_and_asgiref_locals():
    def seen() -> tuple:
        return REQUEST.get(), translation.get_language()

    async def main():
        REQUEST.set("req-1")
        with translation.override("fr"):
            return await async_twin(seen)()

    assert asyncio.run(main()) == ("req-1", "fr")


def test_a_context_variable_set_in_the_call_stays_in_the_call():
    def set_it() -> None:
        REQUEST.set("inside")

    async def main():
        REQUEST.set("outside")
        await async_twin(set_it)()
        return REQUEST.get()

    assert asyncio.run(main()) == "outside"


def test_the_calls_exception_reaches_the_caller():
    def fails() -> None:
        raise LookupError("no such row")

    async def main():
        await async_twin(fails)()

    with pytest.raises(LookupError, match="no such row"):
        asyncio.run(main())


def test_stop_iteration_reaches_the_caller_as_a_runtime_error():
    def fails() -> None:
        raise StopIteration

    async def main():
        await asyncio.wait_for(async_twin(fails)(), 10)

    with pytest.raises(RuntimeError, match="StopIteration"):
        asyncio.run(main())


def test_a_call_cancelled_before_it_started_is_not_run():
    release = threading.Event()
    ran: list[str] = []

    def blocker() -> None:
        release.wait(10)
        ran.append("blocker")

    def second() -> None:
        ran.append("second")

    def third() -> None:
        ran.append("third")

    async def main():
        first = asyncio.ensure_future(async_twin(blocker)())
        queued = asyncio.ensure_future(async_twin(second)())
        await asyncio.sleep(0.05)  # both are put to the thread; the first holds it
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        release.set()
        await first
        await async_twin(third)()

    asyncio.run(main())
    assert ran == ["blocker", "third"]


def test_a_call_cancelled_while_running_finishes_and_its_result_is_dropped():
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def slow() -> str:
        started.set()
        release.wait(10)
        ran.append("slow")
        return "done"

    async def main():
        task = asyncio.ensure_future(async_twin(slow)())
        while not started.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        await async_twin(where)()  # after the slow call: the thread took it to its end

    asyncio.run(main())
    assert ran == ["slow"]


def test_a_call_that_outlives_its_callers_loop_ends_quietly_and_the_thread_serves_the_next_loop():
    started, release, ended = threading.Event(), threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(10)
        ended.set()
        return "late"

    async def give_up():
        task = asyncio.ensure_future(async_twin(slow)())
        while not started.is_set():
            await asyncio.sleep(0.001)
        task.cancel()  # asyncio.run closes its loop with the call still running

    asyncio.run(give_up())
    release.set()
    assert ended.wait(10)

    async def next_loop():
        return await async_twin(where)()

    assert asyncio.run(next_loop())[1] != threading.get_ident()


def test_async_to_sync_inside_a_call_runs_on_the_callers_loop():
    async def loop_of_coroutine():
        return asyncio.get_running_loop()

    def nested():
        return async_to_sync(loop_of_coroutine)()

    async def main():
        return asyncio.get_running_loop(), await async_twin(nested)()

    caller, inner = asyncio.run(main())
    assert inner is caller


def test_under_async_to_sync_a_call_runs_on_the_calling_thread():
    """A test's transaction, a management command's or a Celery task's connection is the calling
    thread's: asgiref's placement stays."""
    async def main():
        return await async_twin(where)()

    assert async_to_sync(main)()[1] == threading.get_ident()


def test_after_async_to_sync_ended_inside_a_sync_call_the_callers_calls_go_to_the_worker_thread():
    """``async_to_sync`` leaves asgiref's ``Local`` of executors holding None in the caller's context
    once it returns: the check reads the ``Local`` there (not the empty context's shortcut) and
    still finds no executor."""
    async def nothing():
        return None

    def nested():
        async_to_sync(nothing)()

    async def main():
        assert connections._EXECUTORS_VAR.get(None) is None  # the shortcut's case
        await sync_to_async(nested)()
        assert connections._EXECUTORS_VAR.get(None) is not None  # the Local's case
        return await async_twin(where)(), await sync_to_async(where)()

    (_, ident), (_, asgirefs) = contextvars.Context().run(asyncio.run, main())  # a context of nothing
    assert ident == asgirefs != threading.get_ident()


def test_the_executor_check_reads_asgirefs_context_variable():
    """The shortcut of the check holds for the installed asgiref (its ``Local`` keeps a context
    variable): an asgiref that changes that falls back to reading the ``Local`` on every call, and
    this says so."""
    assert isinstance(connections._EXECUTORS_VAR, contextvars.ContextVar)


def test_inside_a_thread_sensitive_context_a_call_runs_on_that_contexts_thread():
    """Django's own handler (the site's pages) gives each request a thread; the request's calls
    stay on it."""
    async def main():
        async with ThreadSensitiveContext():
            first = await async_twin(where)()
            second = await async_twin(where)()
        return first, second

    async def outside():
        return await async_twin(where)()

    first, second = asyncio.run(main())
    assert first == second and first != asyncio.run(outside())


def test_with_persistent_connections_a_connection_past_its_age_is_closed_around_the_call(settings, monkeypatch):
    from django.db import connection

    monkeypatch.setitem(settings.DATABASES["default"], "CONN_MAX_AGE", 60)

    def open_and_age() -> None:
        connection.ensure_connection()
        connection.close_at = time.monotonic() - 1  # as if its CONN_MAX_AGE had passed

    def is_closed() -> bool:
        return connection.connection is None

    async def main():
        await async_twin(open_and_age)()
        return await async_twin(is_closed)()

    assert asyncio.run(main()) is True

