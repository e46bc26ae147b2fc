"""The chat websocket: ``/ws/agents/<agentId>/threads/<threadId>/?lastSeq=N`` (DESIGN §5).

On connect: close 4401 when not signed in, 4404 for an unknown agent (or one without memory) or a
thread the caller may not see (``agents.access.Caller``); else the snapshot (``chat.snapshot``),
then every chunk of the thread with its ``seq``. ``lastSeq`` resumes after that seq: the chunks
after it, each once. Client frames (``chat.frames``) are acted on by ``chat.actions``; a frame that
cannot be acted on gets ``{"type": "error", "code", "message"}`` and the socket stays open.
"""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import parse_qs

from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from agents.access import Caller, ThreadNotFound
from agents.registry import get_mastra
from agents.runtime.errors import MastraError

from .actions import ACTIONS, Target
from .frames import error_frame, frame_parse
from .snapshot import athread_snapshot_build

logger = logging.getLogger(__name__)

CLOSE_NOT_SIGNED_IN = 4401
CLOSE_NOT_FOUND = 4404
#: the subscriber fell too far behind and was dropped: the client reconnects with its lastSeq
CLOSE_TRY_AGAIN = 1013


def requested_last_seq(query_string: bytes) -> int | None:
    """``lastSeq`` of the query string, or None when absent; ``ValueError`` when not a whole number ≥ 0."""
    values = parse_qs(query_string.decode("latin-1")).get("lastSeq")
    if not values or values[-1] == "":
        return None
    value = values[-1]
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise ValueError(value)
    return int(value)


class ThreadConsumer(AsyncWebsocketConsumer):
    #: no channel of its own: the thread runtime brings chunks from other processes (one listener
    #: per thread and process), so a socket needs no reader on the channel layer (on Redis that
    #: would be one more blocking reader per connection)
    channel_layer_alias = None

    target: Target | None = None
    subscription = None
    pump: asyncio.Task | None = None

    async def connect(self) -> None:
        await self.accept()  # a close code reaches the browser only after the handshake
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_NOT_SIGNED_IN)
            return
        target = await self.resolve(Caller.of(user), self.scope["url_route"]["kwargs"])
        if target is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.target = target
        try:
            after = requested_last_seq(self.scope.get("query_string", b""))
        except ValueError:
            await self.send_json(error_frame("invalid_last_seq", "lastSeq must be a whole number from 0"))
            after = None
        snapshot = await athread_snapshot_build(resource_id=target.resource_id, thread_id=target.thread_id)
        if after is not None:
            snapshot["lastSeq"] = after
        self.subscription = await target.agent.subscribe_to_thread(
            resource_id=target.resource_id, thread_id=target.thread_id, after_seq=snapshot["lastSeq"])
        await self.send_json(snapshot)
        self.pump = asyncio.ensure_future(self.forward(self.subscription))

    async def resolve(self, caller: Caller, kwargs: dict) -> Target | None:
        """The agent and thread of the URL as the caller may use them, or None (4404)."""
        try:
            agent = get_mastra().get_agent(kwargs["agent_id"])
        except MastraError:
            return None
        if agent.memory is None:
            return None
        try:
            resource_id, thread_id = await caller.atarget(kwargs["thread_id"])
        except ThreadNotFound:
            return None
        except MastraError:  # an invalid thread id: no such thread
            return None
        return Target(agent=agent, resource_id=resource_id, thread_id=thread_id)

    async def forward(self, subscription) -> None:
        """Send the thread's chunks as they come; a dropped (overflowed) subscriber is told to
        reconnect with its last seq."""
        try:
            async for chunk in subscription.stream:
                await self.send(text_data=json.dumps(chunk))
            if subscription.overflowed:
                await self.close(code=CLOSE_TRY_AGAIN)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("chat websocket: forwarding chunks of %s failed", subscription.key)
            await self.close(code=1011)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.target is None:
            return
        frame = None
        try:
            frame = frame_parse(text_data, max_bytes=settings.MASTRA_CHAT_MAX_FRAME_BYTES)
            replies = await ACTIONS[frame.type](self.target, frame)
        except MastraError as exc:
            replies = [error_frame(exc.code, exc.message)]
        except Exception:
            logger.exception("chat websocket: a %s frame on %s failed", frame.type if frame else "client",
                             self.target.thread_id)
            replies = [error_frame("internal_error", "the frame could not be handled")]
        for reply in replies:
            await self.send_json(reply)

    async def disconnect(self, code) -> None:
        if self.pump is not None:
            self.pump.cancel()
        if self.subscription is not None:
            self.subscription.unsubscribe()

    async def send_json(self, content: dict) -> None:
        await self.send(text_data=json.dumps(content))


__all__ = ["CLOSE_NOT_FOUND", "CLOSE_NOT_SIGNED_IN", "ThreadConsumer"]
