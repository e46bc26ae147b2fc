"""An API request sends Django's ``request_started`` and ``request_finished``: a project's receivers
of them run once per request, the sync ones on the worker thread (where they may use the ORM), the
async ones on the event loop; with Django's own receivers only, closing the response costs no round
trip to the worker thread; a response's resources are closed once it is sent, and a request whose
client left before its answer still ends with ``request_finished``."""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading

import pytest
from asgiref.sync import SyncToAsync
from channels.testing import HttpCommunicator
from django.core.signals import request_finished, request_started
from django.db import DEFAULT_DB_ALIAS, connections
from django.http import FileResponse
from django.urls import get_urlconf, set_urlconf

from agents.api import request_signals
from agents.api.handler import ApiHandler
from agents.connections import async_twin
from tests.agents.api.conftest import Api

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def get_agents(alice: Api) -> dict:
    from mastra_site.asgi import application

    headers = [(b"host", b"testserver"), (b"authorization", alice.headers["Authorization"].encode())]
    communicator = HttpCommunicator(application, "GET", "/api/agents", headers=headers)
    response = await communicator.get_response(timeout=10)
    await communicator.wait(10)  # the request's end: its response closed
    assert response["status"] == 200
    assert list(json.loads(response["body"])) == ["echo", "slow", "plain"]
    return response


@async_twin
def worker_thread() -> int:
    return threading.get_ident()


@pytest.fixture
def connected():
    """Connects receivers to a request signal for the test's length."""
    made = []

    def connect(signal, receiver):
        signal.connect(receiver, weak=False)
        made.append((signal, receiver))

    yield connect
    for signal, receiver in made:
        signal.disconnect(receiver)


async def test_a_projects_receivers_run_once_per_request_sync_ones_on_the_worker_thread(alice: Api, connected):
    from django.contrib.auth import get_user_model

    calls = []

    def on_start(sender, scope, **kwargs):
        calls.append(("started", sender, scope["path"], threading.get_ident(), get_user_model().objects.count()))

    def on_finish(sender, **kwargs):
        calls.append(("finished", sender, None, threading.get_ident(), get_user_model().objects.count()))

    async def on_start_async(sender, scope, **kwargs):
        calls.append(("started async", sender, scope["path"], threading.get_ident(), None))

    connected(request_started, on_start)
    connected(request_finished, on_finish)
    connected(request_started, on_start_async)
    await get_agents(alice)
    await get_agents(alice)

    worker, loop = await worker_thread(), threading.get_ident()
    one_request = [("started", ApiHandler, "/api/agents", worker, 1),
                   ("started async", ApiHandler, "/api/agents", loop, None),
                   ("finished", ApiHandler, None, worker, 1)]
    assert sorted(calls, key=lambda call: call[0]) == sorted(one_request * 2, key=lambda call: call[0])
    assert [call[0] for call in calls][-1] == "finished"


async def test_with_djangos_own_receivers_closing_a_response_costs_no_round_trip(alice: Api, connected,
                                                                                 monkeypatch):
    """Django connects ``close_old_connections``, ``reset_urlconf`` and ``close_caches`` to
    ``request_finished``: an API request makes one call fewer to the worker thread with only those
    than with a project's receiver of it (its start's round trip stays, ``agents.api.request_signals``)."""
    executor = SyncToAsync.single_thread_executor
    submitted = []
    submit = executor.submit
    monkeypatch.setattr(executor, "submit", lambda *args, **kwargs: submitted.append(1) or submit(*args, **kwargs))

    async def worker_calls_of_a_request() -> int:
        await get_agents(alice)  # the token cached, the connection open
        submitted.clear()
        await get_agents(alice)
        return len(submitted)

    djangos = await worker_calls_of_a_request()
    connected(request_started, lambda **kwargs: None)
    assert await worker_calls_of_a_request() == djangos
    connected(request_finished, lambda **kwargs: None)
    assert await worker_calls_of_a_request() == djangos + 1


async def test_under_debug_a_request_starts_with_the_worker_threads_query_log_emptied(alice: Api, settings):
    settings.DEBUG = True

    @async_twin
    def log_a_query():
        connections[DEFAULT_DB_ALIAS].queries_log.append({"sql": "SELECT 'before'", "time": "0.000"})

    @async_twin
    def logged() -> list[str]:
        return [query["sql"] for query in connections[DEFAULT_DB_ALIAS].queries_log]

    await log_a_query()
    await get_agents(alice)
    after = await logged()
    assert "SELECT 'before'" not in after
    assert after  # the request's own queries


async def test_closing_a_response_closes_its_resources_and_ends_the_request_in_its_context(connected):
    seen = []
    connected(request_finished, lambda sender, **kwargs: seen.append((sender, threading.get_ident())))
    with tempfile.TemporaryFile() as file:
        file.write(b"a file")
        file.seek(0)
        response = FileResponse(file)
        response._handler_class = ApiHandler  # as the handler's run_get_response sets it
        await request_signals.close(response)
        assert file.closed
    assert response.closed
    assert seen == [(ApiHandler, await worker_thread())]


async def test_with_djangos_receivers_a_response_is_closed_on_the_event_loop():
    with tempfile.TemporaryFile() as file:
        response = FileResponse(file)
        response._handler_class = ApiHandler
        set_urlconf("tests.urls_of_a_request")
        await request_signals.close(response)
        assert file.closed
    assert response.closed
    assert get_urlconf() is None  # Django's reset_urlconf ran here


async def test_a_client_that_leaves_before_its_answer_ends_the_request(connected):
    ended, cancelled = [], asyncio.Event()
    connected(request_finished, lambda sender, **kwargs: ended.append(sender))

    class Waiting(ApiHandler):
        async def run_get_response(self, request):
            try:
                await asyncio.Event().wait()  # a view that never answers
            except asyncio.CancelledError:
                cancelled.set()
                raise

    incoming = asyncio.Queue()
    await incoming.put({"type": "http.request", "body": b"", "more_body": False})
    sent = []

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": "/api/agents", "raw_path": b"/api/agents", "query_string": b"", "root_path": "",
             "headers": [(b"host", b"testserver")], "client": ("127.0.0.1", 5000), "server": ("testserver", 80)}
    request = asyncio.create_task(Waiting()(scope, incoming.get, send))
    await asyncio.sleep(0.05)
    assert not request.done()
    await incoming.put({"type": "http.disconnect"})
    await asyncio.wait_for(request, 10)
    assert cancelled.is_set()
    assert ended == [Waiting]
    assert sent == []


async def test_an_asgi_message_after_the_body_is_an_error():
    incoming = [{"type": "http.request", "body": b"", "more_body": False}, {"type": "http.request", "body": b"x"}]

    async def receive():
        if incoming:
            return incoming.pop(0)
        await asyncio.Event().wait()

    async def send(message):
        pass

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": "/api/agents", "raw_path": b"/api/agents", "query_string": b"", "root_path": "",
             "headers": [(b"host", b"testserver")], "client": ("127.0.0.1", 5000), "server": ("testserver", 80)}
    with pytest.raises(AssertionError, match="Invalid ASGI message after request body: http.request"):
        await asyncio.wait_for(ApiHandler()(scope, receive, send), 10)
