"""The retention sweeper (``agents.retention``, ``inbox.retention``, ``mastra_site.sweeper``): what
each table keeps and deletes, in batches, under one lock; ``manage.py sweep``; its schedulers."""

from __future__ import annotations

import asyncio
import io
import threading
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import Run, ThreadEvent, ThreadInput, ThreadLease, ToolApproval
from agents.observability import Score, TraceSpan
from agents.threads.events import events_read
from inbox.models import NotificationRecord, WebhookDelivery, WebhookRefusal
from mastra_site import sweeper
from mastra_site.sweeper import POLICIES, sweep_lock, sweep_run
from mastra_site.tasks import sweep_retention_task
from mastra_site.workers import JOBS
from tests.mastra_site import rows
from tests.mastra_site.rows import NOW, ago

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def retention(settings):
    settings.MASTRA_RETENTION_DAYS = {"thread_events": 14, "thread_inputs": 30, "runs": 90, "notifications": 90,
                                      "webhook_deliveries": 30, "budget_counters": 400,
                                      "ledger_entries": 400, "ledger_daily": 3650}
    settings.MASTRA_SWEEP_BATCH = 500
    settings.MASTRA_SWEEP_PAUSE_MS = 0


def sweep(**kwargs) -> dict:
    return {o.table: o.rows for o in sweep_run(now=NOW, **kwargs).outcomes if o.rows}


def test_every_policy_has_a_setting_and_every_setting_a_policy():
    assert {p.setting for p in POLICIES} == set(django_settings.MASTRA_RETENTION_DAYS)
    assert [p.table for p in POLICIES] == ["agents.ThreadEvent", "agents.ThreadInput", "agents.Run",
                                           "agents.TraceSpan", "agents.Score", "inbox.NotificationRecord",
                                           "inbox.WebhookDelivery", "inbox.WebhookRefusal",
                                           "budgets.BudgetCounter", "budgets.ActiveRunSlot",
                                           "ledger.LedgerEntry", "ledger.LedgerDaily", "ledger.LedgerResourceDaily"]


def test_budget_counters_not_added_to_for_the_setting_go_with_dead_runs_slots():
    from budgets.models import ActiveRunSlot, BudgetCounter

    def counter(period_key, at):
        BudgetCounter.objects.create(counter_key="d|site|", period_key=period_key, budget_id="d", scope="site",
                                     unit="usd", mode="hard", limit=1, spent=0, updated_at=at)

    counter("2025-10-01", NOW - timedelta(days=401))
    counter("2025-11-01", NOW - timedelta(days=399))
    ActiveRunSlot.objects.create(run_id="dead", agent_id="a", acquired_at=NOW - timedelta(days=402),
                                 expires_at=NOW - timedelta(days=401))
    assert sweep() == {"budgets.BudgetCounter": 1, "budgets.ActiveRunSlot": 1}
    assert list(BudgetCounter.objects.values_list("period_key", flat=True)) == ["2025-11-01"]


# -- thread events --------------------------------------------------------------------------------
def test_old_events_of_an_idle_thread_go_and_an_active_threads_stay():
    idle = rows.thread("alice", "t1")
    busy = rows.thread("bob", "t1", owner_run_id="run-b")
    rows.events(idle, range(1, 7), at=ago(20))
    rows.events(idle, range(7, 11), at=ago(1))
    rows.events(busy, range(1, 5), at=ago(20), run_id="run-b")
    assert sweep() == {"agents.ThreadEvent": 6}
    assert list(ThreadEvent.objects.filter(thread=idle).values_list("seq", flat=True)) == [7, 8, 9, 10]
    assert ThreadEvent.objects.filter(thread=busy).count() == 4
    assert (ThreadLease.objects.get(thread=idle).swept_seq, ThreadLease.objects.get(thread=busy).swept_seq) == (6, 0)


def test_the_events_of_a_running_run_stay_even_on_an_idle_lease():
    t = rows.thread("alice", "t1")
    rows.run("run-1", resource_id="alice", t=t, status=Run.Status.RUNNING, started=ago(30))
    rows.events(t, range(1, 4), at=ago(20), run_id="run-1")
    rows.events(t, range(4, 6), at=ago(20), run_id="run-0")
    assert sweep() == {"agents.ThreadEvent": 2}
    assert list(ThreadEvent.objects.filter(thread=t).values_list("seq", flat=True)) == [1, 2, 3]


