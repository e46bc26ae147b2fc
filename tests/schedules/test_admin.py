"""The schedules admin: the list, the form (cron validated, the next five fire times in the
schedule's zone), the pause / resume / run-now actions through the same services, the history."""

from __future__ import annotations

import asyncio
from html import unescape

import pytest
from django.urls import reverse

from schedules.models import Schedule, ScheduleTrigger
from schedules.runner import drain_fires, schedules_tick

pytestmark = pytest.mark.django_db(transaction=True)
ADD = reverse("admin:schedules_schedule_add")
CHANGELIST = reverse("admin:schedules_schedule_changelist")
FORM = {"id": "", "agent_id": "plain", "thread_id": "", "resource_id": "", "prompt": "the digest", "name": "",
        "cron": "0 9 * * *", "timezone": "Asia/Tokyo", "status": "active", "misfire_policy": "once", "misfire_cap": "10"}


def test_the_form_refuses_a_bad_cron_and_a_bad_zone(admin_client):
    page = admin_client.post(ADD, {**FORM, "cron": "61 * * * *"})
    assert page.status_code == 200 and "[61 * * * *] is not acceptable, out of range" in page.content.decode()
    page = admin_client.post(ADD, {**FORM, "timezone": "Mars/Olympus"})
    assert 'Invalid timezone "Mars/Olympus"' in unescape(page.content.decode())
    page = admin_client.post(ADD, {**FORM, "resource_id": "alice"})
    assert "schedules.create: resourceId require a threadId." in page.content.decode()
    assert Schedule.objects.count() == 0


def test_a_schedule_made_in_the_admin_shows_its_next_five_fires_in_its_zone(admin_client, admin_user):
    page = admin_client.post(ADD, {**FORM, "id": "Tokyo Digest"})
    assert page.status_code == 302, page.content.decode()[-3000:]
    schedule = Schedule.objects.get()
    assert (schedule.id, schedule.agent_id, schedule.created_by_id, schedule.timezone) == (
        "agent_tokyo-digest", "plain", admin_user.pk, "Asia/Tokyo")
    change = admin_client.get(reverse("admin:schedules_schedule_change", args=[schedule.id])).content.decode()
    assert change.count("09:00:00 JST") == 5
    assert "no fire yet" in change
    listing = admin_client.get(CHANGELIST).content.decode()
    assert "agent_tokyo-digest" in listing and "09:00:00 JST" in listing


def test_pause_resume_and_run_now_act_through_the_services(admin_client):
    admin_client.post(ADD, {**FORM, "id": "digest"})
    admin_client.post(CHANGELIST, {"action": "pause", "_selected_action": ["agent_digest"]})
    assert Schedule.objects.get().status == "paused"
    admin_client.post(CHANGELIST, {"action": "resume", "_selected_action": ["agent_digest"]})
    assert Schedule.objects.get().status == "active"
    page = admin_client.post(CHANGELIST, {"action": "run_now", "_selected_action": ["agent_digest"]}, follow=True)
    assert "1 schedule(s) will fire at the scheduler's next tick." in unescape(page.content.decode())
    assert list(ScheduleTrigger.objects.values_list("trigger_kind", "outcome")) == [("manual", "claimed")]

    async def tick():
        counts = await schedules_tick()
        await drain_fires()
        return counts

    assert asyncio.run(tick())["redispatched"] == 1
    assert list(ScheduleTrigger.objects.values_list("outcome", flat=True)) == ["succeeded"]
    change = admin_client.get(reverse("admin:schedules_schedule_change", args=["agent_digest"])).content.decode()
    assert "<td>manual</td><td>succeeded</td>" in change
    assert Schedule.objects.get().last_outcome == "succeeded"
