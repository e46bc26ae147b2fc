"""The API answers with the site's security policy: with production settings a plain-HTTP request is
redirected (GET) or refused (``403 https_required``), and an HTTPS one gets the same headers as a site
page (HSTS, nosniff, X-Frame-Options, Referrer-Policy, COOP). The schema and the docs need a
signed-in user; the docs page loads no script from a CDN.

These drive the site's real ASGI composition (``mastra_site.asgi.http_application``), built under the
overridden settings: Django's test ``Client`` would bypass the API's handler."""

from __future__ import annotations

import json

import pytest
from channels.testing import HttpCommunicator
from django.conf import settings
from django.test import override_settings

from tests.agents.api.conftest import Api

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

HOST = b"mastra.example"
PRODUCTION = {
    "ALLOWED_HOSTS": ["mastra.example"],
    "SECURE_SSL_REDIRECT": True,
    "SECURE_HSTS_SECONDS": 31536000,
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
    "SECURE_HSTS_PRELOAD": True,
    "SECURE_PROXY_SSL_HEADER": ("HTTP_X_FORWARDED_PROTO", "https"),
    "SESSION_COOKIE_SECURE": True,
    "CSRF_COOKIE_SECURE": True,
}
HTTPS = [(b"x-forwarded-proto", b"https")]
POLICY = {
    b"Strict-Transport-Security": b"max-age=31536000; includeSubDomains; preload",
    b"X-Content-Type-Options": b"nosniff",
    b"X-Frame-Options": b"DENY",
    b"Referrer-Policy": b"same-origin",
    b"Cross-Origin-Opener-Policy": b"same-origin",
}


@pytest.fixture
def production():
    import mastra_site.asgi  # noqa: F401 - its module-level application is built with the usual settings

    with override_settings(**PRODUCTION):
        yield


async def call(path: str, headers: list, method: str = "GET", body: bytes = b"") -> dict:
    """One request through a freshly built site application (middleware reads settings when built)."""
    from mastra_site.asgi import http_application

    if not any(name == b"host" for name, _ in headers):
        headers = [(b"host", HOST), *headers]
    return await HttpCommunicator(http_application(), method, path, body=body,
                                  headers=headers).get_response(timeout=10)


def policy_headers(response: dict) -> dict:
    headers = dict(response["headers"])
    return {name: headers.get(name) for name in POLICY}


def token(api: Api) -> list:
    return [(b"authorization", api.headers["Authorization"].encode())]


async def test_a_plain_http_get_is_redirected_to_https_like_a_site_page(alice: Api, production):
    api = await call("/api/agents?x=1", token(alice))
    assert api["status"] == 301
    assert dict(api["headers"])[b"Location"] == b"https://mastra.example/api/agents?x=1"
    page = await call("/login/", [])
    assert page["status"] == 301
    assert dict(page["headers"])[b"Location"] == b"https://mastra.example/login/"


async def test_a_plain_http_post_is_refused_not_redirected(alice: Api, production):
    body = json.dumps({"messages": "hi"}).encode()
    response = await call("/api/agents/echo/generate", [*token(alice), (b"content-type", b"application/json")],
                          "POST", body)
    assert response["status"] == 403
    assert json.loads(response["body"]) == {
        "error": "this API accepts HTTPS requests only: send it again to https://mastra.example/api/agents/echo/generate",
        "code": "https_required",
        "message": "this API accepts HTTPS requests only: send it again to https://mastra.example/api/agents/echo/generate"}
    assert b"Location" not in dict(response["headers"])


async def test_an_exempt_path_is_served_over_plain_http(alice: Api, production):
    with override_settings(SECURE_REDIRECT_EXEMPT=[r"^api/agents$"]):
        response = await call("/api/agents", token(alice))
    assert response["status"] == 200
    assert b"Strict-Transport-Security" not in dict(response["headers"])  # HSTS only over HTTPS


async def test_the_ssl_host_names_the_redirect_target(alice: Api, production):
    with override_settings(SECURE_SSL_HOST="secure.mastra.example"):
        response = await call("/api/agents", token(alice))
    assert response["status"] == 301
    assert dict(response["headers"])[b"Location"] == b"https://secure.mastra.example/api/agents"


async def test_https_api_responses_carry_the_sites_headers(alice: Api, production):
    api = await call("/api/agents", [*token(alice), *HTTPS])
    assert api["status"] == 200
    assert policy_headers(api) == POLICY
    page = await call("/login/", HTTPS)
    assert page["status"] == 200
    assert policy_headers(page) == POLICY


async def test_errors_and_posts_carry_them_too(alice: Api, production):
    missing = await call("/api/agents/nobody", [*token(alice), *HTTPS])
    assert missing["status"] == 404 and json.loads(missing["body"])["code"] == "agent_not_found"
    assert policy_headers(missing) == POLICY
    anonymous = await call("/api/agents", HTTPS)
    assert anonymous["status"] == 401
    assert policy_headers(anonymous) == POLICY
    body = json.dumps({"messages": "hi"}).encode()
    sent = await call("/api/agents/echo/generate", [*token(alice), *HTTPS, (b"content-type", b"application/json")],
                      "POST", body)
    assert sent["status"] == 200 and json.loads(sent["body"])["text"] == "echo: hi"
    assert policy_headers(sent) == POLICY


async def test_a_bad_host_over_plain_http_is_400_invalid_host(alice: Api, production):
    response = await call("/api/agents", [*token(alice), (b"host", b"evil.example")])
    assert response["status"] == 400
    assert json.loads(response["body"])["code"] == "invalid_host"


async def test_the_default_settings_give_the_same_headers_without_hsts(alice: Api):
    response = await call("/api/agents", [*token(alice), (b"host", b"testserver")])
    assert response["status"] == 200
    assert policy_headers(response) == {**POLICY, b"Strict-Transport-Security": None}


async def test_the_schema_and_the_docs_need_a_signed_in_user(alice: Api, production):
    schema = await call("/api/schema/", HTTPS)
    assert schema["status"] == 401
    assert json.loads(schema["body"])["code"] == "not_authenticated"
    assert dict(schema["headers"])[b"WWW-Authenticate"] == b'Token realm="api"'
    docs = await call("/api/docs/", HTTPS)
    assert docs["status"] == 302
    assert dict(docs["headers"])[b"Location"] == b"/login/?next=/api/docs/"
    assert policy_headers(docs) == POLICY
    assert (await call("/api/schema/?format=json", [*token(alice), *HTTPS]))["status"] == 200


async def test_the_docs_page_serves_swagger_ui_itself_and_cannot_be_framed(alice: Api, production):
    docs = await call("/api/docs/", [*token(alice), *HTTPS])
    assert docs["status"] == 200
    assert policy_headers(docs) == POLICY
    page = docs["body"].decode()
    assert f"{settings.STATIC_URL}drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in page
    assert "cdn." not in page and "https://" not in page


async def test_the_site_lists_the_middleware_whose_policy_the_api_applies():
    from agents.api.security import site_policy_middleware

    assert [type(m).__name__ for m in site_policy_middleware()] == ["SecurityMiddleware", "XFrameOptionsMiddleware"]