def test_a_subscriber_resuming_from_a_swept_stretch_gets_the_snapshot_first():
    t = rows.thread("alice", "t1")
    rows.message(t, "m1")
    rows.events(t, range(1, 7), at=ago(20))
    rows.events(t, range(7, 10), at=ago(1))
    sweep()
    replay = events_read(key=t.key, after_seq=2)
    assert [(c["type"], c["seq"]) for c in replay] == [("data-thread-snapshot", 6), ("text-delta", 7),
                                                       ("text-delta", 8), ("text-delta", 9)]
    # the thread's messages in Mastra's stored format, as the HTTP API serves them
    assert [m["content"]["parts"] for m in replay[0]["data"]["messages"]] == [[{"type": "text", "text": "hello"}]]
    # from the edge of the swept stretch on: the events, no snapshot
    assert [c["seq"] for c in events_read(key=t.key, after_seq=6)] == [7, 8, 9]


def test_a_thread_whose_events_were_all_swept_resumes_with_the_snapshot():
    t = rows.thread("alice", "t1")
    rows.message(t, "m1")
    rows.events(t, range(1, 5), at=ago(20))
    sweep()
    assert [(c["type"], c["seq"]) for c in events_read(key=t.key, after_seq=1)] == [("data-thread-snapshot", 4)]
    assert events_read(key=t.key, after_seq=4) == []


def test_events_are_deleted_in_batches_of_the_setting(settings):
    settings.MASTRA_SWEEP_BATCH = 3
    t = rows.thread("alice", "t1")
    rows.events(t, range(1, 11), at=ago(20))
    rows.events(t, range(11, 13), at=ago(1))
    with CaptureQueriesContext(connection) as queries:
        assert sweep() == {"agents.ThreadEvent": 10}
    deletes = [q["sql"] for q in queries.captured_queries
               if q["sql"].startswith("DELETE") and "agents_threadevent" in q["sql"]]
    assert len(deletes) == 4  # 3 + 3 + 3 + 1
    assert ThreadEvent.objects.filter(thread=t).count() == 2


# -- runs, traces, scores, approvals --------------------------------------------------------------
def test_finished_runs_go_with_their_spans_and_scores_and_active_ones_stay():
    t = rows.thread("alice", "t1")
    rows.run("old-done", resource_id="alice", t=t, finished=ago(100))
    rows.run("old-failed", resource_id="alice", t=t, status=Run.Status.FAILED, finished=ago(100))
    rows.run("new-done", resource_id="alice", t=t, finished=ago(10))
    rows.run("suspended", resource_id="alice", t=t, status=Run.Status.SUSPENDED, started=ago(200))
    for run_id in ("old-done", "old-failed", "suspended", "no-row"):
        rows.span(run_id, at=ago(100))
        rows.score(run_id, at=ago(100))
    rows.span("new-done", at=ago(10))
    rows.approval("old-done", "call-1")
    rows.approval("old-failed", "call-2", status=ToolApproval.Status.DECLINED)
    assert sweep() == {"agents.Run": 2, "agents.TraceSpan": 3, "agents.Score": 3}
    assert sorted(Run.objects.values_list("id", flat=True)) == ["new-done", "suspended"]
    assert sorted(TraceSpan.objects.values_list("run_id", flat=True)) == ["new-done", "suspended"]
    assert list(Score.objects.values_list("run_id", flat=True)) == ["suspended"]
    # the audit trail: approval decisions are kept
    assert sorted(ToolApproval.objects.values_list("run_id", "status")) == [("old-done", "approved"),
                                                                            ("old-failed", "declined")]


def test_consumed_and_cancelled_inputs_go_and_pending_failed_and_busy_ones_stay():
    idle = rows.thread("alice", "t1")
    busy = rows.thread("alice", "t2", owner_run_id="run-b")
    rows.thread_input(idle, "i1", status=ThreadInput.Status.CONSUMED, at=ago(40))
    rows.thread_input(idle, "i2", status=ThreadInput.Status.CANCELLED, at=ago(40))
    rows.thread_input(idle, "i3", status=ThreadInput.Status.PENDING, at=ago(40))
    rows.thread_input(idle, "i4", status=ThreadInput.Status.FAILED, at=ago(40))
    rows.thread_input(busy, "i5", status=ThreadInput.Status.CONSUMED, at=ago(40))
    rows.thread_input(idle, "i6", status=ThreadInput.Status.CONSUMED, at=ago(5))
    assert sweep() == {"agents.ThreadInput": 2}
    assert list(ThreadInput.objects.values_list("input_id", flat=True)) == ["i3", "i4", "i5", "i6"]


