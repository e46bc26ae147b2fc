"""The cost ledger's pages and queries with 1 million ledger rows, on PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<scratch db> .venv/bin/python bench/ledger.py \
        [--rows 1000000] [--days 30] [--resources 1000] [--requests 30]

The bench migrates the database named by ``DATABASE_URL`` and empties the ledger's tables
(TRUNCATE): point it at a scratch database. It fills ``--rows`` ledger rows over the last ``--days``
days with one ``INSERT … SELECT generate_series``: ``--resources`` resources, each on one of 5 agents
and mostly one channel (a fifth of their steps on a second one), the agent's model answering (a
tenth of the steps on a fallback model, one model without a price, 1 % of steps with no usage
reported), runs of 4 steps. The two daily sums (by day, agent, channel and model; by day and
resource) are then built from the rows with ``INSERT … SELECT … GROUP BY`` (what the writer adds
batch by batch).

Cases, one JSON line each:
  fill, rollup             rows written and seconds taken;
  page_*                   p50/p95/max in ms over ``--requests`` GETs through Django's test client
                           as a staff user (after one warm-up): the dashboard, the costs page for
                           7, 30 and 365 days, the ledger's admin list (plain and filtered) and the
                           run list filtered by the ledger;
  query_*                  p50/p95 of the costs page's aggregations on the daily sums (by day,
                           agent, resource, channel, model, the total);
  raw_*                    the same sums straight from the rows, for comparison (what the
                           pages would cost without the daily sums);
  writer                   ``ledger.writer.entries_write`` of 500-step batches into the full tables:
                           steps per second (rows and daily sums in one transaction).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

AGENTS = ("support", "triage", "sales", "ops", "research")
#: each agent's model, and the fallback a tenth of its steps answer on
MODELS = {"support": ("openai", "gpt-4o-mini"), "triage": ("anthropic", "claude-haiku-4-5"),
          "sales": ("openai", "gpt-4.1"), "ops": ("google", "gemini-2.5-flash"),
          "research": ("acme", "frontier-9")}  # no price
FALLBACK = ("anthropic", "claude-sonnet-4-5")
CHANNELS = ("chat", "api", "slack", "github", "webhook", "schedule")


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(round(q * (len(sorted_values) - 1))))]


def emit(case: str, **data) -> None:
    print(json.dumps({"case": case, **data}), flush=True)


def setup_django() -> None:
    # this directory's channels.py (a bench) must not shadow the channels package
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
    sys.path.insert(0, str(ROOT))
    os.environ["DJANGO_SETTINGS_MODULE"] = "mastra_site.settings"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("DEBUG", "false")
    os.environ["MASTRA_NOTIFICATION_SCHEDULER"] = "0"
    os.environ["MASTRA_SWEEP_SCHEDULER"] = "0"
    os.environ["MASTRA_SCHEDULE_SCHEDULER"] = "0"
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    if connection.vendor != "postgresql":
        sys.exit("bench/ledger.py measures PostgreSQL: set DATABASE_URL to a scratch PostgreSQL database")
    settings.ALLOWED_HOSTS = ["*"]
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def sql_case(values: dict, column: str) -> str:
    """``CASE column WHEN k THEN 'v' … END`` (the bench's constants, quoted)."""
    whens = " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in values.items())
    return f"(CASE {column} {whens} END)"


def fill(rows: int, days: int, resources: int) -> float:
    """``rows`` ledger rows (module docstring); returns the seconds taken."""
    from django.db import connection

    from ledger.models import ModelPrice

    prices = {(p.provider, p.model): p for p in ModelPrice.objects.all()}
    cost_cases = []
    for provider, model in set(MODELS.values()) | {FALLBACK}:
        price = prices.get((provider, model))
        if price is not None:
            cost_cases.append(f"WHEN provider = '{provider}' AND model = '{model}' THEN "
                              f"(input_tokens * {price.input} + output_tokens * {price.output}) / 1000000.0")
    agent_of = "(ARRAY[" + ",".join(f"'{a}'" for a in AGENTS) + "])[1 + (r %% 5)]"
    channels = "(ARRAY[" + ",".join(f"'{c}'" for c in CHANNELS) + "])"
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE ledger_ledgerentry, ledger_ledgerdaily, ledger_ledgerresourcedaily, "
                       "ledger_ledgerwritefailure RESTART IDENTITY")
        cursor.execute(f"""
            WITH base AS (
                SELECT g, (g / 4) AS run, (g %% 4) AS step, ((g / 4) %% %s) AS r,
                       now() - (interval '1 second' * ((%s::bigint - g) * (%s * 86400.0 / %s))) AS at,
                       (hashtext(g::text) & 1023) AS h
                FROM generate_series(0, %s - 1) AS g
            ), shaped AS (
                SELECT g, run, step, r, at, h, {agent_of} AS agent,
                       {channels}[1 + ((r / 5 + CASE WHEN h %% 5 = 0 THEN 1 ELSE 0 END) %% 6)] AS channel
                FROM base
            ), modelled AS (
                SELECT *, CASE WHEN h %% 10 = 1 THEN '{FALLBACK[0]}' ELSE {sql_case({a: m[0] for a, m in MODELS.items()}, 'agent')} END AS provider,
                          CASE WHEN h %% 10 = 1 THEN '{FALLBACK[1]}' ELSE {sql_case({a: m[1] for a, m in MODELS.items()}, 'agent')} END AS model,
                          CASE WHEN h %% 100 = 7 THEN NULL ELSE 200 + (h * 7) %% 3000 END AS input_tokens,
                          CASE WHEN h %% 100 = 7 THEN NULL ELSE 20 + (h * 3) %% 400 END AS output_tokens
                FROM shaped
            )
            INSERT INTO ledger_ledgerentry (created_at, day, agent_id, editor_version, resource_id, thread_id, run_id,
                                            channel, provider, model, step_number, input_tokens, output_tokens,
                                            cached_input_tokens, reasoning_tokens, latency_ms, cost)
            SELECT at, (at AT TIME ZONE 'UTC')::date, agent, '', 'resource-' || r, 'thread-' || (run %% 7), 'run-' || run,
                   channel, provider, model, step, input_tokens, output_tokens,
                   CASE WHEN input_tokens IS NULL THEN NULL ELSE 0 END,
                   CASE WHEN input_tokens IS NULL THEN NULL ELSE 0 END, 300 + h,
                   CASE WHEN input_tokens IS NULL THEN NULL {' '.join(cost_cases)} ELSE NULL END
            FROM modelled ORDER BY g
        """, [resources, rows, days, rows, rows])
    return time.perf_counter() - started


