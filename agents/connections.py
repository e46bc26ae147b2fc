"""How async code reaches the database: :func:`async_twin`, the one bridge from async code to a sync
service (views, consumers, the runtime's stores, tasks). Nothing else in the project calls
``sync_to_async`` or ``database_sync_to_async`` (``tests/test_architecture.py`` checks it).

Each twin names the thread its calls run on:

- ``WORKER`` (the default): the process's one worker thread (:mod:`agents.worker_thread`), where
  every API request's and every run's ORM work queues, in order. Its connection stays open from
  call to call: with ``CONN_MAX_AGE = 0`` closing it after each call would open a new one for the
  next (measured: about 3.5 ms more per call on SQLite, several calls per thread run); one a call
  left unusable (an error it did not survive, a transaction left open) is closed after that call,
  as Django closes it at a request's end. With persistent connections (``CONN_MAX_AGE`` > 0 or
  None), connections too old or broken are closed before and after each call, as Channels'
  ``database_sync_to_async`` does. The choice is made at each call, from the settings of that
  moment. Where asgiref places a thread-sensitive call on another thread (under ``async_to_sync``:
  the calling thread, which holds a test's transaction or a command's connection; inside a
  ``ThreadSensitiveContext``: the request's thread of Django's handler, the site's pages), the call
  goes there, through ``sync_to_async`` (or ``database_sync_to_async`` with persistent
  connections), and its connection is marked as never too old, so that Django's end of a request
  on that thread does not close it either.
- ``POOL``: a thread of the executor, with its own connection, for self-contained calls that should
  not queue behind everything else (the notification store's group commits, whose batches for
  different threads are written in parallel). Such a thread sees no request signals: a connection
  left broken by a database error is closed before the next call, which reconnects.
- ``KEYED``: for the thread runtime's calls, which name a thread (a ``key`` keyword argument). With
  ``MASTRA_THREAD_DB_THREADS`` above 1, on PostgreSQL, each is run on one of that many threads, each
  with its own connection, chosen by the key: the calls for one thread keep their order (one
  thread, one queue), while different threads' calls do not wait for one another. At 1 (the
  default), on SQLite (one writer at a time anyway) or without a key, it is a ``WORKER`` call. More
  threads take more of the interpreter lock the event loop needs: each handles its answers in
  Python (measured with 500 runs at once on PostgreSQL, ``bench/concurrency.py``: the loop's p99 lag
  52 to 57 ms with 4 threads, 15 to 16 ms with the worker thread alone).
- ``LEASE``: the process's lease thread, for the one call that must not wait behind the worker
  thread: a lease renewal. When the worker thread's queue is longer than a lease's time-to-live, a
  renewal queued there comes too late, another process takes the thread over and the run's inputs
  are answered again. Renewals therefore run on a thread of their own, with a database connection
  of their own (one more per process).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from asgiref.sync import AsyncToSync, SyncToAsync, sync_to_async
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import (DEFAULT_DB_ALIAS, DatabaseError, InterfaceError, OperationalError, close_old_connections,
                       connection, connections)

from .worker_thread import worker_call

WORKER, POOL, LEASE, KEYED = "worker", "pool", "lease", "keyed"
#: what a call raises while the database is unreachable (a periodic task skips its pass then: the next
#: one tries again; a request answers 503)
DATABASE_DOWN = (OperationalError, InterfaceError)


def persistent_connections() -> bool:
    """Whether the default database keeps its connections between calls."""
    return settings.DATABASES[DEFAULT_DB_ALIAS].get("CONN_MAX_AGE", 0) != 0


def async_twin(func: Callable[..., Any], *, thread: str = WORKER) -> Callable[..., Any]:
    """``func`` as a coroutine function run on ``thread`` (``WORKER``, ``POOL`` or ``LEASE``, see the
    module docstring). Usable as a decorator, on functions and methods."""
    if thread == WORKER:
        plain, closing = sync_to_async(_kept_open(func)), database_sync_to_async(func)
        kept, closed_around = _kept_open(func, close_unusable=True), _closed_around(func)

        @functools.wraps(func)
        async def twin(*args: Any, **kwargs: Any) -> Any:
            persistent = persistent_connections()
            if _asgiref_chooses_thread():
                return await (closing if persistent else plain)(*args, **kwargs)
            return await worker_call(closed_around if persistent else kept, *args, **kwargs)
        return twin
    if thread == POOL:
        @functools.wraps(func)
        def call(*args: Any, **kwargs: Any) -> Any:
            if connection.connection is not None and connection.errors_occurred and not connection.is_usable():
                connection.close()
            return func(*args, **kwargs)
        return sync_to_async(call, thread_sensitive=False)
    if thread == KEYED:
        on_worker = async_twin(func)

        @functools.wraps(func)
        async def on_keyed_thread(*args: Any, **kwargs: Any) -> Any:
            key = kwargs.get("key")
            executor = _keyed_thread(key) if key is not None else None
            if executor is None:
                return await on_worker(*args, **kwargs)
            return await asyncio.get_running_loop().run_in_executor(
                executor, functools.partial(_on_own_connection, func, *args, **kwargs))
        return on_keyed_thread
    if thread == LEASE:
        @functools.wraps(func)
        async def on_lease_thread(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.get_running_loop().run_in_executor(
                _lease_thread(), functools.partial(_on_own_connection, func, *args, **kwargs))
        return on_lease_thread
    raise ValueError(f"unknown thread {thread!r}: WORKER, POOL, KEYED or LEASE")


_lease_executor: ThreadPoolExecutor | None = None
_lease_executor_lock = threading.Lock()


def _lease_thread() -> ThreadPoolExecutor:
    global _lease_executor
    with _lease_executor_lock:
        if _lease_executor is None:
            _lease_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mastra-lease")
        return _lease_executor


#: a thread's connection unused for longer than this is checked (``is_usable``: one ``SELECT 1`` on
#: PostgreSQL) before its next call: the server may have dropped it meanwhile (a restart, an outage
#: that terminated the backends), and a call on it would fail where a new connection succeeds
IDLE_CHECK_S = 1.0
_used = threading.local()


def _check_if_idle() -> None:
    """Close this thread's connection when it sat unused past :data:`IDLE_CHECK_S` and no longer
    works (the call that follows opens a new one); note this use."""
    conn = connections[DEFAULT_DB_ALIAS]
    now = time.monotonic()
    last = getattr(_used, "at", None)
    if conn.connection is not None and last is not None and now - last > IDLE_CHECK_S and not conn.is_usable():
        conn.close()
    _used.at = now


#: the context variable that holds what ``AsyncToSync.executors`` (an asgiref ``Local``) stores in a
#: context, when asgiref keeps it so (None otherwise: every check reads the ``Local``)
_EXECUTORS_VAR = getattr(getattr(AsyncToSync.executors, "_storage", None), "_data", None)
if not isinstance(_EXECUTORS_VAR, contextvars.ContextVar):
    _EXECUTORS_VAR = None


def _executor_current() -> bool:
    """Whether ``async_to_sync`` placed a current-thread executor in this context (asgiref's own
    check). A context where the ``Local`` stores nothing has none: told without the ``Local``'s
    lookup, whose miss costs an exception (8 µs against 0.1)."""
    if _EXECUTORS_VAR is not None and _EXECUTORS_VAR.get(None) is None:
        return False
    return getattr(AsyncToSync.executors, "current", None) is not None


def _asgiref_chooses_thread() -> bool:
    """Whether a thread-sensitive call made here goes where asgiref places it rather than to the
    process's worker thread (:mod:`agents.worker_thread`): under ``async_to_sync`` (it runs on the
    calling thread, whose connection holds a test's transaction or a command's work), inside a
    ``ThreadSensitiveContext`` (the thread of a request of Django's own handler: the site's pages)
    or on an event loop ``async_to_sync`` made."""
    return (_executor_current()
            or SyncToAsync.thread_sensitive_context.get(None) is not None
            or (AsyncToSync.loop_thread_executors and asyncio.get_running_loop() in AsyncToSync.loop_thread_executors))


def _closed_around(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` between two ``close_old_connections`` (with persistent connections: one too old or
    broken is closed before and after the call, as Django does around a request and Channels'
    ``database_sync_to_async`` around a call)."""
    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            return func(*args, **kwargs)
        finally:
            close_old_connections()
    return call


