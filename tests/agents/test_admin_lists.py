"""The admin's lists of tables that grow without bound (agents.admin_lists): filters offer the
values of the last days, an unfiltered list of a large PostgreSQL table is counted from the
planner's statistics, a filtered one exactly."""

from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from agents.models import Run
from agents import admin_lists
from tests.queries import statements

pytestmark = pytest.mark.django_db(transaction=True)

RUNS = reverse("admin:agents_run_changelist")


def make_run(run_id: str, agent_id: str, *, days_ago: float = 0, **fields) -> Run:
    return Run.objects.create(id=run_id, agent_id=agent_id, started_at=timezone.now() - timedelta(days=days_ago),
                              **fields)


def test_the_runs_filters_offer_the_last_weeks_values_and_still_filter_by_older_ones(admin_client):
    make_run("r-new", "triage", error_code="provider_http_error", status="failed")
    make_run("r-old", "retired-bot", days_ago=30, error_code="tool_timeout", status="failed")
    page = admin_client.get(RUNS).content.decode()
    assert "By agent id (last 7 days)" in page and "By error code (last 7 days)" in page
    assert "?agent_id=triage" in page and "?error_code=provider_http_error" in page
    assert "?agent_id=retired-bot" not in page and "?error_code=tool_timeout" not in page
    old = admin_client.get(RUNS, {"agent_id": "retired-bot"}).content.decode()
    assert "r-old" in old and "r-new" not in old
    failed_recently = admin_client.get(RUNS, {"status": "failed", "error_code": "provider_http_error"}).content.decode()
    assert "r-new" in failed_recently and "r-old" not in failed_recently


def test_the_runs_list_reads_no_distinct_value_of_all_history(admin_client):
    make_run("r1", "triage")
    with statements() as seen:
        assert admin_client.get(RUNS).status_code == 200
    # one count (no second, unfiltered one) and filters read through the list's date index
    assert seen.count("SELECT agents_run") == 5, seen  # the count, the page, three recent-values filters
    with statements() as again:  # the next page, a filter: the filters' values are kept a while
        assert admin_client.get(RUNS, {"status": "completed"}).status_code == 200
    assert again.count("SELECT agents_run") == 2, again


def test_a_value_first_seen_after_the_filters_read_is_offered_once_they_read_again(admin_client, monkeypatch):
    make_run("r1", "triage")
    assert "?agent_id=triage" in admin_client.get(RUNS).content.decode()
    make_run("r2", "billing")
    page = admin_client.get(RUNS).content.decode()
    assert "?agent_id=billing" not in page  # the values read a moment ago
    assert "r2" in admin_client.get(RUNS, {"agent_id": "billing"}).content.decode()  # filters by URL at once
    monkeypatch.setattr(admin_lists, "RECENT_VALUES_TTL_S", 0.0)
    assert "?agent_id=billing" in admin_client.get(RUNS).content.decode()


def test_a_filtered_list_is_counted_exactly(admin_client, monkeypatch):
    monkeypatch.setattr(admin_lists, "EXACT_COUNT_BELOW", 0)
    for i in range(3):
        make_run(f"r{i}", "triage", status="failed" if i else "completed")
    page = admin_client.get(RUNS, {"status": "failed"}).content.decode()
    assert "2 runs" in page


def test_an_unfiltered_large_postgresql_table_is_counted_from_its_statistics(admin_client, postgres_db, monkeypatch):
    monkeypatch.setattr(admin_lists, "EXACT_COUNT_BELOW", 2)
    for i in range(3):
        make_run(f"r{i}", "triage")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE agents_run")
        # the statistics say what autovacuum last saw: more rows than the table holds now
        cursor.execute("UPDATE pg_class SET reltuples = 1234567 WHERE oid = 'agents_run'::regclass")
    assert "1234567 runs" in admin_client.get(RUNS).content.decode()
    assert "3 runs" in admin_client.get(RUNS, {"agent_id": "triage"}).content.decode()


def test_an_unfiltered_small_table_is_counted_exactly(admin_client):
    for i in range(3):
        make_run(f"r{i}", "triage")
    assert "3 runs" in admin_client.get(RUNS).content.decode()


def test_the_admins_search_folds_case_in_every_alphabet(admin_client):
    """SQLite's LIKE folds only ASCII letters: the thread and run lists search titles and errors
    with ``icontains_folded`` (agents.text_search)."""
    from agents.models import Thread

    Thread.objects.create(thread_id="t-fr", resource_id="alice", title="Déploiement de lundi")
    Thread.objects.create(thread_id="t-en", resource_id="alice", title="Monday's deploy")
    make_run("r-ru", "triage", status="failed", error="Ошибка сборки")
    make_run("r-en", "triage", status="failed", error="build failed")
    threads = admin_client.get(reverse("admin:agents_thread_changelist"), {"q": "DÉPLOIEMENT"}).content.decode()
    assert "t-fr" in threads and "t-en" not in threads
    runs = admin_client.get(RUNS, {"q": "ошибка"}).content.decode()
    assert "r-ru" in runs and "r-en" not in runs
    ascii_runs = admin_client.get(RUNS, {"q": "BUILD"}).content.decode()
    assert "r-en" in ascii_runs and "r-ru" not in ascii_runs
    for changelist in ("admin:inbox_notificationrecord_changelist", "admin:schedules_schedule_changelist"):
        assert admin_client.get(reverse(changelist), {"q": "ÉCHEC"}).status_code == 200
