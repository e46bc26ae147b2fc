"""The chat websocket's frame limit through a real daphne process (``manage.py runserver``, as
``make run`` serves): daphne's own limit sits above ``MASTRA_CHAT_MAX_FRAME_BYTES``, so a frame over
1 MiB is read and answered by the site (accepted, or ``frame_too_large``), and only a frame far over
the site's limit is cut by the protocol."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from tests.chat.browser import daphne_server

pytestmark = pytest.mark.django_db(transaction=True)

MIB = 1024 * 1024


def padded(kind: str, size: int, **fields) -> str:
    """A frame of exactly ``size`` bytes: ``kind`` with a ``pad`` field (ignored by the site)."""
    empty = json.dumps({"type": kind, **fields, "pad": ""})
    return json.dumps({"type": kind, **fields, "pad": "x" * (size - len(empty))})


async def conversation(base: str, cookie: str) -> dict:
    import websockets

    port = base.rsplit(":", 1)[1]
    url = f"ws://127.0.0.1:{port}/ws/agents/chat-bot/threads/t1/"
    app_limit = settings.MASTRA_CHAT_MAX_FRAME_BYTES
    out: dict = {}
    async with websockets.connect(url, origin=base, additional_headers={"Cookie": f"sessionid={cookie}"},
                                  max_size=None, ping_interval=None, open_timeout=10) as ws:
        out["snapshot"] = json.loads(await ws.recv())["type"]
        for name, frame in [
            ("1.05 MB ping", padded("ping", 1_050_000)),
            ("at the limit", padded("ping", app_limit)),
            ("one byte over", padded("ping", app_limit + 1)),
            ("1.05 MB message", json.dumps({"type": "send-message", "message": "m" * 1_050_000})),
        ]:
            await ws.send(frame)
            out[name] = json.loads(await asyncio.wait_for(ws.recv(), 10))
        # far over: autobahn fails the connection as soon as the frame's header announces its
        # length (it drops the TCP connection, no close frame), nothing of it is buffered
        try:
            await ws.send(padded("ping", 8 * MIB))
            out["far over"] = json.loads(await asyncio.wait_for(ws.recv(), 10))
        except (websockets.ConnectionClosed, ConnectionError):
            out["far over"] = "connection closed"
    return out


def test_frames_over_one_mib_are_answered_by_the_site_not_cut_by_daphne(db_url_for_subprocess, tmp_path):
    user = get_user_model().objects.create_user("alice", password="x")
    client = Client()
    client.force_login(user)
    cookie = client.cookies["sessionid"].value
    assert settings.MASTRA_CHAT_MAX_FRAME_BYTES == settings.MASTRA_MAX_SIGNAL_BYTES + 64 * 1024 > 1_050_000 > MIB
    with daphne_server(db_url_for_subprocess, tmp_path) as base:
        out = asyncio.run(conversation(base, cookie))
    limit = settings.MASTRA_CHAT_MAX_FRAME_BYTES
    assert out == {
        "snapshot": "snapshot",
        "1.05 MB ping": {"type": "pong"},
        "at the limit": {"type": "pong"},
        "one byte over": {"type": "error", "code": "frame_too_large",
                          "message": f"the frame is larger than {limit} bytes"},
        "1.05 MB message": {"type": "error", "code": "signal_too_large", "frame": "send-message",
                            "message": out["1.05 MB message"]["message"]},
        "far over": "connection closed",
    }


def test_the_protocol_limit_is_the_frame_limit_and_a_margin_and_the_readme_says_so():
    assert settings.DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE == settings.MASTRA_CHAT_MAX_FRAME_BYTES + 64 * 1024
    assert settings.DAPHNE_WEBSOCKET_MAX_FRAME_SIZE == settings.DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    flags = dict(re.findall(r"--websocket-max-(message|frame)-size (\d+)", readme))
    default = MIB + 64 * 1024 + 64 * 1024  # MASTRA_MAX_SIGNAL_BYTES's default + the two margins
    assert flags == {"message": str(default), "frame": str(default)}
