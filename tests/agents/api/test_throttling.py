"""The send routes' rate is counted in the default cache; with Redis every process shares the count
(a per-process cache would let N processes take N times the rate)."""

from __future__ import annotations

import time
import uuid

import pytest
import redis
from asgiref.sync import sync_to_async
from django.core.cache.backends.redis import RedisCache

from tests.agents.api.conftest import Api, body

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

SEND = {"message": "x", "threadId": "t1", "ifIdle": {"behavior": "persist"}}


@pytest.fixture
def redis_cache(settings, redis_url):
    """The default cache on Redis under a prefix of its own; its keys are deleted afterwards."""
    prefix = f"mastra-test-throttle-{uuid.uuid4().hex}"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url,
                                   "KEY_PREFIX": prefix}}
    client = redis.Redis.from_url(redis_url)
    yield prefix
    keys = list(client.scan_iter(f"{prefix}:*"))
    if keys:
        client.delete(*keys)
    client.close()


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
