"""The channels in the admin and on the dashboard: failed deliveries with the platform's error and
the retry action, rate-limit waits of the last hour, the approval decisions with who decided."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from agent_channels.models import (ChannelApproval, ChannelDecision, ChannelThread, OutboxMessage, RateLimitWait)
from mastra_site.dashboard import dashboard_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def rows():
    now = timezone.now()
    thread = ChannelThread.objects.create(agent_id="ops", platform="slack", key="T1:C1:1.1", resource_id="slack:T1",
                                          thread_id="slack:T1:C1:1.1",
                                          target={"team": "T1", "channel": "C1", "thread_ts": "1.1"})
    failed = OutboxMessage.objects.create(agent_id="ops", platform="slack", key="answer:r1:0", target=thread.target,
                                          bucket="slack:T1", body="hi", status="failed", attempts=6,
                                          last_error="channel_not_found", next_attempt_at=now, channel_thread=thread)
    OutboxMessage.objects.create(agent_id="ops", platform="slack", key="answer:r2:0", target=thread.target,
                                 bucket="slack:T1", body="ok", status="sent", next_attempt_at=now)
    RateLimitWait.objects.create(platform="slack", bucket="slack:T1", seconds=7)
    old = RateLimitWait.objects.create(platform="github", bucket="github:42", seconds=60)
    RateLimitWait.objects.filter(pk=old.pk).update(created_at=now - timedelta(hours=2))
    approval = ChannelApproval.objects.create(agent_id="ops", platform="slack", channel_thread=thread, run_id="r1",
                                              tool_call_id="c1", tool_name="delete", args={"path": "a"},
                                              args_hash="h", requested_by="U123", status="approved",
                                              decided_by="U123", decided_where="slack:T1:C1:2.2", decided_at=now)
    ChannelDecision.objects.create(approval=approval, user="U456", where="slack:T1:C1:2.2", decision="approve",
                                   outcome="refused")
    ChannelDecision.objects.create(approval=approval, user="U123", where="slack:T1:C1:2.2", decision="approve",
                                   outcome="accepted")
    return {"failed": failed, "approval": approval, "thread": thread}


def test_the_dashboard_counts_failed_deliveries_and_rate_limit_waits(rows):
    board = dashboard_build()
    assert (board.deliveries_failed.count, board.rate_waits.count) == (1, 1)
    assert board.deliveries_failed.url == reverse("admin:agent_channels_outboxmessage_changelist") + "?status=failed"


def test_the_outbox_admin_shows_the_error_and_retries(admin_client, rows):
    page = admin_client.get(reverse("admin:agent_channels_outboxmessage_changelist") + "?status=failed")
    assert page.status_code == 200 and b"channel_not_found" in page.content
    response = admin_client.post(reverse("admin:agent_channels_outboxmessage_changelist"),
                                 {"action": "retry", "_selected_action": [rows["failed"].pk]})
    assert response.status_code == 302
    row = OutboxMessage.objects.get(pk=rows["failed"].pk)
    assert (row.status, row.attempts) == ("pending", 0)
    change = reverse("admin:agent_channels_outboxmessage_change", args=[row.pk])
    assert admin_client.post(change, {"body": "edited"}).status_code == 403


def test_the_approval_admin_shows_who_decided_where(admin_client, rows):
    page = admin_client.get(reverse("admin:agent_channels_channelapproval_change", args=[rows["approval"].pk]))
    assert page.status_code == 200
    for text in (b"U123", b"slack:T1:C1:2.2", b"refused", b"accepted"):
        assert text in page.content


def test_a_channel_thread_links_to_its_memory_thread_and_the_platform(admin_client, rows):
    page = admin_client.get(reverse("admin:agent_channels_channelthread_changelist"))
    assert page.status_code == 200
    assert b"https://app.slack.com/client/T1/C1/thread/C1-1.1" in page.content
    assert reverse("admin:agents_thread_change", args=["slack:T1\x1fslack:T1:C1:1.1"]).encode() in page.content