# -- the inbox ------------------------------------------------------------------------------------
def test_notification_records_go_once_no_longer_pending():
    t = rows.thread("alice", "t1")
    pending = rows.notification(t, status=NotificationRecord.Status.PENDING, at=ago(200))
    rows.notification(t, status=NotificationRecord.Status.DELIVERED, at=ago(100))
    rows.notification(t, status=NotificationRecord.Status.DISMISSED, at=ago(100))
    seen = rows.notification(t, status=NotificationRecord.Status.SEEN, at=ago(10))
    assert sweep() == {"inbox.NotificationRecord": 2}
    assert sorted(NotificationRecord.objects.values_list("id", flat=True)) == sorted([pending.id, seen.id])


def test_webhook_deliveries_go_but_those_being_handled():
    e = rows.endpoint("gh", resource_id="alice")
    rows.delivery(e, "d1", at=ago(40))
    rows.delivery(e, "d2", at=ago(40), outcome=WebhookDelivery.Outcome.RECEIVED)
    rows.delivery(e, "d3", at=ago(40), outcome=WebhookDelivery.Outcome.IGNORED)
    rows.delivery(e, "d4", at=ago(2))
    assert sweep() == {"inbox.WebhookDelivery": 2}
    assert list(WebhookDelivery.objects.order_by("delivery_id").values_list("delivery_id", flat=True)) == ["d2", "d4"]


def test_refused_webhook_requests_go_by_their_last_request():
    e = rows.endpoint("gh", resource_id="alice")
    for name, last in (("old", ago(40)), ("recent", ago(2))):
        WebhookRefusal.objects.create(source="github", name=name, endpoint=e, code="invalid_signature", status=401,
                                      minute=ago(41), first_at=ago(41), last_at=last)
    assert sweep() == {"inbox.WebhookRefusal": 1}
    assert list(WebhookRefusal.objects.values_list("name", flat=True)) == ["recent"]


# -- settings, dry run, the command ---------------------------------------------------------------
def test_zero_days_keeps_a_table_forever(settings):
    settings.MASTRA_RETENTION_DAYS = {**settings.MASTRA_RETENTION_DAYS, "thread_events": 0}
    t = rows.thread("alice", "t1")
    rows.events(t, range(1, 4), at=ago(5000))
    assert sweep() == {}
    assert ThreadEvent.objects.count() == 3


def plant_expired() -> None:
    t = rows.thread("alice", "t1")
    rows.events(t, range(1, 4), at=ago(20))
    rows.run("old", resource_id="alice", t=t, finished=ago(100))
    rows.notification(t, status=NotificationRecord.Status.SEEN, at=ago(100))
    rows.ledger_entry("old", at=ago(401))
    rows.ledger_entry("recent", at=ago(399))
    rows.ledger_day(at=ago(3651))


def test_a_dry_run_counts_and_deletes_nothing():
    plant_expired()
    report = sweep_run(now=NOW, dry_run=True)
    assert {o.table: o.rows for o in report.outcomes} == {
        "agents.ThreadEvent": 3, "agents.ThreadInput": 0, "agents.Run": 1, "agents.TraceSpan": 0, "agents.Score": 0,
        "inbox.NotificationRecord": 1, "inbox.WebhookDelivery": 0, "inbox.WebhookRefusal": 0,
        "budgets.BudgetCounter": 0,
        "budgets.ActiveRunSlot": 0, "ledger.LedgerEntry": 1, "ledger.LedgerDaily": 1,
        "ledger.LedgerResourceDaily": 1}
    assert (ThreadEvent.objects.count(), Run.objects.count(), NotificationRecord.objects.count()) == (3, 1, 1)


def test_the_sweep_command_prints_each_table(settings):
    settings.MASTRA_RETENTION_DAYS = {**settings.MASTRA_RETENTION_DAYS, "webhook_deliveries": 0}
    t = rows.thread("alice", "t1")
    rows.events(t, range(1, 4), at=ago(5000))
    out = io.StringIO()
    call_command("sweep", "--dry-run", stdout=out)
    assert out.getvalue().splitlines() == [
        "agents.ThreadEvent: would delete 3 (thread_events, older than 14 days)",
        "agents.ThreadInput: would delete 0 (thread_inputs, older than 30 days)",
        "agents.Run: would delete 0 (runs, older than 90 days)",
        "agents.TraceSpan: would delete 0 (runs, older than 90 days)",
        "agents.Score: would delete 0 (runs, older than 90 days)",
        "inbox.NotificationRecord: would delete 0 (notifications, older than 90 days)",
        "inbox.WebhookDelivery: would delete 0 (webhook_deliveries, kept forever)",
        "inbox.WebhookRefusal: would delete 0 (webhook_deliveries, kept forever)",
        "budgets.BudgetCounter: would delete 0 (budget_counters, older than 400 days)",
        "budgets.ActiveRunSlot: would delete 0 (budget_counters, older than 400 days)",
        "ledger.LedgerEntry: would delete 0 (ledger_entries, older than 400 days)",
        "ledger.LedgerDaily: would delete 0 (ledger_daily, older than 3650 days)",
        "ledger.LedgerResourceDaily: would delete 0 (ledger_daily, older than 3650 days)",
        "total: would delete 3",
    ]
    assert ThreadEvent.objects.count() == 3
    out = io.StringIO()
    call_command("sweep", stdout=out)
    assert out.getvalue().splitlines()[0] == "agents.ThreadEvent: deleted 3 (thread_events, older than 14 days)"
    assert out.getvalue().splitlines()[-1] == "total: deleted 3"
    assert ThreadEvent.objects.count() == 0


