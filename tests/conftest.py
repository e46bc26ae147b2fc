"""Shared fixtures. Service-backed tests read REDIS_URL / MASTRA_TEST_POSTGRES_URL; with
MASTRA_REQUIRE_SERVICES=1 (CI) a missing service fails the test instead of skipping it."""

from __future__ import annotations

import asyncio
import os

import pytest
from asgiref.sync import SyncToAsync


def require_service(name: str, value: str | None) -> str:
    if value:
        return value
    if os.environ.get("MASTRA_REQUIRE_SERVICES") == "1":
        pytest.fail(f"{name} is not set but MASTRA_REQUIRE_SERVICES=1")
    pytest.skip(f"{name} is not set (run with the services up; CI sets MASTRA_REQUIRE_SERVICES=1)")


@pytest.fixture
def redis_url() -> str:
    return require_service("REDIS_URL", os.environ.get("REDIS_URL"))


@pytest.fixture
def postgres_db(db_url_for_subprocess):
    """The test database when it is PostgreSQL. On SQLite the test belongs to CI's PostgreSQL pass:
    skipped when that pass is configured (MASTRA_TEST_POSTGRES_URL), else a missing service."""
    from django.db import connection

    if connection.vendor == "postgresql":
        return db_url_for_subprocess
    if os.environ.get("MASTRA_TEST_POSTGRES_URL"):
        pytest.skip("PostgreSQL test: runs in the PostgreSQL pass (DATABASE_URL set)")
    return require_service("DATABASE_URL (PostgreSQL)", None)


@pytest.fixture
def db_url_for_subprocess(transactional_db) -> str:
    """A DATABASE_URL that points other processes at this test run's database."""
    from django.db import connection

    settings = connection.settings_dict
    if connection.vendor == "postgresql":
        user = settings.get("USER") or "postgres"
        password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
        host = settings.get("HOST") or "127.0.0.1"
        port = settings.get("PORT") or 5432
        return f"postgres://{user}{password}@{host}:{port}/{settings['NAME']}"
    return f"sqlite:///{settings['NAME']}"


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The ORM calls of async code run in asgiref's single worker thread, and lease renewals on the
    lease thread (``agents.connections``), whose connections outlive the tests: close them before pytest-django destroys the test database (PostgreSQL refuses to drop
    a database with open connections). What is left after that is ended by the server: connections
    no code can reach any more (those of threads that ended, until the collector frees them; and one
    the main thread opens in a browser test under Playwright, which pytest-django's own teardown
    does not close), each of which made the drop fail with a warning."""
    yield
    import asyncio
    import gc

    from asgiref.sync import sync_to_async
    from django.db import connections

    from agents.connections import close_lease_connection

    asyncio.run(sync_to_async(connections.close_all)())
    close_lease_connection()
    gc.collect()  # connections of threads that ended (an event loop's executor), no longer referenced
    connection = connections["default"]
    if connection.vendor == "postgresql":
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND pid <> pg_backend_pid()")
        connection.close()


@pytest.fixture
def api_site(settings):
    """The agents of ``tests.agents.api.site`` as the site's registry (the HTTP API and webhook
    tests), with the API's rate counters cleared."""
    from agents.registry import get_mastra
    from tests.rates import clear_rate_counters

    settings.MASTRA = "tests.agents.api.site:mastra"
    get_mastra.cache_clear()
    clear_rate_counters()
    yield
    get_mastra.cache_clear()


@pytest.fixture
def settle():
    """``await settle()``: wait until this loop's thread runs and event flushes are over; fails the
    test when they are not within ``timeout`` seconds."""
    from agents.runtime.testing import drain_thread_runtime
    from agents.runtime.threads import get_thread_runtime

    async def wait(timeout: float = 10.0) -> None:
        await drain_thread_runtime(get_thread_runtime(), timeout=timeout)

    return wait


@pytest.fixture
async def settled_runs(settle):
    """The test's thread runs end before the database is flushed."""
    yield
    await settle(timeout=5.0)


@pytest.fixture(autouse=True)
def process_caches():
    """Every test reads the admin's budgets and checks API tokens afresh: a test database flush
    deletes budgets, tokens and users without the signals that make this process forget its copies
    (``budgets.selectors``, ``agents.api.auth.TokenCache``), and tests reuse token keys. The admin's
    list filters read their recent values afresh too (``agents.admin_lists``)."""
    try:
        from django.apps import apps
    except ImportError:  # the runtime's tests run without Django
        yield
        return
    if not apps.ready:
        yield
        return
    from agents.admin_lists import recent_values_clear
    from agents.api.auth import token_cache
    from budgets.selectors import budgets_cache_clear

    budgets_cache_clear()
    token_cache.clear()
    recent_values_clear()
    yield
    budgets_cache_clear()
    token_cache.clear()
    recent_values_clear()


@pytest.fixture(autouse=True)
def model_resilience():
    """Every test starts with no circuit breaker open and the default retry settings (both are
    per process: a test's failures must not skip another test's model)."""
    from agents.runtime.providers.breaker import breakers_reset
    from agents.runtime.providers.resilience import current_resilience, set_resilience

    breakers_reset()
    before = current_resilience()
    yield
    breakers_reset()
    set_resilience(before)


@pytest.fixture
def hops(monkeypatch):
    """Every hand-off from the event loop to a thread: ``sync_to_async`` calls (``async_twin``
    and Django's own), calls to the worker thread (``async_twin``'s, named by their function) and
    executor submissions."""
    from agents import connections

    calls: list[str] = []
    worker_call = connections.worker_call

    async def on_worker(func, *args, **kwargs):
        calls.append(getattr(func, "__qualname__", repr(func)))
        return await worker_call(func, *args, **kwargs)

    monkeypatch.setattr(connections, "worker_call", on_worker)
    call = SyncToAsync.__call__

    async def counted(self, *args, **kwargs):
        calls.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await call(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__call__", counted)
    run_in_executor = asyncio.BaseEventLoop.run_in_executor

    def submitted(self, executor, func, *args):
        calls.append(getattr(func, "__qualname__", repr(func)))
        return run_in_executor(self, executor, func, *args)

    monkeypatch.setattr(asyncio.BaseEventLoop, "run_in_executor", submitted)
    return calls
