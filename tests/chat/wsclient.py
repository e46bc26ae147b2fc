"""Websocket helpers of the chat consumer tests: a signed-in ``WebsocketCommunicator`` on the site's
real ASGI application (origin check, session auth, URL router) and bounded reads."""

from __future__ import annotations

import asyncio
from typing import Callable

from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

TIMEOUT = 5.0


@sync_to_async
def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


async def open_socket(user=None, *, agent: str = "chat-bot", thread: str = "t1", query: str = "",
                      origin: bytes | None = b"http://testserver", host: bytes = b"testserver",
                      cookie: str | None = None, headers: list | None = None) -> WebsocketCommunicator:
    """A connected communicator (``connected`` False when the handshake was refused): signed in
    as ``user`` (a fresh session) or with the session ``cookie``; no Origin header when ``origin``
    is None."""
    from mastra_site.asgi import application

    headers = [(b"host", host), *(headers or [])]
    if origin is not None:
        headers.append((b"origin", origin))
    if user is not None and cookie is None:
        cookie = await session_cookie(user)
    if cookie is not None:
        headers.append((b"cookie", f"sessionid={cookie}".encode()))
    path = f"/ws/agents/{agent}/threads/{thread}/" + (f"?{query}" if query else "")
    comm = WebsocketCommunicator(application, path, headers=headers)
    comm.connected, _ = await comm.connect(timeout=TIMEOUT)
    return comm


async def close_code(comm: WebsocketCommunicator) -> int:
    """The code the server closed an accepted socket with."""
    message = await comm.receive_output(timeout=TIMEOUT)
    assert message["type"] == "websocket.close", message
    return message["code"]


async def frames_until(comm: WebsocketCommunicator, until: Callable[[dict], bool] | str,
                       timeout: float = TIMEOUT) -> list[dict]:
    """Frames up to and including the first that matches ``until`` (a type or a predicate)."""
    match = (lambda f: f["type"] == until) if isinstance(until, str) else until
    out: list[dict] = []

    async def go():
        while True:
            frame = await comm.receive_json_from(timeout=timeout)
            out.append(frame)
            if match(frame):
                return

    await asyncio.wait_for(go(), timeout)
    return out


def run_ended(frame: dict) -> bool:
    return frame["type"] == "abort" or (
        frame["type"] == "finish" and frame["payload"]["stepResult"]["reason"] not in ("tool-calls",))


async def send(comm: WebsocketCommunicator, frame: dict) -> None:
    await comm.send_json_to(frame)
