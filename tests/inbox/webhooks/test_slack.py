"""Slack deliveries: v0 signature with a fresh timestamp, url_verification, app mentions (high) and
direct messages (medium), event ids and retries stored once, other events ignored."""

import json
import time

import pytest

from inbox.models import NotificationRecord, WebhookDelivery
from inbox.webhooks.slack import SlackVerifier, verifier
from tests.inbox.webhooks.conftest import SECRET, fixture_bytes, post, reply, slack_signature

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

URL = "/api/webhooks/slack/team"


async def deliver(body: bytes, *, timestamp: int | None = None, signature: str | None = None, retry: int | None = None):
    timestamp = int(time.time()) if timestamp is None else timestamp
    headers = {"X-Slack-Request-Timestamp": str(timestamp),
               "X-Slack-Signature": signature or slack_signature(body, timestamp)}
    if retry is not None:
        headers.update({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"})
    return await post(URL, body, headers)


async def records() -> list[NotificationRecord]:
    return [r async for r in NotificationRecord.objects.order_by("created_at", "id")]


async def test_url_verification_echoes_the_challenge(slack_endpoint):
    response = await deliver(fixture_bytes("slack", "url_verification"))
    assert response.status_code == 200
    assert reply(response) == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}


async def test_an_app_mention_is_a_high_mention(slack_endpoint):
    response = await deliver(fixture_bytes("slack", "app_mention"))
    assert response.status_code == 200 and reply(response)["threadId"] == "slack:C123ABC456"
    [record] = await records()
    assert (record.source, record.kind, record.priority, record.thread_id, record.source_id) == (
        "slack", "mention", "high", "alice\x1fslack:C123ABC456", "Ev123ABC456")
    assert record.summary == "U123ABC456 in C123ABC456: <@U0LAN0Z89> is the deploy stuck?"


async def test_a_direct_message_is_a_medium_direct_message(slack_endpoint):
    await deliver(fixture_bytes("slack", "message_im"))
    [record] = await records()
    assert (record.kind, record.priority, record.thread_id) == ("direct-message", "medium", "alice\x1fslack:D024BE91L")


async def test_retries_of_an_event_are_stored_once(slack_endpoint):
    body = fixture_bytes("slack", "app_mention")
    assert (await deliver(body)).status_code == 200
    for retry in (1, 2):
        again = await deliver(body, retry=retry)
        assert again.status_code == 200 and reply(again)["status"] == "duplicate"
    assert len(await records()) == 1
    assert await WebhookDelivery.objects.acount() == 1


async def test_an_old_timestamp_is_refused(slack_endpoint):
    old = int(time.time()) - 301
    response = await deliver(fixture_bytes("slack", "app_mention"), timestamp=old)
    assert response.status_code == 401
    assert reply(response)["message"] == "the request timestamp is more than five minutes old"
    assert await records() == []


async def test_a_bad_signature_is_refused(slack_endpoint):
    body = fixture_bytes("slack", "app_mention")
    response = await deliver(body, signature="v0=" + "0" * 64)
    assert response.status_code == 401 and reply(response)["code"] == "invalid_signature"
    assert await records() == [] and await WebhookDelivery.objects.acount() == 0


async def test_other_events_are_ignored_with_202(slack_endpoint):
    response = await deliver(fixture_bytes("slack", "reaction_added"))
    assert response.status_code == 202 and reply(response)["reason"] == "event 'reaction_added' is not handled"
    assert await records() == []


async def test_the_verifier_takes_an_injected_clock():
    body, ts = b"{}", 1_000_000
    checker = SlackVerifier()
    checker.timer = lambda: ts + 300
    assert checker.problem(SECRET, body, str(ts), slack_signature(body, ts)) is None
    checker.timer = lambda: ts + 301
    assert checker.problem(SECRET, body, str(ts), slack_signature(body, ts)) == (
        "the request timestamp is more than five minutes old")
    assert verifier.problem(SECRET, body, "soon", "v0=x") == "bad timestamp"


async def test_a_replay_of_a_signed_request_is_a_duplicate(slack_endpoint):
    # Slack signs the timestamp with the body and its event_id is in the body: a replay within
    # the five minutes is the same event
    body, now = fixture_bytes("slack", "app_mention"), int(time.time())
    assert reply(await deliver(body, timestamp=now))["status"] == "stored"
    again = await deliver(body, timestamp=now)
    assert again.status_code == 200 and reply(again) == {"ok": True, "status": "duplicate", "deliveryId": "Ev123ABC456"}
    assert len(await records()) == 1 and await WebhookDelivery.objects.acount() == 1


async def test_an_event_callback_without_an_event_id_is_400_and_stores_nothing(slack_endpoint):
    payload = json.loads(fixture_bytes("slack", "app_mention"))
    del payload["event_id"]
    body = json.dumps(payload).encode()
    for _ in range(2):
        response = await deliver(body)
        assert response.status_code == 400 and reply(response)["code"] == "missing_event_id"
    assert await records() == [] and await WebhookDelivery.objects.acount() == 0
