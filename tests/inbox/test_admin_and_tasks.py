"""The admin of notification records (filters, thin actions), the Celery task and its beat entry."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from agents.models import Thread
from agents.runtime.notifications.validation import iso_z
from inbox.models import NotificationRecord, new_record_id

pytestmark = pytest.mark.django_db(transaction=True)

CHANGELIST = "admin:inbox_notificationrecord_changelist"


def make_record(**fields) -> NotificationRecord:
    now = timezone.now()
    defaults = {"id": new_record_id(), "agent_id": "ops-assistant", "resource_id": "u1", "thread_id": "t1",
                "source": "github", "kind": "ci-status", "summary": "CI failed", "created_at": now, "updated_at": now}
    fields = {**defaults, **fields}
    thread, _ = Thread.objects.get_or_create(thread_id=fields["thread_id"], resource_id=fields["resource_id"])
    return NotificationRecord.objects.create(**{**fields, "thread_id": thread.key})


def test_the_changelist_filters_by_status_priority_source_and_thread(admin_client):
    make_record(summary="first")
    make_record(summary="second", priority="high", priority_rank=2, source="slack", thread_id="t2", status="seen")
    page = admin_client.get(reverse(CHANGELIST))
    assert page.status_code == 200
    # no filter listing every thread of the site: a thread is found by search or by its link
    for title in ("By status", "By priority", "By source (last 7 days)", "By created at"):
        assert title.lower() in page.content.decode().lower()
    assert "by thread" not in page.content.decode().lower()
    searched = admin_client.get(reverse(CHANGELIST), {"q": "t2"}).content.decode()
    assert "second" in searched and "first" not in searched
    only = admin_client.get(reverse(CHANGELIST), {"status__exact": "seen", "priority__exact": "high",
                                                 "source": "slack", "thread__key__exact": "u1\x1ft2"})
    body = only.content.decode()
    assert only.status_code == 200 and "second" in body and "first" not in body


@pytest.mark.parametrize("action, status", [("dismiss", "dismissed"), ("archive", "archived")])
def test_dismiss_and_archive_actions(admin_client, action, status):
    a, b = make_record(), make_record()
    untouched = make_record()
    response = admin_client.post(reverse(CHANGELIST), {"action": action, "_selected_action": [a.id, b.id]},
                                 follow=True)
    assert response.status_code == 200 and f"2 notification(s) {status}." in response.content.decode()
    assert set(NotificationRecord.objects.values_list("status", flat=True)) == {status, "pending"}
    assert NotificationRecord.objects.get(pk=untouched.pk).status == "pending"


@pytest.mark.parametrize("broker, when", [(True, "now"), (False, "at the next dispatch (in-process scheduler)")])
def test_deliver_now_makes_records_due_even_into_an_active_run(admin_client, settings, monkeypatch, broker, when):
    from inbox.tasks import dispatch_due_notifications_task

    # with a Celery broker (REDIS_URL set) a dispatch task is queued at once; the queue's worker is
    # not this test's, so the task is counted here rather than left on a shared Redis
    settings.CELERY_TASK_ALWAYS_EAGER = not broker
    queued = []
    monkeypatch.setattr(dispatch_due_notifications_task, "delay", lambda: queued.append("dispatch"))
    failed = make_record(status="failed", delivery_attempts=5, deliver_when_idle=True)
    later = make_record(summary_at=timezone.now() + timedelta(hours=2), deliver_when_idle=True)
    response = admin_client.post(reverse(CHANGELIST), {"action": "deliver_now",
                                                       "_selected_action": [failed.id, later.id]}, follow=True)
    assert f"2 notification(s) will be delivered {when}." in response.content.decode()
    assert queued == (["dispatch"] if broker else [])
    for record in NotificationRecord.objects.all():
        assert record.status == "pending" and record.delivery_attempts == 0 and not record.deliver_when_idle
        assert record.next_due_at == record.deliver_at and record.deliver_at <= timezone.now()


def test_records_cannot_be_added_by_hand(admin_client):
    assert admin_client.get(reverse("admin:inbox_notificationrecord_add")).status_code == 403


def test_the_celery_task_dispatches_and_waits_for_the_runs_it_woke():
    from inbox.tasks import dispatch_due_notifications_task

    record = make_record(priority="urgent", priority_rank=3, deliver_at=timezone.now(), next_due_at=timezone.now())
    stats = dispatch_due_notifications_task.apply().get()
    assert stats["counts"]["delivered"] == 1
    record.refresh_from_db()
    assert record.status == "delivered"
    # JSON-safe, Mastra's shape: the delivered record with its date-times as ISO strings
    assert json.loads(json.dumps(stats)) == stats
    [delivered] = stats["delivered"]
    assert (delivered["id"], delivered["status"], delivered["delivered_signal_id"]) == (
        record.id, "delivered", record.delivered_signal_id)
    assert delivered["delivered_at"] == iso_z(record.delivered_at)
    assert [s["id"] for s in stats["signals"]] == [record.delivered_signal_id] and stats["failed"] == []
    from agents.models import Run

    assert Run.objects.get(thread__thread_id="t1").status == "completed"


def test_celery_beat_runs_the_dispatcher_every_interval():
    from mastra_site.celery import app

    entry = settings.CELERY_BEAT_SCHEDULE["dispatch-due-notifications"]
    assert entry["task"] == "inbox.dispatch_due_notifications"
    assert entry["schedule"] == float(settings.MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S) == 15.0
    app.loader.import_default_modules()
    assert "inbox.dispatch_due_notifications" in app.tasks


def test_without_a_broker_the_in_process_scheduler_is_the_default(monkeypatch):
    import importlib

    import mastra_site.settings as module

    for name in ("CELERY_BROKER_URL", "REDIS_URL", "MASTRA_NOTIFICATION_SCHEDULER"):
        monkeypatch.delenv(name, raising=False)
    embedded = importlib.reload(module)
    assert (embedded.CELERY_TASK_ALWAYS_EAGER, embedded.MASTRA_NOTIFICATION_SCHEDULER) == (True, True)
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://broker:6379/0")
    production = importlib.reload(module)
    assert (production.CELERY_TASK_ALWAYS_EAGER, production.MASTRA_NOTIFICATION_SCHEDULER) == (False, False)
    monkeypatch.delenv("CELERY_BROKER_URL")
    importlib.reload(module)