def rollup() -> float:
    """The daily sums of every row, as the writer keeps them."""
    from django.db import connection

    started = time.perf_counter()
    with connection.cursor() as cursor:
        sums = """count(*), count(cost), count(*) FILTER (WHERE input_tokens IS NULL AND output_tokens IS NULL),
                   coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
                   coalesce(sum(cached_input_tokens), 0), coalesce(sum(reasoning_tokens), 0), coalesce(sum(cost), 0)"""
        columns = ("steps, priced_steps, unknown_usage_steps, input_tokens, output_tokens, cached_input_tokens, "
                   "reasoning_tokens, cost")
        for table, key in (("ledger_ledgerdaily", "day, agent_id, channel, provider, model"),
                           ("ledger_ledgerresourcedaily", "day, resource_id")):
            cursor.execute(f"INSERT INTO {table} ({key}, {columns}) SELECT {key}, {sums} FROM ledger_ledgerentry "
                           f"GROUP BY {key}")
        cursor.execute("VACUUM ANALYZE ledger_ledgerentry")
        cursor.execute("VACUUM ANALYZE ledger_ledgerdaily")
        cursor.execute("VACUUM ANALYZE ledger_ledgerresourcedaily")
    return time.perf_counter() - started


def timed(fn, n: int) -> dict:
    fn()  # warm-up
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return {"n": n, "p50_ms": round(statistics.median(samples), 2), "p95_ms": round(percentile(samples, 0.95), 2),
            "max_ms": round(samples[-1], 2)}


