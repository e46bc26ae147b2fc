"""The operator dashboard on the admin's front page: each figure and where it links."""

import re
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.contrib import admin
from django.urls import reverse
from django.utils import timezone

from mastra_site.dashboard import dashboard_build
from mastra_site.admin_site import MastraAdminSite
from agents.models import Run, Thread, ThreadLease, ToolApproval
from inbox.models import NotificationRecord
from ledger.writer import entries_write

pytestmark = pytest.mark.django_db


def populate(now):
    thread = Thread.objects.create(thread_id="t1", resource_id="u1")
    Thread.objects.create(thread_id="t2", resource_id="u1")
    ThreadLease.objects.create(thread=thread, agent_id="bot", owner_run_id="r1", status="running", token=1,
                               expires_at=now + timedelta(seconds=10))
    ThreadLease.objects.create(thread_id="u1\x1ft2", agent_id="bot", owner_run_id=None, status="idle")
    Run.objects.create(id="r1", agent_id="bot", status="running", started_at=now, usage={"total_tokens": 30})
    Run.objects.create(id="r2", agent_id="bot", status="failed", error="model_error: rate limited\nmore",
                       started_at=now - timedelta(minutes=10), usage={"total_tokens": 12})
    Run.objects.create(id="r3", agent_id="helper", status="failed", error="old", started_at=now - timedelta(hours=3),
                       usage={"total_tokens": 100})
    Run.objects.create(id="r4", agent_id="helper", status="completed", started_at=now - timedelta(days=1),
                       usage={"total_tokens": 50})
    # the runs' steps as the ledger recorded them (the token chart reads its daily sums)
    steps = (("bot", "r1", 30, now), ("bot", "r2", 12, now - timedelta(minutes=10)),
             ("helper", "r3", 100, now - timedelta(hours=3)), ("helper", "r4", 50, now - timedelta(days=1)),
             ("bot", "r0", None, now))  # a step without usage: no tokens
    entries_write([{"agent_id": agent, "run_id": run, "step_number": 0, "latency_ms": 1, "at": at,
                    "usage": {"inputTokens": tokens - 10, "outputTokens": 10} if tokens else None}
                   for agent, run, tokens, at in steps])
    ToolApproval.objects.create(run_id="r1", agent_id="bot", tool_call_id="c1", tool_name="pay", args_hash="h", state={})
    for priority, due in (("urgent", True), ("low", False), ("low", True)):
        NotificationRecord.objects.create(agent_id="bot", resource_id="u1", thread=thread, source="ci", kind="k",
                                          priority=priority, summary="s", created_at=now, updated_at=now,
                                          next_due_at=now - timedelta(minutes=1) if due else now + timedelta(hours=1))


def test_the_dashboard_counts_what_operators_watch():
    now = timezone.now().replace(hour=12)
    populate(now)
    board = dashboard_build(now=now)
    assert [(f.label, f.count) for f in board.threads] == [("running", 1), ("suspended", 0)]
    assert [(f.label, f.count) for f in board.runs] == [("running", 1), ("completed", 1), ("suspended", 0),
                                                       ("failed", 2), ("aborted", 0)]
    # the finished runs of the last 24 hours only: a run started before is no longer counted
    Run.objects.filter(pk="r4").update(started_at=now - timedelta(days=1, seconds=1))
    Run.objects.create(id="r5", agent_id="bot", status="running", started_at=now - timedelta(days=3))
    later = dashboard_build(now=now)
    assert [(f.label, f.count) for f in later.runs] == [("running", 2), ("completed", 0), ("suspended", 0),
                                                       ("failed", 2), ("aborted", 0)]
    since = (now - timedelta(hours=24)).isoformat()
    assert [f.url.split("?")[1] for f in later.runs[:2]] == ["status=running", urlencode(
        {"status": "completed", "started_at__gte": since})]
    assert [(r["id"], r["error"]) for r in board.failed] == [("r2", "model_error: rate limited")]
    assert board.approvals.count == 1
    assert [(f.label, f.count) for f in board.backlog] == [("urgent", 1), ("high", 0), ("medium", 0), ("low", 2)]
    assert board.due.count == 2
    today, yesterday = now.date().isoformat(), (now.date() - timedelta(days=1)).isoformat()
    assert board.usage == {"bot": {today: 42}, "helper": {today: 100, yesterday: 50}}
    # the chart is the ledger's daily sums: a run stored while the ledger was off counts nothing there
    Run.objects.create(id="r6", agent_id="bot", status="completed", started_at=now, usage={"total_tokens": 7})
    assert dashboard_build(now=now).usage == board.usage
    assert len(board.usage_days) == 7 and board.usage_days[-1] == today
    peak = [b for b in board.chart["bars"] if b["title"] == f"helper {today}: 100 tokens"][0]
    tomorrow = (now.date() + timedelta(days=1)).isoformat()
    assert peak["h"] == 166.0 and peak["url"] == (
        f"{reverse('admin:agents_run_changelist')}?agent_id=helper&started_at__gte={today}T00%3A00%3A00%2B00%3A00"
        f"&started_at__lt={tomorrow}T00%3A00%3A00%2B00%3A00")


