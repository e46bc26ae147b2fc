"""The site's ASGI application serves ``/api/`` through the API's handler, without the site's
middleware: a token and the admin's session cookie both sign in (unsafe methods with a session
need the CSRF token); every other path keeps the site's middleware."""

import json

import pytest
from channels.testing import HttpCommunicator
from django.conf import settings
from django.test import AsyncClient

from tests.agents.api.conftest import Api
from tests.garbage import cyclic_garbage

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


async def garbage_of_a_request(path: str, headers: list) -> tuple[int, list[str]]:
    """The status of a GET of ``path`` driven as Daphne drives a request (``http.disconnect`` at
    once after the response), and the class names of the request's objects (its requests, view,
    response, ``RequestAborted``) it left to the garbage collector (``gc.DEBUG_SAVEALL``; other
    garbage of the moment, a query compiler's closure or a writer thread's, is not the request's)."""
    import asyncio

    from django.core.exceptions import RequestAborted
    from django.http import HttpRequest, HttpResponseBase
    from django.views import View
    from rest_framework.request import Request

    from mastra_site.asgi import application

    kinds = (HttpRequest, Request, View, HttpResponseBase, RequestAborted)
    sent, finished = [], asyncio.Event()
    incoming = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive():
        if incoming:
            return incoming.pop(0)
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            finished.set()

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"testserver"), *headers], "client": ("127.0.0.1", 5000),
             "server": ("testserver", 80)}
    with cyclic_garbage() as garbage:
        await application(scope, receive, send)
        await asyncio.sleep(0)
    return sent[0]["status"], [type(o).__name__ for o in garbage if isinstance(o, kinds)]


async def test_an_api_request_is_freed_when_it_ends(alice: Api):
    """An API request's objects are freed when the request ends: Django's handler turned the
    disconnect into a ``RequestAborted`` whose traceback kept the handler's frame, its tasks and the
    request in a reference cycle; DRF's request held its view through its parser context, and the
    view held the request; Django's ``View.setup`` stores ``self.get`` as ``self.head``. Each of
    them kept a request alive until a collection of its generation, which for a long request (a
    stream) is a full one."""
    token = alice.headers["Authorization"].encode()
    status, left = await garbage_of_a_request("/api/agents", [(b"authorization", token)])
    assert status == 200
    assert left == []


async def test_a_site_page_ends_without_the_handlers_reference_cycle(alice: Api):
    """The site's pages go through Django's middleware, whose own cycles stay (the lazy user, the
    messages' storage), but not through the handler's ``RequestAborted``."""
    status, left = await garbage_of_a_request("/admin/login/", [])
    assert status == 200
    assert "ASGIRequest" in left  # the middleware's cycles: what the test can see
    assert "RequestAborted" not in left
