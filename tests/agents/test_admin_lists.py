"""The admin's lists of tables that grow without bound (agents.admin_lists): filters offer the
values of the last days, an unfiltered list of a large PostgreSQL table is counted from the
planner's statistics, a filtered one exactly."""

import re
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


def test_the_runs_list_shows_what_an_operator_looks_for_first(admin_client):
    """Nine columns: the error beside the status, a long id or thread id shortened (whole in its
    title), how long the run took."""
    from agents.models import Thread

    thread = Thread.objects.create(resource_id="alice", thread_id="thread_a37a6163ee094631b040454d6f6fbe7f")
    started = timezone.now() - timedelta(minutes=1)
    Run.objects.create(id="b0396fc8-96d3-458d-8233-1bc266b923d0", agent_id="triage", thread=thread,
                       resource_id="alice", status="failed", finish_reason="error", error_code="provider_http_error",
                       error="openai API error (HTTP 503): overloaded\nretried 3 times", started_at=started,
                       finished_at=started + timedelta(milliseconds=2345), steps=1)
    make_run("r-short", "triage", status="running", resource_id="bob")
    page = admin_client.get(RUNS).content.decode()
    heads = re.findall(r'<th scope="col" class="[^"]*column-(\w+)', page)
    assert heads == ["short_id", "agent_id", "status_line", "error_line", "where", "started_at", "duration", "steps",
                     "tokens"]
    assert '<span title="b0396fc8-96d3-458d-8233-1bc266b923d0">b0396fc8…</span>' in page
    assert '<td class="field-status_line">failed (error)</td>' in page
    assert ('<td class="field-error_line"><code>provider_http_error</code> openai API error (HTTP 503): overloaded'
            '</td>') in page
    assert f'title="alice / {thread.thread_id}">alice / thread_a37a6163e…</a>' in page
    assert '<td class="field-duration">2.35 s</td>' in page
    # a run still going: its status alone, no time taken; without a thread, its resource
    assert '<th class="field-short_id"><a href="' in page and ">r-short</a>" in page
    assert '<td class="field-where">bob</td>' in page and '<td class="field-duration">-</td>' in page
    # the search still finds a run by its whole id
    found = admin_client.get(RUNS, {"q": "b0396fc8-96d3-458d-8233-1bc266b923d0"}).content.decode()
    assert "b0396fc8…" in found and "r-short" not in found


def test_the_runs_list_sorts_by_the_time_a_run_took(admin_client):
    """"took" is sortable: the quickest first, or the longest; a run still going comes last with
    the quickest first and first with the longest, on SQLite as on PostgreSQL."""
    started = timezone.now() - timedelta(minutes=5)
    for run_id, took_ms in (("r-2s", 2000), ("r-90s", 90_000), ("r-40ms", 40)):
        make_run(run_id, "triage", days_ago=5 / (24 * 60), status="succeeded",
                 finished_at=started + timedelta(milliseconds=took_ms))
    make_run("r-going", "triage", status="running")
    page = admin_client.get(RUNS).content.decode()
    # the header's link, as the operator clicks it
    took = re.search(r'class="sortable column-duration">\s*<div class="text"><a href="\?o=(\d+)[^"]*">Took',
                     page).group(1)

    def order(sort: str) -> list[str]:
        listed = admin_client.get(RUNS, {"o": sort}).content.decode()
        return re.findall(r'<th class="field-short_id"><a href="[^"]*">([^<]+)</a>', listed)

    assert order(took) == ["r-40ms", "r-2s", "r-90s", "r-going"]
    assert order(f"-{took}") == ["r-going", "r-90s", "r-2s", "r-40ms"]


