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
                      origin: bytes = b"http://testserver") -> WebsocketCommunicator:
    """A connected communicator (``connected`` False when the handshake was refused)."""
    from mastra_site.asgi import application

    headers = [(b"origin", origin)]
    if user is not None:
        headers.append((b"cookie", f"sessionid={await session_cookie(user)}".encode()))
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
