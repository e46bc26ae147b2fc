"""A token checked once is trusted for ``MASTRA_API_TOKEN_CACHE_S`` in that process: the next request
reads no token and runs its checks without a hop to the worker thread. A token deleted, or its user
changed, in this process is refused at once; a cache of 0 seconds reads every time."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from agents.api import auth
from mastra_site.models import ApiToken
from tests.queries import statements

from .conftest import Api, body

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def agents_list(api: Api) -> tuple[int, list[str]]:
    with statements() as seen:
        response = await api.get("/api/agents")
    return response.status_code, seen


@pytest.mark.parametrize("scheme", ["Token", "Bearer"])
async def test_a_token_checked_once_is_not_read_again(alice, scheme):
    api = Api(alice.headers["Authorization"].split()[1], scheme=scheme)
    status, first = await agents_list(api)
    assert status == 200 and "SELECT authtoken_token" in first
    status, second = await agents_list(api)
    assert (status, second) == (200, [])


@pytest.mark.parametrize("model", [Token, ApiToken], ids=["drf", "admin"])
async def test_a_deleted_token_is_refused_at_once(alice, model):
    assert (await agents_list(alice))[0] == 200
    await sync_to_async(lambda: model.objects.get(user__username="alice").delete())()
    response = await alice.get("/api/agents")
    assert (response.status_code, body(response)["code"]) == (401, "authentication_failed")


async def test_a_deactivated_user_is_refused_at_once(alice):
    assert (await agents_list(alice))[0] == 200

    @sync_to_async
    def deactivate():
        user = get_user_model().objects.get(username="alice")
        user.is_active = False
        user.save()

    await deactivate()
    response = await alice.get("/api/agents")
    assert (response.status_code, body(response)["code"]) == (401, "authentication_failed")


async def test_the_cache_ends_after_its_seconds_and_can_be_off(alice, settings, monkeypatch):
    await agents_list(alice)
    clock = auth.time.monotonic() + settings.MASTRA_API_TOKEN_CACHE_S + 1
    monkeypatch.setattr(auth.time, "monotonic", lambda: clock)
    assert "SELECT authtoken_token" in (await agents_list(alice))[1]
    settings.MASTRA_API_TOKEN_CACHE_S = 0
    auth.token_cache.clear()
    for _ in range(2):
        assert "SELECT authtoken_token" in (await agents_list(alice))[1]


async def test_an_unknown_token_is_refused_every_time(anonymous):
    for _ in range(2):
        response = await Api("0" * 40).get("/api/agents")
        assert response.status_code == 401


async def test_a_send_counted_in_memory_checks_its_caller_on_the_event_loop(alice, hops, monkeypatch, settings):
    """With the rate counted in this process's memory (the embedded default) and the token cached,
    a send's checks make no hop; the rate still holds."""
    from rest_framework import throttling

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                                   "LOCATION": "test-send-rate"}}
    monkeypatch.setattr(throttling.ScopedRateThrottle, "THROTTLE_RATES", {"agent-send": "3/min"})
    send = {"message": "x", "threadId": "t1", "ifIdle": {"behavior": "persist"}}
    assert (await alice.post("/api/agents/echo/send-message", send)).status_code == 200
    hops.clear()
    assert (await alice.post("/api/agents/echo/send-message", send)).status_code == 200
    named = [hop for hop in hops if not hop.startswith("functools.partial")]  # sync_to_async's own submissions
    assert "ApiView.initial_checks" not in named and "Caller.target" not in named, named
    assert any("input_accept" in hop for hop in hops), hops  # the send's own database work
    assert (await alice.post("/api/agents/echo/send-message", send)).status_code == 200
    limited = await alice.post("/api/agents/echo/send-message", send)
    assert limited.status_code == 429 and body(limited)["code"] == "throttled"


async def test_a_token_expiring_between_the_look_and_the_checks_is_still_served(alice, monkeypatch):
    """The look that sends the checks to the event loop and the checks themselves use one cache
    entry: one that expires (or is forgotten) in between does not make the checks read the database
    on the event loop (a 500: ``SynchronousOnlyOperation``)."""
    from agents.api.base import ApiView

    assert (await alice.get("/api/agents")).status_code == 200  # the token is cached
    looked = ApiView.checks_cached

    def look_then_expire(view, request):
        cached = looked(view, request)
        auth.token_cache.clear()
        return cached

    monkeypatch.setattr(ApiView, "checks_cached", look_then_expire)
    with statements() as seen:
        response = await alice.get("/api/agents")
    assert response.status_code == 200 and seen == []
