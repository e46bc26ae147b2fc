"""The send routes' rate is counted in the default cache; with Redis every process shares the count
(a per-process cache would let N processes take N times the rate)."""

from __future__ import annotations

import json
import time
import uuid

import pytest
import redis
from asgiref.sync import sync_to_async
from django.core.cache.backends.redis import RedisCache

from tests.agents.api.conftest import Api, body
from tests.redis_keys import forget_keys

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

SEND = {"message": "x", "threadId": "t1", "ifIdle": {"behavior": "persist"}}


@pytest.fixture
def redis_cache(settings, redis_url):
    """The default cache on Redis under a prefix of its own; its keys are deleted afterwards."""
    prefix = f"mastra-test-throttle-{uuid.uuid4().hex}"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url,
                                   "KEY_PREFIX": prefix}}
    yield prefix
    forget_keys(redis_url, f"{prefix}:*")


async def test_the_send_rate_is_shared_by_processes_through_redis(alice: Api, redis_cache, redis_url, monkeypatch):
    from django.contrib.auth import get_user_model
    from rest_framework.throttling import ScopedRateThrottle

    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"agent-send": "3/min"})
    user_id = (await get_user_model().objects.aget(username="alice")).pk
    key = f"throttle_agent-send_{user_id}"
    assert (await alice.post("/api/agents/echo/send-message", SEND)).status_code == 200
    # the count is in Redis, under the run's prefix
    assert redis.Redis.from_url(redis_url).exists(f"{redis_cache}:1:{key}") == 1
    # another process (a cache client of its own, configured alike) sees it and adds its own requests
    other = RedisCache(redis_url, {"KEY_PREFIX": redis_cache})
    history = await sync_to_async(other.get)(key)
    assert len(history) == 1
    await sync_to_async(other.set)(key, [time.time(), time.time(), *history], 60)
    limited = await alice.post("/api/agents/echo/send-message", SEND)
    assert limited.status_code == 429 and body(limited)["code"] == "throttled"


async def test_the_send_rate_is_counted_on_one_redis_connection(alice: Api, redis_cache, monkeypatch):
    """Each request is an async context of its own, and Django's ``caches`` hold one cache (one
    connection pool) per context: the count opened a new Redis connection for every request."""
    from redis.connection import Connection

    from channels.testing import HttpCommunicator

    from mastra_site.asgi import http_application

    opened = []
    connect = Connection._connect
    monkeypatch.setattr(Connection, "_connect", lambda self: opened.append(self) or connect(self))
    site = http_application()
    headers = [(b"host", b"testserver"), (b"content-type", b"application/json"),
               *((k.lower().encode(), v.encode()) for k, v in alice.headers.items())]
    for n in range(5):  # each request a task of its own, as under daphne
        sent = await HttpCommunicator(site, "POST", "/api/agents/echo/send-message", headers=headers,
                                      body=json.dumps({**SEND, "message": f"m{n}"}).encode()).get_response(timeout=10)
        assert sent["status"] == 200, sent["body"]
    assert len(opened) == 1


async def test_sends_go_through_while_the_rate_cache_is_down(alice: Api, settings, monkeypatch, caplog):
    """Redis down: the rate is not counted, but no accepted send becomes a 5xx (which a client
    retries, storing the input twice once Redis is back)."""
    import socket

    from rest_framework.throttling import ScopedRateThrottle

    from agents.models import ThreadInput, Message

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": dead,
                                   "OPTIONS": {"socket_connect_timeout": 0.2}}}
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"agent-send": "1/min"})
    caplog.set_level("DEBUG", logger="agents.api.throttling")
    answers = [await alice.post("/api/agents/echo/send-message", {**SEND, "message": f"m{i}"}) for i in range(3)]
    assert [r.status_code for r in answers] == [200, 200, 200]
    stored = await sync_to_async(lambda: Message.objects.filter(thread__thread_id="t1").count()
                                 + ThreadInput.objects.filter(thread__thread_id="t1").count())()
    assert stored == 3
    warnings = [r for r in caplog.records if r.name == "agents.api.throttling" and r.levelname == "WARNING"]
    assert len(warnings) == 1  # once per outage, not once per request
