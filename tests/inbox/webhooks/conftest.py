"""Webhook tests: endpoints routed to the ``echo`` agent of the API test site, payloads from
``tests/fixtures``, requests signed as GitHub and Slack sign them."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

import pytest
from django.test import AsyncClient


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SECRET = "It's a Secret to Everybody"


@pytest.fixture(autouse=True)
def _api_site(api_site, settled_runs):
    """Every test here runs on ``tests.agents.api.site`` (tests/conftest.py)."""


@pytest.fixture(autouse=True)
def _refusal_batcher():
    """Each test starts with no refusal held or written by this process (the database under the
    batcher is rolled back between tests)."""
    from inbox.webhooks.refusals import refusal_batcher

    refusal_batcher.reset()
    yield
    refusal_batcher.reset()


def fixture_bytes(source: str, name: str) -> bytes:
    return (FIXTURES / source / f"{name}.json").read_bytes()


def github_signature(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def slack_signature(body: bytes, timestamp: int, secret: str = SECRET) -> str:
    return "v0=" + hmac.new(secret.encode(), f"v0:{timestamp}:".encode() + body, hashlib.sha256).hexdigest()


async def post(path: str, body: bytes, headers: dict, *, content_type: str = "application/json"):
    return await AsyncClient().post(path, body, content_type=content_type, headers=headers)


def reply(response) -> dict:
    return json.loads(response.content)


@pytest.fixture
async def github_endpoint(transactional_db):
    from inbox.models import WebhookEndpoint

    return await WebhookEndpoint.objects.acreate(
        name="ops", source="github", secret=SECRET, agent_id="echo", resource_id="alice",
        thread_template="github:{repository}", mention_name="ops-bot")


@pytest.fixture
async def slack_endpoint(transactional_db):
    from inbox.models import WebhookEndpoint

    return await WebhookEndpoint.objects.acreate(
        name="team", source="slack", secret=SECRET, agent_id="echo", resource_id="alice",
        thread_template="slack:{channel}")
