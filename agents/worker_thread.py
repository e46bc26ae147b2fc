"""The process's worker thread: where async code's ``WORKER`` calls to sync services run
(:func:`agents.connections.async_twin`), one at a time, in the order they were made.

It is asgiref's own thread for thread-sensitive calls (``SyncToAsync.single_thread_executor``),
the thread Django and Channels give their sync work outside a request of Django's handler (the
API's request signals, the websockets' session and user): one queue for all of them, one database
connection. :func:`worker_call` reaches it without ``sync_to_async``'s wrapping of each call (a
shielded future, the context restored on both sides, its thread-selection locals read and set): a
call went from the event loop to the thread and back in 181 to 182 µs through ``sync_to_async`` and
in 150 to 167 µs this way (three runs each on a 2-vCPU machine, a function that returns its argument,
``async_twin``'s own checks included); a chat turn makes two or three such calls, an API request
one to three. What a call relies on stays:

- the caller's context: the function runs in a copy of it (context variables such as the request id
  of the logs), with asgiref's ``Local`` storage moved to the thread as asgiref moves it (Django's
  caches and translations, which are such locals, are the caller's);
- a call its caller gave up on (a cancelled task) before it started is not run, as a queued
  executor call is not; one already running finishes, and its result is dropped;
- ``async_to_sync`` inside a call runs on the caller's event loop (asgiref's thread-local of the
  main loop is set as asgiref sets it).

A thread of our own with a plain queue answers faster still (107 to 110 µs), and was measured: with
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
import functools
import os
from typing import Any, Callable

from asgiref.sync import SyncToAsync, _restore_context  # asgiref's own move of a context to a thread


async def worker_call(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``func(*args, **kwargs)`` on the worker thread, in a copy of the caller's context; its result
    or its exception."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    return await loop.run_in_executor(SyncToAsync.single_thread_executor,
                                      functools.partial(context.run, _in_context, loop, context, func, args, kwargs))


def _in_context(loop: asyncio.AbstractEventLoop, context: contextvars.Context, func: Callable[..., Any],
                args: tuple, kwargs: dict) -> Any:
    _restore_context(context)  # the caller's asgiref locals are this thread's during the call
    local = SyncToAsync.threadlocal  # where async_to_sync inside the call finds the caller's loop
    local.main_event_loop, local.main_event_loop_pid = loop, os.getpid()
    try:
        return func(*args, **kwargs)
    except StopIteration as exc:  # an asyncio future refuses it: the caller would wait forever
        raise RuntimeError("the call raised StopIteration") from exc

