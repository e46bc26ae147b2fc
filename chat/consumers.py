"""The chat websocket: ``/ws/agents/<agentId>/threads/<threadId>/?lastSeq=N`` (DESIGN §5).

On connect: close 4401 when not signed in, 4404 for an unknown agent (or one without memory) or a
thread the caller may not see (``agents.access.Caller``); else the snapshot (``chat.snapshot``),
then every chunk of the thread with its ``seq``. ``lastSeq`` resumes after that seq: the chunks
after it, each once. Client frames (``chat.frames``) are acted on by ``chat.actions``; a frame that
cannot be acted on gets ``{"type": "error", "code", "message"}`` and the socket stays open.

Before a client frame is acted on, the session is checked again (it may have been logged out,
expired or deleted, or its user deactivated since the socket connected): a socket whose session
ended is closed with 4401. Every frame that acts is checked; a ``ping`` (every 25 s from the page)
re-checks at most once a minute, so that a socket that only listens is closed soon after its
session ends without a database read per ping. ``send-message`` and ``queue-message`` count
against the user's send rate, the HTTP send routes' bucket (``agents.api.throttling``); one over
it gets a ``throttled`` error frame and is not acted on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from importlib import import_module
from types import SimpleNamespace
from urllib.parse import parse_qs
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib.auth import get_user

from agents.connections import async_twin
from agents.access import Caller, ThreadNotFound
from agents.api.throttling import send_rate_count
from agents.registry import get_mastra
from agents.runtime.errors import MastraError

from .actions import ACTIONS, Target
from .frames import Frame, chunk_fitted, chunk_text, error_frame, frame_limit, frame_parse, value_cut
from .snapshot import athread_snapshot_build, snapshot_chunk_window

logger = logging.getLogger(__name__)

CLOSE_NOT_SIGNED_IN = 4401
CLOSE_NOT_FOUND = 4404
#: the subscriber fell too far behind and was dropped: the client reconnects with its lastSeq
CLOSE_TRY_AGAIN = 1013
#: the frames that send into the thread: they count against the user's send rate
SEND_FRAMES = ("send-message", "queue-message")
#: a ping re-checks the session when the last check is older than this (seconds)
PING_SESSION_CHECK_S = 60.0


def requested_last_seq(query_string: bytes) -> int | None:
    """``lastSeq`` of the query string, or None when absent; ``ValueError`` when not a whole number ≥ 0."""
    values = parse_qs(query_string.decode("latin-1")).get("lastSeq")
    if not values or values[-1] == "":
        return None
    value = values[-1]
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise ValueError(value)
    return int(value)


def requested_resource(query_string: bytes) -> str | None:
    """``resourceId`` of the query string, or None."""
    values = parse_qs(query_string.decode("latin-1")).get("resourceId")
    return values[-1] if values and values[-1] else None


class NoSuchSocket(AsyncWebsocketConsumer):
    """A websocket path the chat does not serve: closed with 4404 once the handshake is done (a
    close code reaches the browser only then), so that the page stops retrying."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)


class ThreadConsumer(AsyncWebsocketConsumer):
    #: no channel of its own: the thread runtime brings chunks from other processes (one listener
    #: per thread and process), so a socket needs no reader on the channel layer (on Redis that
    #: would be one more blocking reader per connection)
    channel_layer_alias = None

    target: Target | None = None
    subscription = None
    pump: asyncio.Task | None = None
    #: the clock of the session checks (a test moves it)
    clock = staticmethod(time.monotonic)
    session_checked_at = 0.0

    async def connect(self) -> None:
        await self.accept()  # a close code reaches the browser only after the handshake
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_NOT_SIGNED_IN)
            return
        target = await self.resolve(Caller.of(user), self.scope["url_route"]["kwargs"], user=user)
        if target is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.target = target
        self.session_checked_at = self.clock()  # the session was read to sign the socket in
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

    async def resolve(self, caller: Caller, kwargs: dict, *, user=None) -> Target | None:
        """The agent and thread of the URL as the caller may use them, or None (4404)."""
        try:
            agent = get_mastra().get_agent(kwargs["agent_id"])
        except MastraError:
            return None
        if agent.memory is None:
            return None
        try:
            # staff watch another resource's thread by naming it (?resourceId=); a thread is
            # (resource, thread id), so another user's id alone names the caller's own thread
            resource_id, thread_id = await caller.atarget(kwargs["thread_id"], requested_resource(
                self.scope.get("query_string", b"")))
        except ThreadNotFound:
            return None
        except MastraError:  # an invalid thread id: no such thread
            return None
        return Target(agent=agent, resource_id=resource_id, thread_id=thread_id, user=user)

    async def forward(self, subscription) -> None:
        """Send the thread's chunks as they come; a dropped (overflowed) subscriber is told to
        reconnect with its last seq. A ``data-thread-snapshot`` carries the window of messages a
        snapshot does; a chunk over one websocket message is cut to fit (``chat.frames.chunk_fitted``)."""
        limit = frame_limit()
        try:
            async for chunk in subscription.stream:
                if chunk.get("type") == "data-thread-snapshot":
                    chunk = snapshot_chunk_window(chunk)
                await self.send(text_data=chunk_fitted(chunk, chunk_text(chunk), limit))
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
            if frame.type != "ping" or self.clock() - self.session_checked_at >= PING_SESSION_CHECK_S:
                if not await self.frame_admit(frame):
                    await self.close(code=CLOSE_NOT_SIGNED_IN)
                    return
                self.session_checked_at = self.clock()
            replies = await ACTIONS[frame.type](self.target, frame)
        except MastraError as exc:
            replies = [error_frame(exc.code, exc.message, frame.type if frame else None)]
        except Exception:
            logger.exception("chat websocket: a %s frame on %s failed", frame.type if frame else "client",
                             self.target.thread_id)
            replies = [error_frame("internal_error", "the frame could not be handled", frame.type if frame else None)]
        for reply in replies:
            await self.send_json(reply)

    @async_twin
    def frame_admit(self, frame: Frame) -> bool:
        """Whether the socket's session still signs in its user: False when the session was logged
        out, expired or deleted, its password hash no longer matches (a password change), or the user
        is gone or inactive. A send frame is also counted against the user's send rate
        (``SendRateExceeded``, code ``throttled``, when over it). Read afresh, never cached: a logout
        takes effect on the next frame that acts (a session and a user read, one cache update)."""
        key = self.scope["session"].session_key
        if not key:
            return False
        session = import_module(settings.SESSION_ENGINE).SessionStore(session_key=key)
        user = get_user(SimpleNamespace(session=session))  # Django's own check of a request's session
        if not (user.is_authenticated and user.is_active and user.pk == self.scope["user"].pk):
            return False
        if frame.type in SEND_FRAMES:
            send_rate_count(user)
        return True

    async def disconnect(self, code) -> None:
        if self.pump is not None:
            self.pump.cancel()
        if self.subscription is not None:
            self.subscription.unsubscribe()

    async def send_json(self, content: dict) -> None:
        """Send a frame of the socket's own (snapshot, queue, accepted, error); one over the
        websocket message size goes with its long strings cut (``chat.frames.value_cut``): the
        queue of several large inputs, say."""
        text = json.dumps(content)
        if len(text) > frame_limit():
            text = json.dumps({key: value_cut(value) for key, value in content.items()})
        await self.send(text_data=text)


__all__ = ["CLOSE_NOT_FOUND", "CLOSE_NOT_SIGNED_IN", "NoSuchSocket", "ThreadConsumer"]
