"""The process's worker thread: where async code's ``WORKER`` calls to sync services run
(:func:`agents.connections.async_twin`), one at a time, in the order they were made.

asgiref's ``sync_to_async`` reaches its one thread through a ``ThreadPoolExecutor`` and wraps each
call in its own bookkeeping (a shielded executor future chained to an asyncio future, the context
restored on both sides, its thread-selection locals read and set). A call went from the event loop
to the thread and back in 165 µs where a thread with a plain queue answers in 50 µs (measured on a
2-vCPU machine, a function that returns its argument); a chat turn makes two or three such calls,
an API request one to three. This thread keeps what a call relies on and drops the rest:

- the caller's context: the function runs in a copy of it (context variables such as the request id
  of the logs), with asgiref's ``Local`` storage moved to this thread as asgiref moves it (Django's
  caches and translations, which are such locals, are the caller's);
- a call its caller gave up on (a cancelled task) before it started is not run, as a queued
  executor call is not; one already running finishes, and its result is dropped;
- ``async_to_sync`` inside a call runs on the caller's event loop (asgiref's thread-local of the
  main loop is set as its executor thread sets it);
- the thread is made on first use in each process (a forked Celery worker makes its own), and at
  the interpreter's exit the call in progress finishes before it stops.

Calls made where asgiref chooses another thread (under ``async_to_sync``: the calling thread, where a
test's transaction or a management command's connection is; inside a ``ThreadSensitiveContext``:
the request's thread of Django's handler) do not come here (``agents.connections``).
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import os
import queue
import threading
from concurrent.futures import Future
from typing import Any, Callable

from asgiref.sync import SyncToAsync, _restore_context  # asgiref's own move of a context to a thread


class WorkerThread:
    """A thread that runs the calls put to it one at a time, in order."""

    def __init__(self, name: str = "mastra-worker") -> None:
        self.pid = os.getpid()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    async def call(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``func(*args, **kwargs)`` on this thread, in a copy of the caller's context; its result
        or its exception."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._queue.put((loop, future, contextvars.copy_context(), func, args, kwargs))
        return await future

    def submit(self, func: Callable[[], Any]) -> Future:
        """``func()`` on this thread, from sync code: a future of its result."""
        done: Future = Future()
        self._queue.put((None, done, None, func, (), {}))
        return done

    def stop(self) -> None:
        """Let the calls already put to the thread finish, then end it."""
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._queue.put(None)
            self._thread.join()

    def _serve(self) -> None:
        get = self._queue.get
        loop_local = SyncToAsync.threadlocal
        while True:
            item = get()
            if item is None:
                return
            loop, future, context, func, args, kwargs = item
            item = None
            if loop is None:  # from sync code (``submit``)
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(func())
                    except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                        future.set_exception(exc)
                future = func = None
                continue
            if future.cancelled():  # its caller gave up before it started
                loop = future = context = func = args = kwargs = None
                continue
            loop_local.main_event_loop = loop
            loop_local.main_event_loop_pid = self.pid
            result = error = None
            try:
                result = context.run(_in_context, context, func, args, kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                error = exc
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:  # the loop was closed meanwhile: nobody waits for the answer
                pass
            loop = future = context = func = args = kwargs = result = error = None


def _in_context(context: contextvars.Context, func: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    _restore_context(context)  # the caller's asgiref locals are this thread's during the call
    return func(*args, **kwargs)


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if isinstance(error, StopIteration):  # an asyncio future refuses it, as a coroutine may not raise it
        error = RuntimeError("the call raised StopIteration")
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


_worker: WorkerThread | None = None
_worker_lock = threading.Lock()


def worker_thread() -> WorkerThread:
    """This process's worker thread (made on first use)."""
    worker = _worker
    if worker is not None and worker.pid == os.getpid():
        return worker
    return _make_worker()


def _make_worker() -> WorkerThread:
    global _worker
    with _worker_lock:
        if _worker is None or _worker.pid != os.getpid():
            _worker = WorkerThread()
        return _worker


def _stop_at_exit() -> None:
    if _worker is not None and _worker.pid == os.getpid():
        _worker.stop()


def _forget_in_child() -> None:
    """A forked child has none of its parent's threads: it makes its own worker, under a lock no
    parent thread can hold."""
    global _worker, _worker_lock
    _worker, _worker_lock = None, threading.Lock()


atexit.register(_stop_at_exit)
os.register_at_fork(after_in_child=_forget_in_child)