def _kept_open(func: Callable[..., Any], *, close_unusable: bool = False) -> Callable[..., Any]:
    """``func``, after which the calling thread's connection is marked as never too old: with
    ``CONN_MAX_AGE = 0`` Django closes a connection at every request's start and end
    (``close_old_connections``), and an API request's ``request_started`` runs on the worker thread
    (and its ``request_finished`` where a project connects a receiver to it,
    :mod:`agents.api.request_signals`), so each request closed the connection every run of the
    process uses, and the next call opened a new one (a sixth of the thread's time under load). A
    connection that failed and is no longer usable is still closed there; with ``close_unusable``
    (the worker thread's calls, which often run with no request around them), one that the call
    left unusable (an error it did not survive, a transaction left open) is closed right after the
    call, as Django closes it at a request's end: the next call opens a new one. Not on a thread
    asgiref chose (under ``async_to_sync``), whose connection may hold the caller's transaction."""
    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        _check_if_idle()
        try:
            return func(*args, **kwargs)
        finally:
            conn = connections[DEFAULT_DB_ALIAS]
            if conn.connection is not None:
                conn.close_at = None  # never too old: with CONN_MAX_AGE = 0 it would be closed now
                if close_unusable:
                    conn.close_if_unusable_or_obsolete()
            _used.at = time.monotonic()
    return call