def test_the_thread_events_list_shows_each_chunks_type_and_links_its_run(admin_client):
    from agents.models import Thread, ThreadEvent

    thread = Thread.objects.create(resource_id="alice", thread_id="t1")
    make_run("run-1", "triage", thread=thread, resource_id="alice")
    for seq, chunk in enumerate(({"type": "start", "runId": "run-1"}, {"type": "text-delta", "payload": {"text": "hi"}},
                                 {"type": "finish"}), start=1):
        ThreadEvent.objects.create(thread=thread, seq=seq, run_id="run-1", chunk=chunk)
    page = admin_client.get(reverse("admin:agents_threadevent_changelist")).content.decode()
    assert re.findall(r'<td class="field-chunk_type">([^<]*)</td>', page) == ["start", "text-delta", "finish"]
    run_page = reverse("admin:agents_run_change", args=["run-1"])
    assert page.count(f'<td class="field-run_link"><a href="{run_page}" title="run-1">run-1</a></td>') == 3


def test_the_scores_list_links_the_runs_it_has_and_reads_them_in_its_own_query(admin_client):
    from agents.observability import Score

    make_run("b0396fc8-96d3-458d-8233-1bc266b923d0", "triage")
    for i, run_id in enumerate(("b0396fc8-96d3-458d-8233-1bc266b923d0", "run-of-elsewhere") * 10):
        Score.objects.create(score_id=f"sc-{i}", run_id=run_id, agent_id="triage", scorer_key="answered",
                             scorer_id="answered", scorer_name="Answered", score=1.0, created_at=timezone.now())
    scores = reverse("admin:agents_score_changelist")
    admin_client.get(scores)  # the filters' values are read, and kept a while
    with statements() as before:
        admin_client.get(scores)
    for i in range(20, 40):
        Score.objects.create(score_id=f"sc-{i}", run_id="run-of-elsewhere", agent_id="triage", scorer_key="answered",
                             scorer_id="answered", scorer_name="Answered", score=1.0,
                             created_at=timezone.now() - timedelta(days=1))
    with statements() as seen:
        page = admin_client.get(scores).content.decode()
    assert len(seen) == len(before), (before, seen)  # twice the rows, no more statements
    run_page = reverse("admin:agents_run_change", args=["b0396fc8-96d3-458d-8233-1bc266b923d0"])
    cells = re.findall(r'<td class="field-run_link">(.*?)</td>', page)
    assert cells.count(f'<a href="{run_page}" title="b0396fc8-96d3-458d-8233-1bc266b923d0">b0396fc8…</a>') == 10
    # no run stored: no link to a page that is not there, the id shortened as the others
    assert cells.count('<span title="run-of-elsewhere">run-of-e…</span>') == 30


def test_the_trace_spans_list_shows_the_run_and_how_long_first(admin_client):
    from agents.observability import TraceSpan

    started = timezone.now()
    make_run("run-1", "triage")
    spans = reverse("admin:agents_tracespan_changelist")

    def span(span_id: str, run_id: str) -> None:
        TraceSpan.objects.create(trace_id="a" * 32, span_id=span_id, parent_span_id="", run_id=run_id,
                                 name="step: 0", type="model_step", started_at=started,
                                 ended_at=started + timedelta(milliseconds=850), duration_ms=850)

    span("b" * 16, "run-1")
    admin_client.get(spans)  # the filters' values are read, and kept a while
    with statements() as before:
        admin_client.get(spans)
    for i in range(10):
        span(f"{i:016x}", f"9b1c2f3e-5d6a-4b7c-8d9e-0f1a2b3c4d5{i}")
    with statements() as seen:
        page = admin_client.get(spans).content.decode()
    heads = re.findall(r'<th scope="col" class="[^"]*column-(\w+)', page)
    assert heads == ["name", "type", "run_link", "took", "started_at", "trace_id", "span_id", "parent_span_id"]
    assert f'<td class="field-run_link"><a href="{reverse("admin:agents_run_change", args=["run-1"])}" ' \
           'title="run-1">run-1</a></td>' in page
    # a successful run without memory has no record: its spans name it without a link to a missing page,
    # read in the list's query (no statement per row)
    assert ('<td class="field-run_link"><span title="9b1c2f3e-5d6a-4b7c-8d9e-0f1a2b3c4d59">9b1c2f3e…</span>'
            '</td>') in page
    assert len(seen) == len(before), (before, seen)
    assert '<td class="field-took">850 ms</td>' in page
