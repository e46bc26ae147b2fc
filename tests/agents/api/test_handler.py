"""The site's ASGI application serves ``/api/`` through the API's handler, without the site's
middleware: a token and the admin's session cookie both sign in (unsafe methods with a session
need the CSRF token); every other path keeps the site's middleware."""

import json

import pytest
from channels.testing import HttpCommunicator
from django.conf import settings
from django.test import AsyncClient

from tests.agents.api.conftest import Api

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def call(path: str, headers: list, method: str = "GET", body: bytes = b"") -> dict:
    from mastra_site.asgi import application

    if not any(name == b"host" for name, _ in headers):
        headers = [(b"host", b"testserver"), *headers]
    return await HttpCommunicator(application, method, path, body=body, headers=headers).get_response(timeout=10)


async def session_cookie() -> str:
    client = AsyncClient()
    assert await client.alogin(username="alice", password="pw")
    return client.cookies[settings.SESSION_COOKIE_NAME].value


async def test_a_token_signs_in(alice: Api):
    token = alice.headers["Authorization"].encode()
    response = await call("/api/agents", [(b"authorization", token)])
    assert response["status"] == 200
    assert list(json.loads(response["body"])) == ["echo", "slow", "plain"]
    headers = dict(response["headers"])
    assert headers[b"Content-Type"] == b"application/json"
    assert int(headers[b"Content-Length"]) == len(response["body"])
    assert headers[b"X-Frame-Options"] == b"DENY"  # the site's policy, without its middleware chain


async def test_the_admins_session_signs_in_and_posts_need_the_csrf_token(alice: Api):
    cookie = f"{settings.SESSION_COOKIE_NAME}={await session_cookie()}; csrftoken={'a' * 32}".encode()
    response = await call("/api/agents", [(b"cookie", cookie)])
    assert response["status"] == 200
    body = json.dumps({"messages": "hi"}).encode()
    refused = await call("/api/agents/echo/generate", [(b"cookie", cookie), (b"content-type", b"application/json")],
                         "POST", body)
    assert refused["status"] == 403
    assert json.loads(refused["body"])["code"] == "permission_denied"
    accepted = await call("/api/agents/echo/generate", [
        (b"cookie", cookie), (b"content-type", b"application/json"), (b"x-csrftoken", b"a" * 32),
        (b"origin", b"http://testserver")], "POST", body)
    assert accepted["status"] == 200, accepted["body"]
    assert json.loads(accepted["body"])["text"] == "echo: hi"


async def test_no_credentials_is_401_and_other_paths_keep_the_site_middleware(anonymous: Api):
    response = await call("/api/agents", [])
    assert response["status"] == 401
    assert json.loads(response["body"])["code"] == "not_authenticated"
    admin = await call("/admin/login/", [(b"host", b"testserver")])
    assert admin["status"] == 200
    assert dict(admin["headers"])[b"X-Frame-Options"] == b"DENY"


async def test_a_host_outside_allowed_hosts_is_400(alice: Api):
    token = alice.headers["Authorization"].encode()
    response = await call("/api/agents", [(b"authorization", token), (b"host", b"evil.example")])
    assert response["status"] == 400
    assert json.loads(response["body"])["code"] == "invalid_host"


async def test_a_request_leaves_no_reference_cycle_behind(alice: Api):
    """Daphne tells each request's end with ``http.disconnect`` as soon as the response is sent:
    Django's handler turned it into a ``RequestAborted`` whose traceback kept the handler's frame,
    its tasks and the request (its body, its URL resolution) in a reference cycle until a full
    collection. The API's handler makes no exception of it."""
    import asyncio
    import gc

    from django.core.exceptions import RequestAborted

    from mastra_site.asgi import application

    sent, finished = [], asyncio.Event()
    incoming = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive():
        if incoming:
            return incoming.pop(0)
        await finished.wait()
        return {"type": "http.disconnect"}  # at once after the response, as daphne does

    async def send(message):
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            finished.set()

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": "/api/agents", "raw_path": b"/api/agents", "query_string": b"", "root_path": "",
             "headers": [(b"host", b"testserver"), (b"authorization", alice.headers["Authorization"].encode())],
             "client": ("127.0.0.1", 5000), "server": ("testserver", 80)}
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        await application(scope, receive, send)
        await asyncio.sleep(0)
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, RequestAborted)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert sent[0]["status"] == 200
    assert left == []
