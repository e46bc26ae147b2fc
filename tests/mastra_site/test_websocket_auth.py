"""The chat websocket's session and user (``mastra_site.websocket_auth``): as Channels'
``AuthMiddlewareStack`` gives them, and the frames a socket sends go straight to the server."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from mastra_site.websocket_auth import SessionAuthStack

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


def signed_in_cookie() -> str:
    user = get_user_model().objects.create_user("ann", password="x")
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def scope_of(kind: str, session_key: str) -> dict:
    return {"type": kind, "path": "/", "headers": [(b"cookie", f"{settings.SESSION_COOKIE_NAME}={session_key}".encode())]}


async def test_a_websocket_gets_its_user_and_session_and_sends_through_the_server():
    key = await sync_to_async(signed_in_cookie)()
    seen = {}

    async def app(scope, receive, send):
        seen.update(user=scope["user"].username, session=scope["session"].session_key, send=send)
        await send({"type": "websocket.send", "text": "hi"})

    sent = []

    async def server_send(message):
        sent.append(message)

    await SessionAuthStack(app)(scope_of("websocket", key), None, server_send)
    assert (seen["user"], seen["session"]) == ("ann", key)
    assert seen["send"] is server_send  # no wrapper between the socket's frames and the server
    assert sent == [{"type": "websocket.send", "text": "hi"}]


async def test_a_websocket_without_a_session_is_anonymous():
    seen = {}

    async def app(scope, receive, send):
        seen.update(authenticated=scope["user"].is_authenticated)

    await SessionAuthStack(app)({"type": "websocket", "path": "/", "headers": []}, None, None)
    assert seen == {"authenticated": False}


async def test_http_keeps_channels_session_saving_and_its_cookie():
    key = await sync_to_async(signed_in_cookie)()

    async def app(scope, receive, send):
        scope["session"]["seen"] = True  # a modified session: saved, its cookie sent again
        await send({"type": "http.response.start", "status": 200, "headers": []})

    sent = []

    async def server_send(message):
        sent.append(message)

    await SessionAuthStack(app)(scope_of("http", key), None, server_send)
    cookies = [v.decode() for n, v in sent[0]["headers"] if n == b"Set-Cookie"]
    assert len(cookies) == 1 and cookies[0].startswith(f"{settings.SESSION_COOKIE_NAME}={key};")
    store = await sync_to_async(lambda: __import__(settings.SESSION_ENGINE, fromlist=["SessionStore"])
                                .SessionStore(session_key=key).load())()
    assert store["seen"] is True
