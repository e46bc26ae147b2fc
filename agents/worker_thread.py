"""The process's worker thread: where async code's ``WORKER`` calls to sync services run
(:func:`agents.connections.async_twin`), one at a time, in the order they were made.

It is asgiref's own thread for thread-sensitive calls (``SyncToAsync.single_thread_executor``),
the thread Django and Channels give their sync work outside a request of Django's handler (the
websockets' session and user; an API request's ``request_started``, and its ``request_finished``
where a project connects a receiver to it, :mod:`agents.api.request_signals`): one queue for all of
them, one database connection. :func:`worker_call` reaches it without ``sync_to_async``'s wrapping
of each call (a shielded future, the context restored on both sides, its thread-selection locals
read and set), and without ``run_in_executor``'s chaining of the executor's future to an asyncio
one (a lock taken four times to read the outcome, callbacks both ways): the thread hands the
outcome to the caller's future with one callback on its loop. A call of a function that returns
its argument, from the event loop to the thread and back, ``async_twin``'s own checks included,
both on one CPU (three runs each, alternated, on a 2-vCPU machine): 34 to 36 µs this way, 47 to 75
µs through ``run_in_executor``, 58 to 91 µs through ``sync_to_async``. A chat turn makes two or
three such calls, an API request one to three. What a call relies on stays:

- the caller's context: the function runs in a copy of it (context variables such as the request id
  of the logs), with asgiref's ``Local`` storage moved to the thread as asgiref moves it (Django's
  caches and translations, which are such locals, are the caller's);
- a call its caller gave up on (a cancelled task) before it started is not run, as a queued
  executor call is not; one already running finishes, and its result is dropped;
- ``async_to_sync`` inside a call runs on the caller's event loop (asgiref's thread-local of the
  main loop is set as asgiref sets it).

A thread of our own with a plain queue was tried (on an earlier machine it answered in 107 to 110 µs
where ``run_in_executor`` took 150 to 167), and was measured under load: with
500 runs at once (``bench/concurrency.py``) the runs' ends waited behind the new sends' accepts (a
send's request signals no longer queued on the same thread, so every send reached the database
queue at once), and a run's ``finish`` came 2.1 to 2.3 s after its last step instead of 1.2 to 1.3 s.

Calls made where asgiref chooses another thread (under ``async_to_sync``: the calling thread, where a
test's transaction or a management command's connection is; inside a ``ThreadSensitiveContext``:
the request's thread of Django's handler) do not come here (``agents.connections``).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
from typing import Any, Callable

from asgiref.sync import SyncToAsync, _restore_context  # asgiref's own move of a context to a thread


async def worker_call(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``func(*args, **kwargs)`` on the worker thread, in a copy of the caller's context; its result
    or its exception."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    context = contextvars.copy_context()
    SyncToAsync.single_thread_executor.submit(context.run, _call, loop, future, context, func, args, kwargs)
    return await future


def _call(loop: asyncio.AbstractEventLoop, future: asyncio.Future, context: contextvars.Context,
          func: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    """On the worker thread: run the call unless its caller gave up on it, and hand the outcome to
    the caller's future on its loop (one callback there, instead of ``run_in_executor``'s chain of
    an executor future to an asyncio one)."""
    if future.cancelled():  # the caller gave up before the call started: it is not run
        return
    error: BaseException | None = None
    result = None
    try:
        result = _in_context(loop, context, func, args, kwargs)
    except BaseException as exc:  # noqa: BLE001 - handed to the caller as run_in_executor would
        error = exc
    try:
        loop.call_soon_threadsafe(_settle, future, result, error)
    except RuntimeError:  # the loop closed meanwhile: nothing waits for the outcome any more
        pass


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.done():  # cancelled while the call ran: its result is dropped
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


def _in_context(loop: asyncio.AbstractEventLoop, context: contextvars.Context, func: Callable[..., Any],
                args: tuple, kwargs: dict) -> Any:
    _restore_context(context)  # the caller's asgiref locals are this thread's during the call
    local = SyncToAsync.threadlocal  # where async_to_sync inside the call finds the caller's loop
    local.main_event_loop, local.main_event_loop_pid = loop, os.getpid()
    try:
        return func(*args, **kwargs)
    except StopIteration as exc:  # an asyncio future refuses it: the caller would wait forever
        raise RuntimeError("the call raised StopIteration") from exc
