"""How async code reaches the database: the async twin of a sync service.

:func:`async_twin` wraps a sync function for ``await`` in Django's one worker thread. With
persistent connections (``CONN_MAX_AGE`` > 0 or None) it is Channels' ``database_sync_to_async``,
which closes connections that are too old or broken around each call, as Django does around a
request. With ``CONN_MAX_AGE = 0`` that would close the connection after every call and open a new
one for the next (measured: about 3.5 ms more per call on SQLite, several hops per thread run), so
the twin is a plain ``sync_to_async`` there and the worker thread keeps its connection.

:func:`lease_twin` is for the one call that must not wait behind that thread: a lease renewal. Every
request's and every run's sync work queues on the worker thread; when the queue is longer than the
lease's time-to-live, a renewal queued there comes too late, another process takes the thread over
and the run's inputs are answered again (or parked as failed). Renewals therefore run on a thread
of their own, with a database connection of their own (one more per process).
"""

from __future__ import annotations

import asyncio
import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections


def persistent_connections() -> bool:
    """Whether the default database keeps its connections between calls."""
    return settings.DATABASES[DEFAULT_DB_ALIAS].get("CONN_MAX_AGE", 0) != 0


def async_twin(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` as a coroutine function run in Django's worker thread (see the module docstring)."""
    return database_sync_to_async(func) if persistent_connections() else sync_to_async(func)


_lease_executor: ThreadPoolExecutor | None = None
_lease_executor_lock = threading.Lock()


def _lease_thread() -> ThreadPoolExecutor:
    global _lease_executor
    with _lease_executor_lock:
        if _lease_executor is None:
            _lease_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mastra-lease")
        return _lease_executor


def _on_own_connection(func: Callable[..., Any], kwargs: dict) -> Any:
    try:
        return func(**kwargs)
    except DatabaseError:
        # a lost or refused connection: the next call opens a new one
        connections[DEFAULT_DB_ALIAS].close()
        raise


def lease_twin(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` as a coroutine function run on the process's lease thread, which keeps a database
    connection of its own (see the module docstring). Keyword arguments only."""

    @functools.wraps(func)
    async def twin(**kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(_lease_thread(), _on_own_connection, func, kwargs)

    return twin


def close_lease_connection() -> None:
    """Close the lease thread's database connection (a test run before it drops its database)."""
    if _lease_executor is not None:
        _lease_executor.submit(connections.close_all).result()
