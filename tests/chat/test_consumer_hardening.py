"""The chat websocket's guards: a socket whose session ended stops acting (4401), the frames that
send share the HTTP send routes' per-user rate, and only the site's own origin (or a trusted one)
may open a socket."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from agents.models import Message, Thread, ThreadInput
from tests.agents.thread_harness import wait_idle
from tests.chat.wsclient import close_code, frames_until, open_socket, send, session_cookie

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

User = get_user_model()


@sync_to_async
def stored_texts() -> list[str]:
    """Everything stored of the threads' inputs and messages, as text."""
    return ([str(signal) for signal in ThreadInput.objects.values_list("signal", flat=True)]
            + [str(content) for content in Message.objects.values_list("content", flat=True)])


# -- the session is checked on every frame ------------------------------------------------------
@sync_to_async
def log_out(cookie: str) -> None:
    client = Client()
    client.cookies["sessionid"] = cookie
    assert client.post("/logout/").status_code == 302


@sync_to_async
def expire(cookie: str) -> None:
    Session.objects.filter(session_key=cookie).update(expire_date=timezone.now() - timedelta(seconds=1))


@sync_to_async
def delete_session(cookie: str) -> None:
    Session.objects.filter(session_key=cookie).delete()


@sync_to_async
def deactivate(cookie: str) -> None:
    User.objects.filter(username="alice").update(is_active=False)


@sync_to_async
def change_password(cookie: str) -> None:
    user = User.objects.get(username="alice")
    user.set_password("another-secret")
    user.save()


SESSION_ENDS = {"log_out": log_out, "expire": expire, "delete_session": delete_session, "deactivate": deactivate,
                "change_password": change_password}
WRITE_FRAMES = [
    {"type": "send-message", "message": "after the end"},
    {"type": "queue-message", "message": "after the end"},
    {"type": "abort"},
    {"type": "tool-approval", "runId": "run_x", "toolCallId": "call_x", "approved": True},
    {"type": "cancel-queued", "signalId": "sig_x"},
]


@pytest.mark.parametrize("end", sorted(SESSION_ENDS))
async def test_a_send_after_the_session_ended_closes_4401_and_stores_nothing(chat_site, alice, end):
    cookie = await session_cookie(alice)
    comm = await open_socket(cookie=cookie)
    assert (await comm.receive_json_from())["type"] == "snapshot"
    await send(comm, {"type": "ping"})
    assert await comm.receive_json_from() == {"type": "pong"}
    await SESSION_ENDS[end](cookie)
    await send(comm, {"type": "send-message", "message": "after the end"})
    assert await close_code(comm) == 4401
    assert await sync_to_async(Thread.objects.count)() == 0
    assert await stored_texts() == []


@pytest.mark.parametrize("frame", WRITE_FRAMES, ids=[f["type"] for f in WRITE_FRAMES])
async def test_every_frame_that_acts_after_logout_closes_4401(chat_site, alice, frame):
    cookie = await session_cookie(alice)
    comm = await open_socket(cookie=cookie)
    await comm.receive_json_from()
    await log_out(cookie)
    await send(comm, frame)
    assert await close_code(comm) == 4401
    assert await stored_texts() == []


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_listening_socket_is_closed_4401_by_its_first_ping_a_minute_after_the_check(
        chat_site, alice, monkeypatch):
    from chat.consumers import ThreadConsumer

    clock = Clock()
    monkeypatch.setattr(ThreadConsumer, "clock", clock)
    cookie = await session_cookie(alice)
    comm = await open_socket(cookie=cookie)
    await comm.receive_json_from()
    await log_out(cookie)
    clock.now += 59
    await send(comm, {"type": "ping"})  # within a minute of the check at connect: not read again
    assert await comm.receive_json_from() == {"type": "pong"}
    clock.now += 1
    await send(comm, {"type": "ping"})
    assert await close_code(comm) == 4401


async def test_a_live_session_keeps_acting(chat_site, alice):
    comm = await open_socket(alice)
    await comm.receive_json_from()
    for _ in range(3):
        await send(comm, {"type": "ping"})
        assert await comm.receive_json_from() == {"type": "pong"}
    await send(comm, {"type": "send-message", "message": "still here"})
    assert (await frames_until(comm, "accepted"))[-1]["type"] == "accepted"
    await wait_idle("alice", "t1")
    await comm.disconnect()


# -- the send rate is the HTTP send routes' ------------------------------------------------------
@sync_to_async
def token_of(user) -> str:
    from rest_framework.authtoken.models import Token

    return Token.objects.create(user=user).key


async def http_send(token: str, message: str):
    from django.test import AsyncClient

    return await AsyncClient().post(
        "/api/agents/chat-bot/send-message", {"message": message, "threadId": "t1", "ifIdle": {"behavior": "persist"}},
        content_type="application/json", headers={"Authorization": f"Token {token}"})


