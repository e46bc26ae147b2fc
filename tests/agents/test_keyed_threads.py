"""The thread runtime's database calls on PostgreSQL: each thread's calls on one keyed database
thread of their own, in the order they were made; different threads' calls on up to
``MASTRA_THREAD_DB_THREADS`` threads side by side; on SQLite, or at 1, the worker thread."""

from __future__ import annotations

import asyncio
import threading

import pytest

from agents.connections import KEYED, async_twin

pytestmark = [pytest.mark.django_db(transaction=True)]


def where(*, key: str, order: list, n: int) -> str:
    order.append((key, n))
    return threading.current_thread().name


async def calls(keys: list[str], per_key: int) -> tuple[dict, list]:
    twin = async_twin(where, thread=KEYED)
    order: list = []
    names = await asyncio.gather(*(twin(key=k, order=order, n=i) for i in range(per_key) for k in keys))
    threads: dict[str, set] = {}
    for (k, _), name in zip([(k, i) for i in range(per_key) for k in keys], names):
        threads.setdefault(k, set()).add(name)
    return threads, order


def test_each_thread_keeps_to_one_database_thread_in_order(postgres_db, settings):
    settings.MASTRA_THREAD_DB_THREADS = 4
    keys = [f"user\x1fthread-{i}" for i in range(40)]
    threads, order = asyncio.run(calls(keys, 5))
    assert all(len(names) == 1 for names in threads.values())
    used = set().union(*threads.values())
    assert len(used) > 1 and all(name.startswith("mastra-db-") for name in used)
    for key in keys:
        assert [n for k, n in order if k == key] == [0, 1, 2, 3, 4]


def test_one_database_thread_means_the_worker_thread(postgres_db, settings):
    settings.MASTRA_THREAD_DB_THREADS = 1
    threads, _ = asyncio.run(calls(["a\x1fb", "c\x1fd"], 2))
    assert not any(name.startswith("mastra-db-") for names in threads.values() for name in names)


def test_by_default_the_thread_calls_are_on_the_worker_thread(postgres_db):
    """More database threads hold the interpreter lock the event loop needs (docs/threads.md)."""
    from django.conf import settings

    assert settings.MASTRA_THREAD_DB_THREADS == 1
    threads, _ = asyncio.run(calls(["a\x1fb", "c\x1fd"], 2))
    assert not any(name.startswith("mastra-db-") for names in threads.values() for name in names)


def test_on_sqlite_every_call_is_on_the_worker_thread(settings):
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("the SQLite pass")
    settings.MASTRA_THREAD_DB_THREADS = 4
    threads, _ = asyncio.run(calls(["a\x1fb", "c\x1fd"], 2))
    assert not any(name.startswith("mastra-db-") for names in threads.values() for name in names)


def backend_pid(*, key: str) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_a_connection_the_server_dropped_while_idle_is_replaced_before_the_next_call(postgres_db, settings,
                                                                                    monkeypatch):
    """After an outage that terminated the backends, the first call of each keyed thread opened on a
    dead connection failed (a 503); a connection idle past IDLE_CHECK_S is checked first."""
    from django.db import connection

    from agents import connections as bridges

    settings.MASTRA_THREAD_DB_THREADS = 4
    twin = async_twin(backend_pid, thread=KEYED)
    first = asyncio.run(twin(key="u\x1ft"))
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [first])
    monkeypatch.setattr(bridges, "IDLE_CHECK_S", 0.0)
    assert asyncio.run(twin(key="u\x1ft")) != first
