"""The costs page, the dashboard's cost card, the ledger's admin list, a run's usage block and the
run list filtered by the ledger: every figure links to its runs."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from html import unescape

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import Run
from ledger.models import LedgerWriteFailure
from ledger.writer import entries_write

pytestmark = pytest.mark.django_db

NOW = datetime.now(timezone.utc).replace(hour=12, minute=0, second=0, microsecond=0)
YESTERDAY = NOW - timedelta(days=1)


def step(run_id: str, *, at=NOW, agent="support", resource="alice", channel="chat", provider="openai",
         model="gpt-4o", usage=(1_000_000, 100_000), n=0) -> dict:
    return {"run_id": run_id, "agent_id": agent, "resource_id": resource, "thread_id": "t1", "channel": channel,
            "provider": provider, "model": model, "step_number": n, "latency_ms": 40, "at": at,
            "usage": {"inputTokens": usage[0], "outputTokens": usage[1]} if usage is not None else None}


@pytest.fixture
def staff(client):
    user = get_user_model().objects.create_superuser("operator", "op@example.com", "pw")
    client.force_login(user)
    return client


@pytest.fixture
def ledger(shipped_prices):
    for run_id, resource in (("run-1", "alice"), ("run-2", "alice"), ("run-3", "bob"), ("run-4", "carol")):
        Run.objects.create(id=run_id, agent_id="support", resource_id=resource, status="completed", started_at=NOW)
    entries_write([
        step("run-1", n=0), step("run-1", n=1, usage=(0, 0)),                   # alice, chat: $3.50
        step("run-2", at=YESTERDAY, channel="slack", usage=(2_000_000, 0)),     # alice, slack: $5
        step("run-3", resource="bob", agent="triage", channel="api", model="gpt-4o-mini",
             usage=(1_000_000, 1_000_000)),                                    # bob: $0.75
        step("run-4", resource="carol", channel="webhook", provider="acme", model="frontier-9",
             usage=(10, 10)),                                                  # carol: no price
        step("run-4", resource="carol", channel="webhook", provider="acme", model="frontier-9", usage=None, n=1),
    ])


def text(response) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", response.content.decode())))


def links(response) -> list[str]:
    return [unescape(u) for u in re.findall(r'href="([^"]+)"', response.content.decode())]


def runs_listed(client, url: str) -> list[str]:
    page = client.get(url)
    assert page.status_code == 200
    return sorted(set(re.findall(r"/admin/agents/run/(run-\d)/change/", page.content.decode())))


def test_the_costs_page_sums_by_day_agent_resource_channel_and_model(staff, ledger):
    page = staff.get("/admin/ledger/ledgerdaily/?days=7")
    assert page.status_code == 200
    body = text(page)
    assert "Costs: the last 7 days (UTC)" in body
    # the total: carol's steps have no price (one) or no usage reported (the other)
    assert "$9.2500 cost (+ 1 step without price, 1 of unknown usage)" in body
    assert "6 model steps, 1 without price, 1 of unknown usage" in body
    # top resources, highest cost first; a resource whose steps have no price shows it
    resources = re.search(r"Top resources(.*?)By channel", body).group(1)
    assert re.findall(r"(alice|bob|carol) (\$[\d.,]+|no price)", resources) == [
        ("alice", "$8.5000"), ("bob", "$0.7500"), ("carol", "no price")]
    models = re.search(r"By model(.*?)Costs come", body).group(1)
    assert re.findall(r"(\w+/[\w.-]+) (\$[\d.,]+|no price)", models) == [
        ("openai/gpt-4o", "$8.5000"), ("openai/gpt-4o-mini", "$0.7500"), ("acme/frontier-9", "no price")]
    assert "(+1 step unknown)" in models


def test_each_figure_of_the_costs_page_links_to_its_runs(staff, ledger):
    page = staff.get("/admin/ledger/ledgerdaily/?days=7")
    run_links = [u for u in links(page) if u.startswith("/admin/agents/run/?")]
    by_key = {}
    for url in run_links:
        by_key.setdefault(url, runs_listed(staff, url))
    start = (NOW - timedelta(days=6)).date().isoformat()
    end = NOW.date().isoformat()
    assert by_key[f"/admin/agents/run/?ledger_from={start}&ledger_to={end}&ledger_channel=slack"] == ["run-2"]
    assert by_key[f"/admin/agents/run/?ledger_from={start}&ledger_to={end}&ledger_resource=alice"] == [
        "run-1", "run-2"]
    assert by_key[f"/admin/agents/run/?ledger_from={start}&ledger_to={end}&ledger_model=acme%2Ffrontier-9"] == [
        "run-4"]
    assert by_key[f"/admin/agents/run/?ledger_day={YESTERDAY.date().isoformat()}"] == ["run-2"]
    assert by_key[f"/admin/agents/run/?ledger_from={start}&ledger_to={end}"] == ["run-1", "run-2", "run-3", "run-4"]


def test_the_run_list_refuses_a_bad_ledger_day(staff, ledger):
    page = staff.get("/admin/agents/run/?ledger_day=yesterday")
    assert page.status_code == 302 and page["Location"].endswith("?e=1")


def test_the_pages_read_the_daily_sums_not_the_rows(staff, ledger):
    with CaptureQueriesContext(connection) as queries:
        assert staff.get("/admin/ledger/ledgerdaily/").status_code == 200
        assert staff.get("/admin/").status_code == 200
    assert [q["sql"] for q in queries.captured_queries if "ledger_ledgerentry" in q["sql"]] == []


def test_the_dashboard_shows_costs_top_spenders_and_failed_ledger_writes(staff, ledger):
    LedgerWriteFailure.objects.create(kind="failed", count=3, error="OperationalError: the database is down")
    LedgerWriteFailure.objects.create(kind="dropped", count=2, error="queue full")
    page = staff.get("/admin/")
    body = text(page)
    card = re.search(r"Costs \(cost ledger, UTC\)(.*?)Model circuit breakers", body).group(1)
    # run-1, run-3 and carol's today
    assert "$4.2500 today, 3100020 tokens (+ 1 step without price, 1 of unknown usage)" in card
    assert "$9.2500 last 7 days, 5100020 tokens (+ 1 step without price, 1 of unknown usage)" in card
    assert "5 failed ledger writes (3 failed, 2 dropped)" in card
    assert "alice $8.5000" in card and "carol no price" in card
    assert "/admin/ledger/ledgerdaily/" in links(page)


def test_the_ledger_list_filters_by_day_agent_resource_channel_and_model(staff, ledger):
    page = staff.get("/admin/ledger/ledgerentry/")
    assert page.status_code == 200
    for query, expected in (("channel=slack", ["run-2"]), ("resource_id=bob", ["run-3"]),
                            ("model=acme%2Ffrontier-9", ["run-4"]), ("agent_id=triage", ["run-3"]),
                            (f"day={YESTERDAY.date().isoformat()}", ["run-2"])):
        page = staff.get(f"/admin/ledger/ledgerentry/?{query}")
        assert page.status_code == 200, query
        assert sorted(set(re.findall(r"/admin/agents/run/(run-\d)/change/", page.content.decode()))) == expected
    # the filters' choices come from the daily sums: no DISTINCT over the rows
    with CaptureQueriesContext(connection) as queries:
        staff.get("/admin/ledger/ledgerentry/")
    assert [q["sql"] for q in queries.captured_queries
            if "ledger_ledgerentry" in q["sql"] and "DISTINCT" in q["sql"].upper()] == []


def test_a_runs_page_shows_its_usage_and_cost(staff, ledger):
    body = text(staff.get("/admin/agents/run/run-4/change/"))
    assert "Usage and cost (cost ledger)" in body
    assert "no price · 10 input, 10 output, 0 cached input, 0 reasoning tokens over 2 model calls (1 with usage unknown)" \
        in body
    assert "1 webhook acme/frontier-9 unknown unknown unknown unknown 40 ms no price" in body
    body = text(staff.get("/admin/agents/run/run-1/change/"))
    assert "$3.5000 · 1000000 input, 100000 output" in body


def test_a_threads_title_is_a_model_call_of_its_run_on_its_page_and_in_the_ledger_list(staff, ledger):
    Run.objects.create(id="run-5", agent_id="support", resource_id="dana", status="completed", started_at=NOW)
    entries_write([step("run-5", resource="dana", usage=(1000, 100)),
                   {**step("run-5", resource="dana", usage=(200, 8), n=1), "kind": "title"}])
    body = text(staff.get("/admin/agents/run/run-5/change/"))
    assert "$0.004080 · 1200 input, 108 output, 0 cached input, 0 reasoning tokens over 2 model calls" in body
    assert "0 chat openai/gpt-4o 1000 100 0 0 40 ms $0.003500 title chat openai/gpt-4o 200 8 0 0 40 ms $0.000580" in body
    page = staff.get("/admin/ledger/ledgerentry/?kind=title")
    assert page.status_code == 200
    assert sorted(set(re.findall(r"/admin/agents/run/(run-\d)/change/", page.content.decode()))) == ["run-5"]
    assert "openai/gpt-4o title $0.000580 200 8" in text(page)
    # the cost right after the model and the call, the token counts under short headers; all but the
    # model sort
    heads = re.findall(r'<th scope="col" class="([^"]*)column-(\w+)">\s*<div class="text">(?:<a [^>]*>|<span>)([^<]+)',
                       page.content.decode())
    assert [(name, label, "sortable" in classes) for classes, name, label in heads] == [
        ("created_at", "Created at", True), ("agent_id", "Agent id", True), ("resource_id", "Resource id", True),
        ("model_label", "Model", False), ("call", "Call", True), ("cost_text", "Cost", True),
        ("tokens_in", "In", True), ("tokens_out", "Out", True), ("tokens_cached", "Cached", True),
        ("tokens_reasoning", "Reasoning", True), ("latency", "Took", True), ("channel", "Channel", True),
        ("run_link", "Run", True)]


def test_the_ledger_list_links_the_runs_it_has_and_reads_them_in_its_own_query(staff, ledger):
    """A successful run without memory has no run record (docs/agents.md): its steps show its id,
    whole in the title, without a link to a page that is not there; whether a run is stored is read
    in the list's query, not one query per row, and the capped count reads the rows' ids only."""
    page = staff.get("/admin/ledger/ledgerentry/?agent_id=support")
    with CaptureQueriesContext(connection) as before:
        page = staff.get("/admin/ledger/ledgerentry/?agent_id=support")
    entries_write([step(f"gone-{i:02d}-b0396fc8-96d3-458d-8233", n=0) for i in range(20)])
    with CaptureQueriesContext(connection) as after:
        page = staff.get("/admin/ledger/ledgerentry/?agent_id=support")
    assert len(after.captured_queries) == len(before.captured_queries)
    cells = re.findall(r'<td class="field-run_link">(.*?)</td>', page.content.decode())
    assert '<span title="gone-19-b0396fc8-96d3-458d-8233">gone-19-…</span>' in cells
    assert sum(cell.startswith("<a ") for cell in cells) == 5  # run-1 and run-4 (two steps each), run-2
    count = next(q["sql"] for q in after.captured_queries if "COUNT(" in q["sql"] and "ledger_ledgerentry" in q["sql"])
    assert "agents_run" not in count


def test_a_price_change_leaves_recorded_costs_alone(staff, ledger):
    from decimal import Decimal

    from ledger.models import LedgerEntry, ModelPrice
    from ledger.prices import prices_forget

    ModelPrice.objects.create(provider="openai", model="gpt-4o", input=Decimal("100"), output=Decimal("100"),
                              effective_from=NOW.date() - timedelta(days=30))
    prices_forget()
    assert sorted(LedgerEntry.objects.filter(run_id="run-1").values_list("cost", flat=True)) == [
        Decimal("0"), Decimal("3.5")]
    assert "$9.2500 cost (+ 1 step without price, 1 of unknown usage)" in text(
        staff.get("/admin/ledger/ledgerdaily/?days=7"))


def test_a_cost_says_what_it_leaves_out():
    from decimal import Decimal

    from ledger.selectors import Figure

    assert Figure("x", steps=3, priced_steps=3, cost=Decimal("1.5")).cost_text == "$1.5000"
    assert Figure("x", steps=3, priced_steps=3, cost=Decimal("0.0012")).cost_text == "$0.001200"
    assert Figure("x", steps=3, priced_steps=0).cost_text == "no price"
    assert Figure("x", steps=2, priced_steps=0, unknown_usage_steps=2).cost_text == "unknown"
    assert Figure("x", steps=3, priced_steps=1, unknown_usage_steps=2, cost=Decimal(2)).cost_text == (
        "$2.0000 + 2 steps of unknown usage")
    assert Figure("x", steps=5, priced_steps=2, unknown_usage_steps=1, cost=Decimal(2)).cost_text == (
        "$2.0000 + 2 steps without price, 1 of unknown usage")
    assert Figure("x").cost_text == "$0.0000"
