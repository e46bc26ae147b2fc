"""An API request leaves the worker thread's database connection open (the thread runtime uses it
for every run of the process); a connection that failed and is no longer usable is closed after
the call that broke it. Through the API's own ASGI handler, whose requests send Django's request
signals (the test client turns their connection closing off)."""

from __future__ import annotations

import json

import pytest
from asgiref.testing import ApplicationCommunicator
from django.db import DEFAULT_DB_ALIAS, connections

from django.core import signals
from django.db import close_old_connections

from agents.api.handler import ApiHandler
from agents.connections import async_twin

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def worker_connection() -> int:
    conn = connections[DEFAULT_DB_ALIAS]
    conn.ensure_connection()
    return id(conn.connection)


async def api_get(path: str, token: str) -> int:
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"testserver"), (b"authorization", f"Token {token}".encode())],
             "client": ("127.0.0.1", 5000), "server": ("testserver", 80)}
    app = ApplicationCommunicator(ApiHandler(), scope)
    await app.send_input({"type": "http.request", "body": b"", "more_body": False})
    start = await app.receive_output(10)
    body = await app.receive_output(10)
    assert json.loads(body["body"]) is not None
    await app.wait(10)
    return start["status"]


async def test_api_requests_keep_the_worker_thread_connection(alice):
    for signal in (signals.request_started, signals.request_finished):  # as the site runs
        signal.connect(close_old_connections)
    token = alice.headers["Authorization"].split()[1]
    before = await async_twin(worker_connection)()
    for _ in range(3):
        assert await api_get("/api/agents", token) == 200
    assert await async_twin(worker_connection)() == before


async def test_a_broken_connection_is_closed_after_the_call_that_broke_it(alice):
    for signal in (signals.request_started, signals.request_finished):
        signal.connect(close_old_connections)
    token = alice.headers["Authorization"].split()[1]

    def broken():
        conn = connections[DEFAULT_DB_ALIAS]
        conn.ensure_connection()
        conn.errors_occurred = True
        conn.is_usable = lambda: False
        return conn.connection  # held: no later connection can take its id

    def restored():
        conn = connections[DEFAULT_DB_ALIAS]
        conn.__dict__.pop("is_usable", None)
        return conn.connection

    def opened():
        conn = connections[DEFAULT_DB_ALIAS]
        conn.ensure_connection()
        return conn.connection

    before = await async_twin(broken)()
    assert await async_twin(restored)() is None
    assert await api_get("/api/agents", token) == 200
    after = await async_twin(opened)()
    assert after is not None and after is not before