# -- one sweep at a time --------------------------------------------------------------------------
def hold_lock_elsewhere(release: threading.Event, held: threading.Event) -> None:
    from django.db import connections

    try:
        with sweep_lock() as got:
            assert got
            held.set()
            release.wait(10)
    finally:
        connections.close_all()


def test_a_sweep_while_another_holds_the_lock_does_nothing():
    plant_expired()
    release, held = threading.Event(), threading.Event()
    other = threading.Thread(target=hold_lock_elsewhere, args=(release, held))
    other.start()
    try:
        assert held.wait(10)
        report = sweep_run(now=NOW)
        with pytest.raises(CommandError, match="^another sweep is running"):
            call_command("sweep", stdout=io.StringIO())
    finally:
        release.set()
        other.join(10)
    assert (report.skipped, report.outcomes) == (True, ())
    assert ThreadEvent.objects.count() == 3
    assert sweep_run(now=NOW).skipped is False  # released
    assert ThreadEvent.objects.count() == 0


def test_the_lock_is_postgresql_advisory_lock_there(postgres_db):
    with sweep_lock() as got:
        assert got
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                           "AND pid = pg_backend_pid()")
            assert cursor.fetchone()[0] == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
        assert cursor.fetchone()[0] == 0


# -- who runs it ----------------------------------------------------------------------------------
def test_celery_beat_runs_the_sweep_task():
    entry = django_settings.CELERY_BEAT_SCHEDULE["sweep-retention"]
    assert entry["task"] == sweep_retention_task.name == "mastra_site.sweep_retention"
    assert entry["schedule"] == float(django_settings.MASTRA_SWEEP_INTERVAL_S)


def test_the_task_sweeps_and_returns_its_report():
    t = rows.thread("alice", "t1")
    rows.events(t, range(1, 4), at=ago(5000))
    report = sweep_retention_task()
    assert report["skipped"] is False and report["rows"] == 3
    assert report["tables"][0] == {"table": "agents.ThreadEvent", "setting": "thread_events", "days": 14,
                                   "rows": 3, "dryRun": False}


def test_the_in_process_scheduler_runs_it_when_there_is_no_broker(settings):
    job = next(j for j in JOBS if j.name == "retention-sweep")
    settings.MASTRA_SWEEP_SCHEDULER = True
    settings.MASTRA_SWEEP_INTERVAL_S = 120
    assert (job.enabled(), job.interval()) == (True, 120.0)
    settings.MASTRA_SWEEP_SCHEDULER = False
    assert job.enabled() is False


@pytest.mark.django_db(transaction=True)
def test_the_background_job_sweeps_on_its_own_thread():
    t = rows.thread("alice", "t1")
    rows.events(t, range(1, 4), at=ago(5000))
    report = asyncio.run(sweeper.sweep_in_background())
    assert report.rows == 3
    assert ThreadEvent.objects.count() == 0


def test_the_sweep_rests_between_batches_to_keep_within_its_duty():
    """A batch that took 0.1 s is followed by 0.3 s of rest at a 25 % duty, and never by less than
    the pause setting."""
    from agents.retention import THREAD_EVENTS, policy_sweep

    t = rows.thread("alice", "t1")
    rows.events(t, range(1, 7), at=ago(20))
    ticks = iter(x * 0.1 for x in range(1000))
    slept = []
    outcome = policy_sweep(THREAD_EVENTS, days=14, batch=2, pause_s=0.01, duty=0.25, now=NOW,
                           clock=lambda: next(ticks), sleep=slept.append)
    assert outcome.rows == 6
    assert [round(s, 6) for s in slept] == [0.3, 0.3, 0.3]
    slept.clear()
    rows.events(t, range(7, 11), at=ago(20))
    policy_sweep(THREAD_EVENTS, days=14, batch=2, pause_s=0.5, duty=0.25, now=NOW, clock=lambda: next(ticks),
                 sleep=slept.append)
    assert slept == [0.5, 0.5]
