"""The HTTP API's CORS headers for browser apps on other origins (``MASTRA_API_CORS_ORIGINS``,
docs/api.md): off by default; with origins listed, a preflight is answered before any sign-in and
the answers carry ``Access-Control-Allow-Origin`` for those origins only; with ``*``, for every
origin, as Mastra's server answers. Never with credentials.

These drive the site's real ASGI composition (``mastra_site.asgi.http_application``): Django's test
``Client`` would bypass the API's handler, which applies them."""

from __future__ import annotations

import json

import pytest
from channels.testing import HttpCommunicator
from django.test import override_settings

from tests.agents.api.conftest import make_user

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

APP = "http://localhost:3000"
PREFLIGHT = [(b"origin", APP.encode()), (b"access-control-request-method", b"POST"),
             (b"access-control-request-headers", b"authorization,content-type")]


async def call(path: str, headers: list, method: str = "GET", body: bytes = b"") -> dict:
    from mastra_site.asgi import http_application

    response = await HttpCommunicator(http_application(), method, path, body=body,
                                      headers=[(b"host", b"testserver"), *headers]).get_response(timeout=10)
    response["headers"] = {name.decode().lower(): value.decode() for name, value in response["headers"]}
    return response


def cors_headers(response: dict) -> dict:
    return {k: v for k, v in response["headers"].items() if k.startswith("access-control-")}


async def token() -> list:
    return [(b"authorization", f"Token {await make_user('alice')}".encode())]


async def test_off_by_default_no_header_and_a_preflight_is_a_request_like_any_other():
    response = await call("/api/agents", [(b"origin", APP.encode()), *await token()])
    assert response["status"] == 200 and cors_headers(response) == {}
    preflight = await call("/api/agents/echo/generate", PREFLIGHT, method="OPTIONS")
    assert preflight["status"] == 401 and cors_headers(preflight) == {}  # no sign-in: as before


@override_settings(CORS_ALLOWED_ORIGINS=[APP])
async def test_a_listed_origin_gets_its_preflight_answered_without_sign_in():
    response = await call("/api/agents/echo/generate", PREFLIGHT, method="OPTIONS")
    assert response["status"] == 200 and response["body"] == b""
    headers = cors_headers(response)
    assert headers["access-control-allow-origin"] == APP
    assert {"authorization", "content-type", "last-event-id", "x-request-id"} <= {
        h.strip() for h in headers["access-control-allow-headers"].split(",")}
    assert {"GET", "POST", "PATCH", "DELETE"} <= {m.strip() for m in headers["access-control-allow-methods"].split(",")}
    assert headers["access-control-max-age"] == "3600"
    assert "access-control-allow-credentials" not in headers
    assert "origin" in response["headers"]["vary"].lower()


@override_settings(CORS_ALLOWED_ORIGINS=[APP])
async def test_a_listed_origin_reads_the_answers_and_their_request_id():
    body, signed_in = json.dumps({"messages": "hi"}).encode(), await token()
    response = await call("/api/agents/echo/generate", [(b"origin", APP.encode()), (b"content-type", b"application/json"),
                                                        *signed_in], method="POST", body=body)
    assert response["status"] == 200 and json.loads(response["body"])["text"] == "echo: hi"
    headers = cors_headers(response)
    assert headers["access-control-allow-origin"] == APP
    assert {h.strip() for h in headers["access-control-expose-headers"].split(",")} == {
        "Content-Length", "Retry-After", "X-Request-ID"}
    # an error answer too: the app can read why
    refused = await call("/api/agents/nope", [(b"origin", APP.encode()), *signed_in])
    assert refused["status"] == 404 and cors_headers(refused)["access-control-allow-origin"] == APP


@override_settings(CORS_ALLOWED_ORIGINS=[APP])
async def test_another_origin_gets_no_header():
    other = [(b"origin", b"https://evil.example")]
    response = await call("/api/agents", [*other, *await token()])
    assert response["status"] == 200 and cors_headers(response) == {}
    preflight = await call("/api/agents", [*other, (b"access-control-request-method", b"GET")], method="OPTIONS")
    assert cors_headers(preflight) == {}  # answered, but the browser reads nothing


@override_settings(CORS_ALLOW_ALL_ORIGINS=True)
async def test_every_origin_with_a_star_and_never_credentials():
    response = await call("/api/agents", [(b"origin", b"https://any.example"), *await token()])
    assert response["status"] == 200
    assert cors_headers(response)["access-control-allow-origin"] == "*"
    assert "access-control-allow-credentials" not in cors_headers(response)


@override_settings(CORS_ALLOW_ALL_ORIGINS=True)
async def test_the_sites_pages_get_no_cors_headers():
    response = await call("/login/", [(b"origin", b"https://any.example")])
    assert cors_headers(response) == {}
