"""Notification inbox: ingest and dispatch throughput.

    .venv/bin/python bench/inbox.py [--cases ingest,dispatch,dispatch_full] [--db sqlite,postgres]

PostgreSQL is used when ``DATABASE_URL`` is set (point it at a scratch database, e.g.
``createdb -h 127.0.0.1 -U postgres bench_inbox``: the bench migrates it and empties the inbox and
thread tables, with TRUNCATE); SQLite always runs, on a temporary file. Each database runs in its own child process.

Cases:
  ingest         5,000 ``agent.send_notification_signal`` calls over 50 threads: 50 concurrent producers,
                 one per thread, each sending its 100 notifications one after the other; every second
                 call repeats the dedupe key of the one before (50% dedupe hits). The agent
                 has a digest policy (``summarize`` with ``summary_at`` in 30 minutes), so a call stores
                 and decides but emits nothing: the cost of ingestion. Concurrent calls are
                 group-committed (``inbox.store``: one transaction per batch of calls). Latency per call.
  ingest_batch   the same 5,000 notifications sent as lists of 50 (one call per list: one transaction
                 and one thread-state check per list). Latency per call; per_s counts notifications.
  dispatch       10,000 due digest records (summary_at reached; low/medium/high) over 50 threads,
                 dispatched by ``dispatch_due_notifications`` in batches of 100: one summary signal per
                 thread and batch. Latency per batch; per_s counts records.
  dispatch_full  1,000 due full deliveries over 50 idle threads: each thread is woken by its first
                 record (a ``local/echo`` run) and the others are delivered into that run. per_s counts
                 records, including the runs finishing.

Prints one JSON line per case: case, n, median_ms, p95_ms, per_s, max_rss_mb, db, and cpu_s (the
CPU time of the bench process during the case, seeding included: on a shared host it moves less
with the load than the wall-clock figures).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ("ingest", "ingest_batch", "dispatch", "dispatch_full")
THREADS = 50
INGEST_CALLS = 5_000
DISPATCH_RECORDS = 10_000
DISPATCH_FULL_RECORDS = 1_000
BATCH = 50


def rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(round(q * (len(sorted_values) - 1))))]


def line(case: str, db: str, n: int, times: list[float], total_s: float, **extra) -> dict:
    times = sorted(times)
    return {"case": case, "n": n, "median_ms": round(statistics.median(times) * 1000, 3),
            "p95_ms": round(percentile(times, 0.95) * 1000, 3), "per_s": round(n / total_s, 1),
            "max_rss_mb": rss_mb(), "db": db, **extra}


def setup_django(database_url: str | None) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ["DJANGO_SETTINGS_MODULE"] = "mastra_site.settings"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # measure what a deployment pays (as bench/agent_overhead.py): DEBUG logs every SQL statement
    os.environ.setdefault("DEBUG", "false")
    os.environ["MASTRA_NOTIFICATION_SCHEDULER"] = "0"
    os.environ.pop("REDIS_URL", None)
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    else:
        tmpdir = tempfile.mkdtemp(prefix="mastra-bench-inbox-")
        os.environ["DATABASE_URL"] = f"sqlite:///{tmpdir}/bench.sqlite3"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def reset() -> None:
    from django.db import connection

    from agents.models import Message, Run, Thread, ThreadEvent, ThreadInput, ThreadLease
    from inbox.models import NotificationRecord

    models = (NotificationRecord, ThreadInput, ThreadEvent, ThreadLease, Message, Run, Thread)
    if connection.vendor == "postgresql":
        # TRUNCATE leaves no dead rows: after DELETE, a server without autovacuum would scan every
        # deleted row of earlier runs again, and each run would be slower than the one before
        tables = ", ".join(connection.ops.quote_name(model._meta.db_table) for model in models)
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {tables} CASCADE")
        return
    for model in models:
        model.objects.all().delete()


def make_agent(policy: dict | None = None):
    from agents.memory import Memory
    from agents.runtime import Agent

    return Agent(id="bench", instructions="Triage.", model="local/echo", memory=Memory(last_messages=10),
                 notifications={"delivery_policy": policy} if policy else None)


async def bench_ingest(db: str) -> dict:
    agent = make_agent({"default": {"action": "summarize", "summary_at": timedelta(minutes=30)}})
    times: list[float] = []
    per_thread = INGEST_CALLS // THREADS

    async def producer(thread: int) -> None:
        # a thread's notifications arrive one after the other; threads are independent producers
        for j in range(per_thread):
            i = thread * per_thread + j
            pair = i // 2  # calls 2k and 2k+1 carry the same dedupe key: the second one coalesces
            notification = {"source": ("github", "slack", "email")[pair % 3], "kind": "event",
                            "priority": ("low", "medium", "high")[pair % 3], "summary": f"event {i}",
                            "payload": {"n": i}, "dedupe_key": f"k{pair}"}
            t0 = time.perf_counter()
            await agent.send_notification_signal(notification, resource_id="bench", thread_id=f"thread-{thread}")
            times.append(time.perf_counter() - t0)

    started = time.perf_counter()
    await asyncio.gather(*(producer(t) for t in range(THREADS)))
    total = time.perf_counter() - started
    from inbox.models import NotificationRecord

    stored = await NotificationRecord.objects.acount()
    assert stored == INGEST_CALLS // 2, stored
    return line("ingest", db, INGEST_CALLS, times, total, records=stored, dedupe_hits=INGEST_CALLS - stored)


async def bench_ingest_batch(db: str) -> dict:
    agent = make_agent({"default": {"action": "summarize", "summary_at": timedelta(minutes=30)}})
    times: list[float] = []
    per_thread = INGEST_CALLS // THREADS

    async def producer(thread: int) -> None:
        for start in range(0, per_thread, BATCH):
            batch = []
            for j in range(start, min(start + BATCH, per_thread)):
                i = thread * per_thread + j
                pair = i // 2
                batch.append({"source": ("github", "slack", "email")[pair % 3], "kind": "event",
                              "priority": ("low", "medium", "high")[pair % 3], "summary": f"event {i}",
                              "payload": {"n": i}, "dedupe_key": f"k{pair}"})
            t0 = time.perf_counter()
            await agent.send_notification_signal(batch, resource_id="bench", thread_id=f"thread-{thread}")
            times.append(time.perf_counter() - t0)

    started = time.perf_counter()
    await asyncio.gather(*(producer(t) for t in range(THREADS)))
    total = time.perf_counter() - started
    from inbox.models import NotificationRecord

    stored = await NotificationRecord.objects.acount()
    assert stored == INGEST_CALLS // 2, stored
    return line("ingest_batch", db, INGEST_CALLS, times, total, calls=len(times), batch=BATCH, records=stored,
                dedupe_hits=INGEST_CALLS - stored)


def seed(count: int, *, full: bool, now) -> None:
    from agents.models import Thread
    from inbox.models import NotificationRecord, new_record_id

    Thread.objects.bulk_create([Thread(thread_id=f"thread-{t}", resource_id="bench") for t in range(THREADS)],
                               ignore_conflicts=True)
    due = now - timedelta(seconds=1)
    rows = []
    for i in range(count):
        priority = ("urgent" if full else ("low", "low", "medium", "high")[i % 4])
        rank = {"low": 0, "medium": 1, "high": 2, "urgent": 3}[priority]
        rows.append(NotificationRecord(
            id=new_record_id(), agent_id="bench", resource_id="bench", thread_id=f"bench\x1fthread-{i % THREADS}",
            source=("github", "slack", "email")[i % 3], kind="event", priority=priority, priority_rank=rank,
            summary=f"event {i}", deliver_at=due if full else None, summary_at=None if full else due, next_due_at=due,
            created_at=now, updated_at=now))
    NotificationRecord.objects.bulk_create(rows, batch_size=1000)


async def bench_dispatch(db: str, *, full: bool) -> dict:
    from asgiref.sync import sync_to_async
    from django.utils import timezone

    from agents.runtime.threads import get_thread_runtime
    from inbox.dispatcher import dispatch_due_notifications
    from inbox.models import NotificationRecord

    count = DISPATCH_FULL_RECORDS if full else DISPATCH_RECORDS
    agent = make_agent()
    now = timezone.now()
    await sync_to_async(seed)(count, full=full, now=now)
    times, handled = [], 0
    started = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        stats = await dispatch_due_notifications(now=now, max_batches=1, agent_lookup=lambda agent_id: agent)
        counts = stats["counts"]
        if not counts["batches"]:
            break
        times.append(time.perf_counter() - t0)
        handled += counts["delivered"] + counts["summarised"]
    await get_thread_runtime().drain_background(timeout=600)
    total = time.perf_counter() - started
    assert handled == count, (handled, count)
    if full:
        delivered = await NotificationRecord.objects.filter(status="delivered").acount()
        assert delivered == count, delivered
    return line("dispatch_full" if full else "dispatch", db, count, times, total, batches=len(times))


def child(db: str, cases: list[str]) -> None:
    setup_django(os.environ.get("DATABASE_URL") if db == "postgres" else None)
    from asgiref.sync import sync_to_async

    async def main():
        for case in cases:
            await sync_to_async(reset)()
            cpu = time.process_time()
            if case == "ingest":
                result = await bench_ingest(db)
            elif case == "ingest_batch":
                result = await bench_ingest_batch(db)
            else:
                result = await bench_dispatch(db, full=case == "dispatch_full")
            result["cpu_s"] = round(time.process_time() - cpu, 2)  # all threads; steadier than wall time on a busy host
            print(json.dumps(result), flush=True)
        await sync_to_async(reset)()

    asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--db", default=None, help="sqlite,postgres (default: sqlite, and postgres with DATABASE_URL)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        parser.error(f"unknown case {sorted(unknown)[0]!r}")
    if args.child:
        child(args.child, cases)
        return
    dbs = args.db.split(",") if args.db else ["sqlite"] + (["postgres"] if os.environ.get("DATABASE_URL") else [])
    for db in dbs:
        if db == "postgres" and not os.environ.get("DATABASE_URL", "").startswith("postgres"):
            print(json.dumps({"case": "postgres", "skipped": "DATABASE_URL is not a PostgreSQL URL"}), flush=True)
            continue
        env = dict(os.environ)
        if db == "sqlite":
            env.pop("DATABASE_URL", None)
        subprocess.run([sys.executable, __file__, "--child", db, "--cases", ",".join(cases)], env=env, check=True)


if __name__ == "__main__":
    main()