_keyed_executors: list[ThreadPoolExecutor] = []
_keyed_lock = threading.Lock()


def _keyed_thread(key: str) -> ThreadPoolExecutor | None:
    """The executor of ``key``'s calls, or None where they go to the worker thread."""
    count = settings.MASTRA_THREAD_DB_THREADS
    if count <= 1 or not _on_postgresql(settings.DATABASES[DEFAULT_DB_ALIAS]["ENGINE"]):
        return None
    if len(_keyed_executors) < count:
        with _keyed_lock:
            while len(_keyed_executors) < count:
                _keyed_executors.append(ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix=f"mastra-db-{len(_keyed_executors)}"))
    return _keyed_executors[hash(key) % count]


def keyed_queue(key: str) -> int:
    """Which database queue ``key``'s ``KEYED`` calls go to (0 where they all go to the worker
    thread): calls that touch several threads' rows in one transaction are split by it, so that each
    part runs where those threads' other calls run and never waits for their row locks."""
    count = settings.MASTRA_THREAD_DB_THREADS
    if count <= 1 or not _on_postgresql(settings.DATABASES[DEFAULT_DB_ALIAS]["ENGINE"]):
        return 0
    return hash(key) % count


@functools.lru_cache(maxsize=8)
def _on_postgresql(engine: str) -> bool:
    """Whether ``engine`` is PostgreSQL's. Read from the settings, not from ``connections``: on the
    event loop each task has a connection object of its own, made on first use (measured: a new
    ``DatabaseWrapper`` for each thread call)."""
    return "postgresql" in engine or "postgis" in engine


def _on_own_connection(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    _check_if_idle()
    try:
        return func(*args, **kwargs)
    except DatabaseError:
        # a lost or refused connection: the next call opens a new one
        connections[DEFAULT_DB_ALIAS].close()
        raise
    finally:
        _used.at = time.monotonic()


def connection_checked() -> None:
    """Close this thread's connection when it no longer answers (``is_usable``: a ``SELECT 1`` on
    PostgreSQL); the next query opens a new one. For a background writer's thread, whose connection
    is kept between its batches while they follow one another: the server may have closed it
    meanwhile (a restart), and a batch must not fail for that."""
    conn = connections[DEFAULT_DB_ALIAS]
    if conn.connection is not None and not conn.is_usable():
        conn.close()


def close_lease_connection() -> None:
    """Close the database connections of the lease thread and of the keyed threads (a test run
    before it drops its database)."""
    for executor in ([_lease_executor] if _lease_executor is not None else []) + list(_keyed_executors):
        executor.submit(connections.close_all).result()
