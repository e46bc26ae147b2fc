"""Cost as the data grows: the same calls on an empty installation and on a full one, on PostgreSQL.

    .venv/bin/python bench/scale.py [--database-url postgres://postgres@127.0.0.1:5432/postgres]
        [--threads 10000] [--resources 1000] [--messages 1000000] [--events 2000000]
        [--notifications 100000] [--spans 1000000] [--rounds 30] [--passes 2] [--keep] [--reuse]

Two databases are made on the server the URL names, ``mastra_scale_empty`` and ``mastra_scale_full``,
migrated, and given the same measured fixtures: an operator (staff, with an API token) whose resource
owns threads of 10 and of 100 messages (one per round), idle threads to wake, and a long thread of
5,000 messages. The full one then gets a realistic installation around them, written with
``INSERT … SELECT generate_series``: ``--threads`` threads over ``--resources`` resources, their
``--messages`` messages, ``--events`` thread events, runs (one per ten messages, each with usage, and
the ledger's row of its step with the daily sums), ``--spans`` trace spans over those runs, and
``--notifications`` delivered notification records; then ``ANALYZE``. ``--keep`` keeps both
databases; ``--reuse`` measures databases kept by an earlier run (after a code change: migrations are
applied, the fill is not repeated).

Each database is measured ``--passes`` times, each pass by a process of its own (``--phase
measure``), the passes alternated so that a machine whose speed drifts during the run weighs on both
databases alike (empty, full, then full, empty, and so on); each pass makes the cases in this order,
``--rounds`` calls each after two warm-up calls, on rows of its own (a fresh thread each call):

  generate_10 / generate_100   ``generate`` on a memory thread (``Memory(last_messages=10)``) holding 10
                               / 100 messages (a fresh thread each round), the offline model
  wake                         ``send_message`` into an idle thread until its run has ended
  threads_api                  ``GET /api/memory/threads?resourceId=…`` (the operator's threads)
  messages_first / messages_last
                               ``GET /api/memory/threads/<long>/messages`` page 0 (the newest 40) and
                               the last page (the oldest)
  snapshot                     the chat's snapshot of the long thread (``chat.snapshot``: its newest
                               ``MASTRA_CHAT_SNAPSHOT_MESSAGES`` messages; the whole thread before)
  admin_dashboard / admin_runs / admin_threads
                               the admin's index (the operator dashboard), run and thread lists
  dispatch_1000                ``dispatch_due_notifications`` of 1,000 due records (a fresh batch each
                               round, over 50 threads)

Prints a first line on the machine and interpreter (``bench/machine.py``), then one JSON line per
case and database (p50, p95 in ms over the calls of every pass, and each pass's p50), then one per
case comparing them (``full_over_empty``: the ratio of the p50s; the target is at most 1.5, and the
admin pages' p95 under 300 ms full).

Concurrency: ``bench/concurrency.py`` measures the other axis, many runs at once rather than much
data: one daphne process, 500 concurrent three-step tool-loop runs on 500 subscribed threads against a
mock OpenAI-compatible model taking 300 ms a step; it prints the runs completed, the framework's own
time between two steps (p50 / p99; target under 3 ms), the event loop's lag in daphne (p99; target
under 20 ms) and daphne's RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
OPERATOR = "bench-operator"
AGENT = "assistant"
LONG = "long-thread"
LONG_MESSAGES = 5000
DISPATCH_BATCH = 1000
DISPATCH_THREADS = 50


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def database_url(server_url: str, name: str) -> str:
    parts = urlsplit(server_url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def setup_django(url: str) -> None:
    # bench/ holds a channels.py of its own: the script's folder must not shadow the channels package
    sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "mastra_site.settings"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("DEBUG", "false")
    os.environ["ALLOWED_HOSTS"] = "testserver,127.0.0.1,localhost"
    for scheduler in ("MASTRA_NOTIFICATION_SCHEDULER", "MASTRA_SWEEP_SCHEDULER", "MASTRA_SCHEDULES_SCHEDULER"):
        os.environ[scheduler] = "0"
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


# -- the databases --------------------------------------------------------------------------------


def admin_sql(server_url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(database_url(server_url, "postgres"), autocommit=True) as conn:
        conn.execute(statement)


def database_exists(server_url: str, name: str) -> bool:
    import psycopg

    with psycopg.connect(database_url(server_url, "postgres"), autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None


def fixtures(calls: int) -> None:
    """The measured rows, the same in both databases: ``calls`` threads of each kind."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from rest_framework.authtoken.models import Token

    user = get_user_model().objects.create_superuser(OPERATOR, "", "bench-password")
    Token.objects.create(user=user)
    with connection.cursor() as cursor:
        threads = [(f"t10-{i}", 10) for i in range(calls)] + [(f"t100-{i}", 100) for i in range(calls)]
        threads += [(f"idle-{i}", 2) for i in range(calls)] + [(LONG, LONG_MESSAGES)]
        threads += [(f"inbox-{i}", 0) for i in range(DISPATCH_THREADS)]
        for thread_id, messages in threads:
            thread_rows(cursor, OPERATOR, thread_id, messages)


