"""Channel tests at the wire: a fake Slack Web API and a fake GitHub REST API on loopback
(``agent_channels.fakes``), the real ``slack_sdk`` and ``githubkit`` pointed at them, and requests
signed as the platforms sign them, posted to the site's route."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import urlencode

import pytest
from django.test import AsyncClient
from django.utils import timezone

from agent_channels.fakes import FakeGitHub, FakeSlack
from agent_channels.handoff import handoffs_wait
from agent_channels.identities import identities_forget
from agent_channels.models import OutboxMessage
from agent_channels.work import channels_work
from tests.agent_channels import site
from tests.agent_channels.site import GITHUB_SECRET, SLACK_SECRET

pytestmark = [pytest.mark.asyncio]


@dataclass
class Clock:
    """The passes' clock: starts now, each ``tick()`` moves it on by ``step`` seconds."""

    now: datetime = field(default_factory=timezone.now)
    step: float = 5.0

    def tick(self, seconds: float | None = None) -> datetime:
        self.now += timedelta(seconds=self.step if seconds is None else seconds)
        return self.now


@pytest.fixture
async def slack_fake():
    fake = FakeSlack(users={"U123": "Alice", "U456": "Bob", "U789": "Carol"})
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
async def github_fake():
    fake = FakeGitHub(permissions={"octocat": "admin", "hubot": "write", "visitor": "read"})
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
def make_site(settings, slack_fake, github_fake):
    """``make_site(models={...}, timeout=...)``: the agents on the fakes as the site's registry."""
    from agents.registry import get_mastra

    settings.MASTRA = "tests.agent_channels.site:mastra"
    settings.MASTRA_CHANNELS_GITHUB_WRITE_INTERVAL_MS = 0
    identities_forget()
    site.deleted.clear()

    def make(**options):
        site.build(slack_fake.api_url, github_fake.url, **options)
        get_mastra.cache_clear()
        return site.mastra

    yield make
    get_mastra.cache_clear()


@pytest.fixture
async def channel_site(make_site, transactional_db, settle):
    mastra = make_site()
    yield mastra
    await handoffs_wait()
    await settle(timeout=5.0)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def drive(settle, clock):
    """``await drive()``: hand off, relay and send until nothing is left to do (each pass on the
    test's clock, which moves on 5 s a pass); returns the passes run."""

    async def run(passes: int = 30) -> int:
        for n in range(1, passes + 1):
            await handoffs_wait()
            await settle()
            result = await channels_work(now=clock.tick())
            await settle()
            if not any(result.values()) and not await OutboxMessage.objects.filter(
                    status=OutboxMessage.Status.PENDING).aexists():
                return n
        raise AssertionError(f"the channels were still busy after {passes} passes")

    return run


# -- Slack -------------------------------------------------------------------------------------------
def slack_headers(body: bytes, *, timestamp: int | None = None, secret: str = SLACK_SECRET,
                  retry: int | None = None) -> dict:
    timestamp = int(time.time()) if timestamp is None else timestamp
    signature = "v0=" + hmac.new(secret.encode(), f"v0:{timestamp}:".encode() + body, hashlib.sha256).hexdigest()
    headers = {"X-Slack-Request-Timestamp": str(timestamp), "X-Slack-Signature": signature}
    if retry is not None:
        headers.update({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"})
    return headers


def slack_url(agent: str = "ops") -> str:
    return f"/api/agents/{agent}/channels/slack/webhook"


async def slack_post(payload: dict, *, agent: str = "ops", **signing) -> tuple[int, dict]:
    body = json.dumps(payload).encode()
    response = await AsyncClient().post(slack_url(agent), body, content_type="application/json",
                                        headers=slack_headers(body, **signing))
    return response.status_code, json.loads(response.content)


async def slack_click(payload: dict, *, agent: str = "ops", **signing) -> tuple[int, dict]:
    body = urlencode({"payload": json.dumps(payload)}).encode()
    response = await AsyncClient().post(slack_url(agent), body, content_type="application/x-www-form-urlencoded",
                                        headers=slack_headers(body, **signing))
    return response.status_code, json.loads(response.content)


def slack_event(event: dict, *, event_id: str, team: str = "T1") -> dict:
    return {"token": "x", "team_id": team, "api_app_id": "A1", "type": "event_callback", "event_id": event_id,
            "event_time": 1700000000, "event": event}


def mention(text: str, *, ts: str, user: str = "U123", channel: str = "C1", thread_ts: str | None = None,
            event_id: str | None = None) -> dict:
    event = {"type": "app_mention", "user": user, "text": f"<@UBOT> {text}", "ts": ts, "channel": channel}
    if thread_ts:
        event["thread_ts"] = thread_ts
    return slack_event(event, event_id=event_id or f"Ev{ts}")


def message(text: str, *, ts: str, user: str = "U123", channel: str = "C1", thread_ts: str | None = None,
            channel_type: str = "channel", event_id: str | None = None, **extra) -> dict:
    event = {"type": "message", "user": user, "text": text, "ts": ts, "channel": channel,
             "channel_type": channel_type, **extra}
    if thread_ts:
        event["thread_ts"] = thread_ts
    return slack_event(event, event_id=event_id or f"Evm{ts}")


# -- GitHub ------------------------------------------------------------------------------------------
def github_headers(body: bytes, *, event: str, delivery: str, secret: str = GITHUB_SECRET) -> dict:
    return {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
            "X-Hub-Signature-256": "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()}


async def github_post(payload: dict, *, event: str, delivery: str, agent: str = "ops", **signing) -> tuple[int, dict]:
    body = json.dumps(payload).encode()
    response = await AsyncClient().post(f"/api/agents/{agent}/channels/github/webhook", body,
                                        content_type="application/json",
                                        headers=github_headers(body, event=event, delivery=delivery, **signing))
    return response.status_code, json.loads(response.content)


def issue_comment(body: str, *, comment_id: int, login: str = "octocat", association: str = "OWNER",
                  number: int = 7, repository: str = "octo/repo", user_type: str = "User") -> dict:
    return {"action": "created", "installation": {"id": 42},
            "repository": {"full_name": repository},
            "issue": {"number": number, "title": "Deploy is stuck"},
            "comment": {"id": comment_id, "body": body, "author_association": association,
                        "user": {"login": login, "type": user_type},
                        "html_url": f"https://github.test/{repository}/issues/{number}#issuecomment-{comment_id}"},
            "sender": {"login": login}}