async def test_http_sends_and_socket_frames_share_one_rate_per_user(chat_site, alice, monkeypatch):
    from rest_framework.throttling import ScopedRateThrottle

    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"agent-send": "3/min"})
    token = await token_of(alice)
    assert [(await http_send(token, f"http {n}")).status_code for n in (1, 2)] == [200, 200]
    comm = await open_socket(alice)
    await comm.receive_json_from()
    await send(comm, {"type": "queue-message", "message": "socket 3"})
    assert [f for f in await frames_until(comm, "queue") if f["type"] == "accepted"]
    await send(comm, {"type": "queue-message", "message": "over the limit"})
    error = (await frames_until(comm, "error"))[-1]
    assert error["code"] == "throttled"
    assert error["message"].startswith("Request was throttled. Expected available in ")
    await send(comm, {"type": "send-message", "message": "over the limit"})
    assert (await frames_until(comm, "error"))[-1]["code"] == "throttled"
    limited = await http_send(token, "over the limit")
    assert limited.status_code == 429
    # the socket stays open; frames that do not send are not counted
    await send(comm, {"type": "ping"})
    assert (await frames_until(comm, "pong"))[-1] == {"type": "pong"}
    await wait_idle("alice", "t1")
    stored = await stored_texts()
    assert not [text for text in stored if "over the limit" in text]
    assert [text for text in stored if "socket 3" in text]
    await comm.disconnect()


async def test_a_throttled_user_does_not_slow_another(chat_site, alice, monkeypatch):
    from rest_framework.throttling import ScopedRateThrottle

    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"agent-send": "1/min"})
    bob = await sync_to_async(User.objects.create_user)("bob", password="x")
    assert (await http_send(await token_of(alice), "alice 1")).status_code == 200
    comm = await open_socket(bob, thread="b1")
    await comm.receive_json_from()
    await send(comm, {"type": "queue-message", "message": "bob 1"})
    assert [f for f in await frames_until(comm, "queue") if f["type"] == "accepted"]
    await wait_idle("bob", "b1")
    await comm.disconnect()


# -- the origin ---------------------------------------------------------------------------------
ORIGIN_CASES = [
    # (Origin, Host, extra headers, accepted)
    ("http://localhost:8000", "localhost:8000", [], True),
    ("http://localhost:3000", "localhost:8000", [], False),
    ("https://localhost:8000", "localhost:8000", [], False),
    ("http://localhost", "localhost:8000", [], False),
    ("http://localhost:8000", "localhost", [], False),
    ("http://127.0.0.1:8000", "localhost:8000", [], False),
    ("null", "localhost:8000", [], False),
    (None, "localhost:8000", [], False),
    ("http://testserver", "testserver", [], True),
    # a name not in ALLOWED_HOSTS pointing at this server (DNS rebinding) is refused, same-origin or not
    ("http://evil.example:8000", "evil.example:8000", [], False),
]


@pytest.mark.parametrize("origin,host,extra,accepted", ORIGIN_CASES)
async def test_only_the_sites_own_origin_opens_a_socket(chat_site, alice, origin, host, extra, accepted):
    comm = await open_socket(alice, origin=origin.encode() if origin else None, host=host.encode(), headers=extra)
    assert comm.connected is accepted
    if accepted:
        assert (await comm.receive_json_from())["type"] == "snapshot"
        await comm.disconnect()


async def test_two_origin_headers_are_refused(chat_site, alice):
    comm = await open_socket(alice, origin=b"http://testserver", headers=[(b"origin", b"http://evil.example")])
    assert not comm.connected


async def test_a_trusted_origin_opens_a_socket_by_exact_scheme_host_and_port(chat_site, alice, settings):
    settings.ALLOWED_HOSTS = ["mastra.example.com"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://app.example.com", "https://*.tools.example.com"]
    host = b"mastra.example.com"
    for origin, accepted in [(b"https://app.example.com", True), (b"https://ci.tools.example.com", True),
                             (b"http://app.example.com", False), (b"https://app.example.com:8443", False),
                             (b"https://app.example.com.evil.example", False), (b"https://example.com", False)]:
        comm = await open_socket(alice, origin=origin, host=host)
        assert comm.connected is accepted, origin
        if accepted:
            await comm.receive_json_from()
            await comm.disconnect()


async def test_behind_a_tls_proxy_the_origin_is_https(chat_site, alice, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    proxied = [(b"x-forwarded-proto", b"https")]
    comm = await open_socket(alice, origin=b"https://localhost", host=b"localhost", headers=proxied)
    assert comm.connected
    await comm.receive_json_from()
    await comm.disconnect()
    assert not (await open_socket(alice, origin=b"http://localhost", host=b"localhost", headers=proxied)).connected
    # without the proxy's header the socket is plain ws: an https page is another origin
    assert not (await open_socket(alice, origin=b"https://localhost", host=b"localhost")).connected
    plain = await open_socket(alice, origin=b"http://localhost", host=b"localhost")
    assert plain.connected
    await plain.receive_json_from()
    await plain.disconnect()


async def test_a_wss_socket_is_an_https_origin(chat_site, alice):
    from channels.testing import WebsocketCommunicator

    from mastra_site.asgi import application

    cookie = await session_cookie(alice)
    for origin, accepted in [(b"https://localhost", True), (b"http://localhost", False)]:
        comm = WebsocketCommunicator(application, "/ws/agents/chat-bot/threads/t1/",
                                     headers=[(b"host", b"localhost"), (b"origin", origin),
                                              (b"cookie", f"sessionid={cookie}".encode())])
        comm.scope["scheme"] = "wss"
        connected, _ = await comm.connect()
        assert connected is accepted, origin
        if connected:
            await comm.receive_json_from()
            await comm.disconnect()