def test_the_admin_front_page_is_the_dashboard_with_links_to_filtered_lists(admin_client):
    assert isinstance(admin.site, MastraAdminSite)
    populate(timezone.now())
    page = admin_client.get(reverse("admin:index")).content.decode()
    assert re.search(re.escape(f'<a href="{reverse("admin:agents_run_changelist")}?status=failed&amp;started_at__gte=')
                     + r'[0-9A-Za-z%.-]+">2</a>', page)
    assert f'<a href="{reverse("admin:agents_toolapproval_changelist")}?status=pending">1</a>' in page
    assert f'<a href="{reverse("admin:inbox_notificationrecord_changelist")}?status=pending&amp;priority=low">2</a>' in page
    assert "model_error: rate limited" in page and "<svg" in page
    # the app list is still there
    assert reverse("admin:agents_agentdefinition_changelist") in page


def test_the_dashboard_links_open_their_filtered_lists(admin_client):
    # noon, so that r2 (ten minutes earlier) falls on the same day whatever the wall clock says
    now = timezone.now().replace(hour=12)
    populate(now)
    board = dashboard_build(now=now)
    failed = admin_client.get(board.failed_url)
    assert failed.status_code == 200
    assert [run.id for run in failed.context["cl"].result_list] == ["r2"]
    due = admin_client.get(board.due.url)
    assert due.status_code == 200 and due.context["cl"].result_count == 2
    bar = [b for b in board.chart["bars"] if b["title"].startswith(f"bot {now.date().isoformat()}")][0]
    runs = admin_client.get(bar["url"])
    assert sorted(run.id for run in runs.context["cl"].result_list) == ["r1", "r2"]


def keyless_site(monkeypatch):
    """A site whose ``ops`` agent needs an OpenAI key that is not set."""
    from agents.runtime import Agent, Mastra

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    site = Mastra(agents={"ops": Agent(id="ops", instructions="x", model="openai/gpt-4o-mini"),
                          "echo": Agent(id="echo", instructions="x", model="local/echo")})
    return site


def test_agents_without_their_provider_key_are_on_the_dashboard(admin_client, monkeypatch):
    from mastra_site import dashboard

    monkeypatch.setattr(dashboard, "get_mastra", lambda: keyless_site(monkeypatch))
    page = admin_client.get(reverse("admin:index")).content.decode()
    assert 'id="dash-missing-keys"' in page
    assert ('<tr><td class="whole">ops</td><td class="whole">openai</td><td class="message">set OPENAI_API_KEY</td></tr>'
            in page)
    assert ">echo</td>" not in page