def thread_rows(cursor, resource: str, thread_id: str, messages: int) -> None:
    key = f"{resource}\x1f{thread_id}"
    cursor.execute(
        "INSERT INTO agents_thread (key, resource_id, thread_id, title, metadata, created_at, updated_at, saved) "
        "VALUES (%s, %s, %s, %s, '{}', now() - interval '1 day', now() - interval '1 day', true)",
        [key, resource, thread_id, thread_id])
    cursor.execute(
        "INSERT INTO agents_message (message_id, thread_id, resource_id, role, type, content, metadata, created_at) "
        "SELECT 'm-' || g, %s, %s, CASE WHEN g %% 2 = 1 THEN 'user' ELSE 'assistant' END, '', "
        "json_build_object('format', 2, 'parts', json_build_array(json_build_object('type', 'text', "
        "'text', 'message ' || g || ' of the conversation, a sentence or two long as people write')))::jsonb, "
        "'{}', now() - interval '1 day' + g * interval '1 second' FROM generate_series(1, %s) g",
        [key, resource, messages])


def fill(args) -> dict:
    """A realistic installation around the fixtures (see the module docstring)."""
    from django.db import connection

    started = time.perf_counter()
    per_thread_messages = max(1, args.messages // args.threads)
    per_thread_events = max(1, args.events // args.threads)
    per_thread_notifications = max(1, args.notifications // args.threads)
    runs_per_thread = max(1, per_thread_messages // 10)
    spans_per_run = max(1, args.spans // (args.threads * runs_per_thread))
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO agents_thread (key, resource_id, thread_id, title, metadata, created_at, updated_at, saved) "
            "SELECT 'user-' || (t %% %s) || chr(31) || 'thread-' || t, 'user-' || (t %% %s), 'thread-' || t, "
            "'Conversation ' || t, '{}', now() - (t %% 90) * interval '1 day', now() - (t %% 90) * interval '1 day', "
            "true FROM generate_series(1, %s) t", [args.resources, args.resources, args.threads])
        cursor.execute(
            "INSERT INTO agents_message (message_id, thread_id, resource_id, role, type, content, metadata, created_at) "
            "SELECT 'm-' || g, th.key, th.resource_id, CASE WHEN g %% 2 = 1 THEN 'user' ELSE 'assistant' END, '', "
            "json_build_object('format', 2, 'parts', json_build_array(json_build_object('type', 'text', "
            "'text', 'message ' || g || ' of the conversation, a sentence or two long as people write')))::jsonb, "
            "'{}', th.created_at + g * interval '1 minute' "
            "FROM agents_thread th CROSS JOIN generate_series(1, %s) g WHERE th.resource_id LIKE 'user-%%'",
            [per_thread_messages])
        cursor.execute(
            "INSERT INTO agents_run (id, agent_id, resource_id, thread_id, status, finish_reason, usage, error, "
            "error_code, steps, step_models, started_at, finished_at) "
            "SELECT 'run-' || th.thread_id || '-' || r, %s, th.resource_id, th.key, "
            "CASE WHEN r %% 50 = 0 THEN 'failed' ELSE 'completed' END, 'stop', "
            "json_build_object('input_tokens', 120 + r, 'output_tokens', 40 + r, 'total_tokens', 160 + 2 * r)::jsonb, "
            "'', CASE WHEN r %% 50 = 0 THEN 'provider_http_error' ELSE '' END, 1, '[\"openai/gpt-4o\"]', "
            "th.created_at + r * interval '10 minute', th.created_at + r * interval '10 minute' + interval '2 second' "
            "FROM agents_thread th CROSS JOIN generate_series(1, %s) r WHERE th.resource_id LIKE 'user-%%'",
            [AGENT, runs_per_thread])
        # the ledger's row for each run's step and its daily sums, as the ledger writer keeps them
        cursor.execute(
            "INSERT INTO ledger_ledgerentry (created_at, day, agent_id, editor_version, resource_id, thread_id, "
            "run_id, channel, provider, model, step_number, input_tokens, output_tokens, cached_input_tokens, "
            "reasoning_tokens, latency_ms, cost) "
            "SELECT finished_at, (finished_at AT TIME ZONE 'UTC')::date, agent_id, '', resource_id, thread_id, id, "
            "'', 'openai', 'gpt-4o', 0, (usage->>'input_tokens')::bigint, (usage->>'output_tokens')::bigint, 0, 0, "
            "2000, NULL FROM agents_run WHERE resource_id LIKE 'user-%%'")
        for table, key in (("ledger_ledgerdaily", "day, agent_id, channel, provider, model"),
                           ("ledger_ledgerresourcedaily", "day, resource_id")):
            cursor.execute(
                f"INSERT INTO {table} ({key}, steps, priced_steps, unknown_usage_steps, input_tokens, "  # noqa: S608
                "output_tokens, cached_input_tokens, reasoning_tokens, cost) "
                f"SELECT {key}, count(*), 0, 0, sum(input_tokens), sum(output_tokens), 0, 0, 0 "
                f"FROM ledger_ledgerentry GROUP BY {key}")
        cursor.execute(
            "INSERT INTO agents_threadevent (thread_id, seq, run_id, chunk, created_at) "
            "SELECT th.key, s, 'run-' || th.thread_id || '-' || (1 + s / 20), "
            "json_build_object('type', 'text-delta', 'payload', json_build_object('text', 'piece ' || s))::jsonb, "
            "th.created_at + s * interval '1 second' "
            "FROM agents_thread th CROSS JOIN generate_series(1, %s) s WHERE th.resource_id LIKE 'user-%%'",
            [per_thread_events])
        cursor.execute(
            "INSERT INTO agents_tracespan (trace_id, span_id, parent_span_id, run_id, name, type, attributes, "
            "metadata, input, output, error, started_at, ended_at, duration_ms) "
            "SELECT md5(run.id), substr(md5(run.id || s), 1, 16), CASE WHEN s = 1 THEN '' ELSE substr(md5(run.id || 1), 1, 16) END, "
            "run.id, CASE WHEN s = 1 THEN 'agent run' ELSE 'model step ' || s END, "
            "CASE WHEN s = 1 THEN 'agent_run' ELSE 'model_generation' END, '{}', '{}', "
            "'{\"text\": \"hello\"}', '{\"text\": \"answer\"}', NULL, run.started_at, run.finished_at, 2000 "
            "FROM agents_run run CROSS JOIN generate_series(1, %s) s WHERE run.resource_id LIKE 'user-%%'",
            [spans_per_run])
        cursor.execute(
            "INSERT INTO inbox_notificationrecord (id, agent_id, resource_id, thread_id, source, source_id, kind, "
            "priority, priority_rank, status, summary, payload, dedupe_key, coalesce_key, coalesced_count, attributes, "
            "metadata, deliver_at, summary_at, deliver_when_idle, next_due_at, delivery_reason, delivery_attempts, "
            "last_delivery_error, attempt_kind, lock_token, created_at, updated_at, delivered_at) "
            "SELECT 'rec-' || th.thread_id || '-' || n, %s, th.resource_id, th.key, 'github', NULL, 'ci-status', "
            "'medium', 2, 'delivered', 'The build of main failed', NULL, NULL, NULL, 1, '{}', '{}', NULL, NULL, "
            "false, NULL, 'immediate', 1, '', '', '', th.created_at + n * interval '1 hour', "
            "th.created_at + n * interval '1 hour', th.created_at + n * interval '1 hour' "
            "FROM agents_thread th CROSS JOIN generate_series(1, %s) n WHERE th.resource_id LIKE 'user-%%'",
            [AGENT, per_thread_notifications])
        cursor.execute("ANALYZE")
        counts = {}
        for table in ("agents_thread", "agents_message", "agents_threadevent", "agents_run", "agents_tracespan",
                      "inbox_notificationrecord", "ledger_ledgerentry", "ledger_ledgerdaily"):
            cursor.execute(f"SELECT count(*) FROM {table}")  # noqa: S608 (fixed table names)
            counts[table] = cursor.fetchone()[0]
    return {"fill_s": round(time.perf_counter() - started, 1), **counts}


def pass_calls(args) -> int:
    """Calls of a case in one pass (two warm-up calls, then ``--rounds``), each on rows of its own."""
    return args.rounds + 2


def prepare(args, name: str, full: bool) -> dict | None:
    setup_django(database_url(args.database_url, name))
    fixtures(pass_calls(args) * args.passes)  # every pass's rows
    return fill(args) if full else None


# -- the measure ----------------------------------------------------------------------------------


def measure(args) -> list[dict]:
    setup_django(os.environ["DATABASE_URL"])
    import asyncio

    from django.contrib.auth import get_user_model
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from agents.memory import Memory
    from agents.models import Thread
    from agents.runtime import Agent
    from agents.runtime.testing import drain_thread_runtime
    from agents.runtime.threads import get_thread_runtime
    from chat.snapshot import thread_snapshot_build
    from inbox.dispatcher import dispatch_due_notifications

    offset = args.pass_index * pass_calls(args)  # this pass's rows
    if not Thread.objects.filter(resource_id=OPERATOR, thread_id=f"idle-{offset + args.rounds + 1}").exists():
        sys.exit(f"the database holds no fixtures for pass {args.pass_index + 1} ({args.rounds} rounds a pass): "
                 "the kept databases were made for fewer passes or rounds (run without --reuse)")
    user = get_user_model().objects.get(username=OPERATOR)
    token = Token.objects.get(user=user).key
    api = Client(HTTP_AUTHORIZATION=f"Token {token}")
    admin = Client()
    admin.force_login(user)
    agent = Agent(id="bench-scale", name="Bench", instructions="You are a benchmark.", model="local/echo",
                  memory=Memory(last_messages=10))
    results = []
    loop = asyncio.new_event_loop()

    async def drain() -> None:
        await drain_thread_runtime(get_thread_runtime())

    def timed(case: str, call, rounds: int) -> None:
        samples = []
        for i in range(rounds + 2):
            started = time.perf_counter()
            call(offset + i)
            if i >= 2:
                samples.append((time.perf_counter() - started) * 1000)
        results.append({"case": case, "samples_ms": [round(sample, 3) for sample in samples]})

    def generate(prefix: str):
        def call(i: int) -> None:
            result = loop.run_until_complete(agent.generate("hello", memory={"resource": OPERATOR,
                                                                            "thread": f"{prefix}-{i}"}))
            assert result.text == "echo: hello", result.text
        return call

    def wake(i: int) -> None:
        sent = loop.run_until_complete(agent.send_message("wake up", resource_id=OPERATOR, thread_id=f"idle-{i}"))
        assert sent.action == "wake", sent
        loop.run_until_complete(drain())

    def get(client: Client, url: str, **extra):
        def call(i: int) -> None:
            response = client.get(url, **extra)
            assert response.status_code == 200, (url, response.status_code, response.content[:300])
        return call

    last_page = (LONG_MESSAGES - 1) // 40

    def dispatch(i: int) -> None:  # the seeding is part of the round (one INSERT … SELECT)
        seed_due(i)
        result = loop.run_until_complete(dispatch_due_notifications(agent_lookup=lambda agent_id: agent))
        assert result["counts"]["claimed"] == DISPATCH_BATCH, result["counts"]
        loop.run_until_complete(drain())

    timed("generate_10", generate("t10"), args.rounds)
    timed("generate_100", generate("t100"), args.rounds)
    timed("wake", wake, args.rounds)
    timed("threads_api", get(api, f"/api/memory/threads?resourceId={OPERATOR}"), args.rounds)
    timed("messages_first", get(api, f"/api/memory/threads/{LONG}/messages?page=0&perPage=40"), args.rounds)
    timed("messages_last", get(api, f"/api/memory/threads/{LONG}/messages?page={last_page}&perPage=40"), args.rounds)
    timed("snapshot", lambda i: thread_snapshot_build(resource_id=OPERATOR, thread_id=LONG), args.rounds)
    timed("admin_dashboard", get(admin, "/admin/"), args.rounds)
    timed("admin_runs", get(admin, "/admin/agents/run/"), args.rounds)
    timed("admin_threads", get(admin, "/admin/agents/thread/"), args.rounds)
    timed("dispatch_1000", dispatch, min(args.rounds, 5))
    return results


def seed_due(i: int) -> None:
    """:data:`DISPATCH_BATCH` pending records due now, over :data:`DISPATCH_THREADS` threads."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO inbox_notificationrecord (id, agent_id, resource_id, thread_id, source, source_id, kind, "
            "priority, priority_rank, status, summary, payload, dedupe_key, coalesce_key, coalesced_count, attributes, "
            "metadata, deliver_at, summary_at, deliver_when_idle, next_due_at, delivery_reason, delivery_attempts, "
            "last_delivery_error, attempt_kind, lock_token, created_at, updated_at, delivered_at) "
            "SELECT 'due-' || %s || '-' || n, 'bench-scale', %s, %s || chr(31) || 'inbox-' || (n %% %s), 'bench', "
            "NULL, 'ping', 'low', 1, 'pending', 'Something to read ' || n, NULL, NULL, NULL, 1, '{}', '{}', "
            "now() - interval '1 minute', NULL, false, now() - interval '1 minute', '', 0, '', '', '', now(), now(), NULL "
            "FROM generate_series(1, %s) n",
            [f"{os.getpid()}-{i}", OPERATOR, OPERATOR, DISPATCH_THREADS, DISPATCH_BATCH])


# -- orchestration --------------------------------------------------------------------------------


def run_phase(args, phase: str, name: str, extra: list[str] | None = None) -> list[dict]:
    env = {**os.environ, "DATABASE_URL": database_url(args.database_url, name)}
    command = [sys.executable, __file__, "--phase", phase, "--database-url", args.database_url, "--name", name,
               "--rounds", str(args.rounds), "--threads", str(args.threads), "--resources", str(args.resources),
               "--messages", str(args.messages), "--events", str(args.events), "--spans", str(args.spans),
               "--notifications", str(args.notifications), "--passes", str(args.passes), *(extra or [])]
    out = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        sys.exit(f"{phase} on {name} failed:\n{out.stderr[-4000:]}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("MASTRA_BENCH_POSTGRES_URL",
                                                                 "postgres://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--resources", type=int, default=1_000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--notifications", type=int, default=100_000)
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--passes", type=int, default=2, help="measures of each database, alternated (default 2)")
    parser.add_argument("--keep", action="store_true", help="keep both databases")
    parser.add_argument("--reuse", action="store_true", help="measure databases kept by an earlier run")
    parser.add_argument("--phase", choices=("prepare-empty", "prepare-full", "measure"), help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    parser.add_argument("--pass-index", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.passes < 1:
        parser.error("--rounds and --passes must be at least 1")

    if args.phase == "prepare-empty" or args.phase == "prepare-full":
        filled = prepare(args, args.name, full=args.phase == "prepare-full")
        if filled:
            print(json.dumps({"case": "fill", **filled}))
        return
    if args.phase == "measure":
        for line in measure(args):
            print(json.dumps(line))
        return

    sys.path.insert(0, str(ROOT))
    from bench.machine import print_machine

    print_machine()
    names = {"empty": "mastra_scale_empty", "full": "mastra_scale_full"}
    if not (args.reuse and all(database_exists(args.database_url, name) for name in names.values())):
        for label, name in names.items():
            admin_sql(args.database_url, f'DROP DATABASE IF EXISTS "{name}"')
            admin_sql(args.database_url, f'CREATE DATABASE "{name}"')
            for line in run_phase(args, f"prepare-{label}", name):
                print(json.dumps(line), flush=True)
    try:
        samples: dict[str, dict[str, list[list[float]]]] = {label: {} for label in names}
        for index in range(args.passes):  # empty, full; then full, empty; ...
            for label in (names if index % 2 == 0 else list(names)[::-1]):
                for line in run_phase(args, "measure", names[label], ["--pass-index", str(index)]):
                    samples[label].setdefault(line["case"], []).append(line["samples_ms"])
        summary = {}
        for label, cases in samples.items():
            for case, passes in cases.items():
                every = [sample for one in passes for sample in one]
                summary[label, case] = {
                    "db": label, "case": case, "n": len(every), "p50_ms": round(statistics.median(every), 2),
                    "p95_ms": round(percentile(every, 0.95), 2),
                    "pass_p50_ms": [round(statistics.median(one), 2) for one in passes]}
                print(json.dumps(summary[label, case]), flush=True)
        for case in samples["empty"]:
            empty, full = summary["empty", case], summary["full", case]
            print(json.dumps({"case": case, "empty_p50_ms": empty["p50_ms"], "full_p50_ms": full["p50_ms"],
                              "full_p95_ms": full["p95_ms"],
                              "full_over_empty": round(full["p50_ms"] / empty["p50_ms"], 2)}), flush=True)
    finally:
        if not args.keep:
            for name in names.values():
                admin_sql(args.database_url, f'DROP DATABASE IF EXISTS "{name}"')


if __name__ == "__main__":
    main()