def pages(requests: int) -> None:
    from django.contrib.auth import get_user_model
    from django.test import Client

    user_model = get_user_model()
    user = user_model.objects.filter(username="bench-operator").first() or user_model.objects.create_superuser(
        "bench-operator", "bench@example.com", "bench-pw")
    client = Client()
    client.force_login(user)
    cases = {
        "page_dashboard": "/admin/",
        "page_costs_7_days": "/admin/ledger/ledgerdaily/?days=7",
        "page_costs_30_days": "/admin/ledger/ledgerdaily/",
        "page_costs_365_days": "/admin/ledger/ledgerdaily/?days=365",
        "page_ledger_list": "/admin/ledger/ledgerentry/",
        "page_ledger_list_by_channel": "/admin/ledger/ledgerentry/?channel=slack",
        "page_ledger_list_by_resource": "/admin/ledger/ledgerentry/?resource_id=resource-42",
        "page_runs_by_ledger_resource": "/admin/agents/run/?ledger_resource=resource-42",
    }
    for case, url in cases.items():
        def get(url=url):
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
        emit(case, url=url, **timed(get, requests))


def queries(requests: int, days: int) -> None:
    from django.db import connection

    from ledger.selectors import DIMENSIONS, costs_by, costs_total, period

    start, end = period(days)
    for dimension in DIMENSIONS:
        emit(f"query_{dimension}", days=days,
             **timed(lambda d=dimension: costs_by(d, start, end, limit=None if d == "day" else 10), requests))
    emit("query_total", days=days, **timed(lambda: costs_total(start, end), requests))
    for dimension, (columns, _) in DIMENSIONS.items():
        group = ", ".join(columns)

        def raw(group=group):
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT {group}, count(*), sum(cost), sum(input_tokens), sum(output_tokens) "
                               f"FROM ledger_ledgerentry WHERE day >= %s AND day <= %s GROUP BY {group} "
                               f"ORDER BY 3 DESC NULLS LAST LIMIT 10", [start, end])
                cursor.fetchall()
        emit(f"raw_{dimension}", days=days, **timed(raw, max(3, requests // 5)))


def writer(batches: int = 20, size: int = 500) -> None:
    from ledger.writer import entries_write

    now = datetime.now(timezone.utc)
    samples = []
    for b in range(batches):
        records = [{"run_id": f"bench-{b}-{i // 4}", "agent_id": AGENTS[i % 5], "resource_id": f"resource-{i % 1000}",
                    "thread_id": "t", "channel": CHANNELS[i % 6], "provider": MODELS[AGENTS[i % 5]][0],
                    "model": MODELS[AGENTS[i % 5]][1], "step_number": i % 4, "latency_ms": 300,
                    "usage": {"inputTokens": 500, "outputTokens": 50}, "at": now - timedelta(seconds=i)}
                   for i in range(size)]
        started = time.perf_counter()
        entries_write(records)
        samples.append(time.perf_counter() - started)
    samples.sort()
    emit("writer", batches=batches, batch=size, p50_ms=round(statistics.median(samples) * 1000, 2),
         p95_ms=round(percentile(samples, 0.95) * 1000, 2),
         steps_per_s=round(batches * size / sum(samples)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--resources", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    setup_django()
    seconds = fill(args.rows, args.days, args.resources)
    from ledger.models import LedgerDaily, LedgerEntry, LedgerResourceDaily

    emit("fill", rows=LedgerEntry.objects.count(), seconds=round(seconds, 1))
    seconds = rollup()
    emit("rollup", rows_by_agent_channel_model=LedgerDaily.objects.count(),
         rows_by_resource=LedgerResourceDaily.objects.count(), seconds=round(seconds, 1))
    pages(args.requests)
    queries(args.requests, args.days)
    writer()


if __name__ == "__main__":
    main()