async def test_a_serving_process_warns_at_start_for_each_agent_without_its_key(monkeypatch, caplog):
    from mastra_site import workers

    monkeypatch.setattr(workers, "get_mastra", lambda: keyless_site(monkeypatch))
    with caplog.at_level("WARNING", logger="mastra_site.workers"):
        await workers.warn_missing_keys()
    assert [r.getMessage() for r in caplog.records] == [
        "agent 'ops' cannot answer: provider 'openai' needs an API key (set OPENAI_API_KEY)"]
def test_the_dashboard_shows_the_open_circuit_breakers_of_the_process(admin_client):
    from agents.runtime.errors import ModelError
    from agents.runtime.providers.breaker import breaker_failure
    from agents.runtime.providers.resilience import configure_resilience

    now = [500.0]
    configure_resilience(breaker_failures=2, breaker_cooldown_s=30.0, clock=lambda: now[0])
    page = admin_client.get(reverse("admin:index")).content.decode()
    assert "None open: every model answers." in page
    for _ in range(2):
        breaker_failure("openai/gpt-4o", ModelError("openai API error (HTTP 503): overloaded, key sk-abcdef0123456789",
                                                    code="provider_http_error", status=503, retryable=True))
    breaker_failure("anthropic/claude-sonnet-4-5", ModelError("busy", code="provider_http_error", status=529,
                                                              retryable=True))
    now[0] += 10

    board = dashboard_build()
    assert [(b["key"], b["state"], b["failures"], b["reopens_in_s"]) for b in board.breakers] == [
        ("openai/gpt-4o", "open", 2, 20.0), ("anthropic/claude-sonnet-4-5", "closed", 1, None)]
    page = admin_client.get(reverse("admin:index")).content.decode()
    assert "<code>openai/gpt-4o</code></td><td>open, tried again in 20.0 s</td><td>2 failures in a row</td>" in page
    assert "sk-abcdef0123456789" not in page


def test_the_demo_daily_budget_shows_its_spend_against_the_limit_and_its_reset(admin_client):
    """The demo site's code budget (``daily-spend``, MASTRA_DEMO_DAILY_BUDGET_USD a day) is on the
    dashboard with today's spend, the limit and when it resets; a soft admin budget reached shows so."""
    from decimal import Decimal

    from agents.registry import get_mastra
    from budgets.models import Budget, BudgetCounter

    now = timezone.now()
    assert [b.id for b in get_mastra().budgets] == ["daily-spend"]
    BudgetCounter.objects.create(counter_key="daily-spend|site|", period_key=now.strftime("%Y-%m-%d"),
                                 budget_id="daily-spend", scope="site", unit="usd", mode="hard", limit=5,
                                 spent=Decimal("1.25"), updated_at=now)
    Budget.objects.create(name="per-user", scope="resource", period="month", unit="tokens", limit=1000, mode="soft")
    BudgetCounter.objects.create(counter_key="per-user|resource|alice", period_key=now.strftime("%Y-%m"),
                                 budget_id="per-user", scope="resource", scope_value="alice", resource_id="alice",
                                 unit="tokens", mode="soft", limit=1000, spent=1200, reached_at=now, updated_at=now)
    board = dashboard_build(now=now)
    tomorrow = (now + timedelta(days=1)).strftime("%Y-%m-%d")
    assert [(b["id"], b["scope"], b["who"], b["status"].spent_text, b["status"].limit_text, b["status"].percent)
            for b in board.budgets] == [("daily-spend", "site", "", "1.25 USD", "5.00 USD", 25),
                                        ("per-user", "resource each", "alice", "1200 tokens", "1000 tokens", 100)]
    assert board.budgets[0]["status"].resets_at.isoformat() == f"{tomorrow}T00:00:00+00:00"
    page = admin_client.get(reverse("admin:index")).content.decode()
    assert "daily-spend</a> (hard, per day)" in page
    assert "1.25 USD of 5.00 USD (25 %)" in page
    assert f"{tomorrow} 00:00 UTC" in page
    assert "1200 tokens of 1000 tokens (100 %)" in page and ": runs go on" in page
