"""Fuzz the chat websocket's client frames with the shapes of ``tests.bad_input`` (deep nesting,
lone surrogates, NUL, huge numbers, wrong types for each field): every frame gets an answer, an
error frame never says ``internal_error`` and the socket stays open."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from chat.frames import FRAME_TYPES
from tests.agents.thread_harness import settle
from tests.bad_input import SHAPES, encode, json_bodies
from tests.chat.wsclient import open_socket, send

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

GOOD = {"type": st.sampled_from(FRAME_TYPES), "message": "hi", "attributes": {"a": "1"}, "runId": "run_1",
        "toolCallId": "call_1", "approved": True, "signalId": "in_1"}
FIELDS = [name for name in GOOD if name != "type"]

frames = st.lists(json_bodies(GOOD).map(lambda raw: raw.decode("utf-8", "surrogatepass")), min_size=1, max_size=6)


def shaped(shape: str) -> list[str]:
    """One frame of each type with every other field set to the value of ``shape``."""
    value = SHAPES[shape]
    return [encode({"type": kind, **{name: value for name in FIELDS}}) for kind in FRAME_TYPES]


@pytest.fixture
async def alice():
    return await sync_to_async(get_user_model().objects.create_user)("alice", password="x")


async def answers_until_pong(comm) -> list[dict]:
    """The frames the server sent up to the pong (chunks of runs, which carry a seq, left out)."""
    out = []
    while True:
        message = await comm.receive_output(timeout=5)
        assert message["type"] == "websocket.send", message  # the socket was not closed
        frame = json.loads(message["text"])
        if frame.get("type") == "pong":
            return out
        if "seq" not in frame:
            out.append(frame)


@settings(max_examples=8, deadline=None, database=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
@given(texts=frames)
@example(texts=shaped("nul"))
@example(texts=shaped("surrogate"))
@example(texts=shaped("deep"))
@example(texts=shaped("huge"))
@example(texts=shaped("nan"))
@example(texts=shaped("long"))
@example(texts=shaped("object"))
@example(texts=["[" * 100_000, '{"a":' * 100_000])
async def test_no_frame_is_an_internal_error(chat_site, alice, texts):
    comm = await open_socket(alice)
    assert (await comm.receive_json_from())["type"] == "snapshot"
    try:
        for text in texts:
            await comm.send_input({"type": "websocket.receive", "text": text})  # "" too
            await send(comm, {"type": "ping"})
            for frame in await answers_until_pong(comm):
                if frame["type"] == "error":
                    assert frame["code"] != "internal_error", (text[:200], frame)
    finally:
        await comm.disconnect()
        await settle()
