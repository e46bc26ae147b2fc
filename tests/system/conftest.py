"""The fault suite's harness: the production layout of ``deploy/Procfile`` started once per session.

It runs in the PostgreSQL pass of the test command (``DATABASE_URL`` on PostgreSQL, the production
profile) with ``REDIS_URL`` set. On SQLite with ``MASTRA_TEST_POSTGRES_URL`` set it is skipped (it
runs in the PostgreSQL pass); a missing service is ``require_service``'s (a failure under
``MASTRA_REQUIRE_SERVICES=1``, a skip otherwise). The shared Redis only tells that the services are
up: the layout runs on a ``redis-server`` of its own, which scenarios may stop, on a database of
its own on the test database's server, created for the session and dropped at its end.

Fixtures: ``system_layout`` (session: the running :class:`~tests.system.layout.Layout`) and ``site``
(the same layout, with every web process running again before each test).
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.conftest import require_service
from tests.system.layout import REPORTS, Layout, PrivateRedis, SuiteDatabase


def require_layout_services() -> tuple[dict, str]:
    """The test database's settings (PostgreSQL) and the ``redis-server`` binary, or skip / fail."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] != "django.db.backends.postgresql":
        if os.environ.get("MASTRA_TEST_POSTGRES_URL"):
            pytest.skip("the production layout: runs in the PostgreSQL pass (DATABASE_URL set)")
        require_service("DATABASE_URL (PostgreSQL)", None)
    require_service("REDIS_URL", os.environ.get("REDIS_URL"))
    binary = require_service("redis-server", shutil.which("redis-server"))
    return database, binary


@pytest.fixture(scope="session")
def system_layout(tmp_path_factory):
    database_settings, redis_binary = require_layout_services()
    workdir = tmp_path_factory.mktemp("system")
    database = SuiteDatabase(database_settings)
    redis = PrivateRedis(redis_binary, workdir)
    layout = Layout(workdir, database, redis)
    database.create()
    try:
        redis.start()
        layout.prepare()
        layout.start()
        yield layout
    finally:
        layout.stop()
        redis.stop()
        database.drop()


@pytest.fixture
def site(system_layout):
    """The layout with both web processes running (a scenario that killed one and failed before
    starting it again does not take the next ones down with it); the logs read up to now."""
    for process in system_layout.web:
        if not process.alive():
            system_layout.restart(process)
    system_layout.new_errors()
    return system_layout


def pytest_terminal_summary(terminalreporter):
    if REPORTS:
        terminalreporter.section("system suite counts")
        for line in REPORTS:
            terminalreporter.write_line(json.dumps(line))
