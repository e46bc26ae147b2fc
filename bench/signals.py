"""Thread signals: wake latency, subscriber fan-out and the cross-process wake race.

    .venv/bin/python bench/signals.py [--cases c,fanout,race] [--n 500] [--warmup 20]
        [--pg-url postgres://postgres@127.0.0.1:5432/bench_signals] [--redis-url redis://127.0.0.1:6379/0]

Cases:
  c       ``send_message`` waking N distinct idle threads, one after the other; each is read to its
          final ``finish`` chunk through a thread subscription made beforehand. Latency: from the
          call to that chunk. ``local/echo``, no delay, a temporary SQLite file, one process (the
          embedded default: no channel layer across processes).
  fanout  one run streaming ~200 chunks (``local/echo`` with ``chunk_size=1``) to 100 subscribers of
          its thread, same setup. Latency: from the moment the runtime numbers a chunk to the moment
          each subscriber's ``async for`` receives it (p50 / p99 over every chunk × subscriber).
  race    4 processes × 200 concurrent ``send_message`` on the same 20 threads (in waves of concurrent
          sends with short random pauses, so that threads go idle and are raced for again), through Redis and
          PostgreSQL (the database at ``--pg-url`` is dropped and created afresh, then migrated).
          Reports wakes, delivers, inputs lost (accepted but never seen by the model) and duplicated
          (seen as new by more than one model call), and whether every idle period had exactly one
          wake (no two runs of a thread overlap; the lease token counts the runs).

  sql     each statement of the thread hot path through ``agents.sql`` against the same statement
          through the ORM, on the temporary SQLite file (``sqlpg``: on PostgreSQL at ``--pg-url``,
          dropped and created afresh). One JSON line per statement: ``orm_us`` and ``sql_us``
          (medians over ``--n`` runs, each in its own transaction) and ``ratio`` (orm / sql).

``MASTRA_CPU_AFFINITY`` applies to the measuring process as in a web process (``auto`` or a CPU list
keeps it on one CPU, ``mastra_site.cpu_affinity``), and so do ``MASTRA_GC_YOUNG_OBJECTS`` and
``MASTRA_GC_FULL_EVERY`` (the collector's thresholds, ``agents.heap``).

Prints a first line on the machine and interpreter (``bench/machine.py``) before the local cases (c,
fanout), then one JSON line per case: case, n, median_ms, p95_ms, per_s, max_rss_mb and case keys;
c adds cpu_ms, the process's CPU time per wake, and cpu_ms_by_thread, its split between the event
loop's thread, the worker thread of the database calls, the batch writers and the rest (as
``bench/agent_overhead.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
CASES = ("c", "fanout", "race", "sql", "sqlpg")
RACE_PROCESSES = 4
RACE_SENDS = 200
RACE_THREADS = 20
RACE_PAUSE_MAX_S = 0.4
FANOUT_SUBSCRIBERS = 100
FANOUT_TEXT_CHARS = 190  # "echo: " + text, one delta per character: ~200 chunks with the run's frame


def rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(round(q * (len(sorted_values) - 1))))]


def summary(name: str, times: list[float], total_s: float, count: int | None = None) -> dict:
    times = sorted(times)
    return {"case": name, "n": count if count is not None else len(times),
            "median_ms": round(statistics.median(times) * 1000, 4),
            "p95_ms": round(percentile(times, 0.95) * 1000, 4),
            "per_s": round((count if count is not None else len(times)) / total_s, 1) if total_s else None,
            "max_rss_mb": rss_mb()}


def setup_django(database_url: str | None, redis_url: str | None) -> str | None:
    """Django on ``database_url`` (or a temporary SQLite file, migrated); returns the temp dir."""
    sys.path.insert(0, str(ROOT))
    os.environ["DJANGO_SETTINGS_MODULE"] = "mastra_site.settings"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # measure what a deployment pays (as bench/agent_overhead.py): DEBUG logs every SQL statement
    os.environ.setdefault("DEBUG", "false")
    os.environ.pop("REDIS_URL", None)
    if redis_url:
        os.environ["REDIS_URL"] = redis_url
    tmpdir = None
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    else:
        tmpdir = tempfile.mkdtemp(prefix="mastra-bench-signals-")
        os.environ["DATABASE_URL"] = f"sqlite:///{tmpdir}/bench.sqlite3"
    import django
    from django.core.management import call_command

    django.setup()
    if tmpdir is not None:
        call_command("migrate", verbosity=0, interactive=False)
    from agents.heap import heap_thresholds
    from mastra_site.cpu_affinity import apply_cpu_affinity

    apply_cpu_affinity()  # as the ASGI application applies it in a web process
    heap_thresholds()  # the collector's thresholds as in a web process
    return tmpdir


def bench_agent(agent_id: str, **model):
    from agents.memory import Memory
    from agents.runtime import Agent

    return Agent(id=agent_id, instructions="You are a benchmark.", model={"id": "local/echo", **model},
                 memory=Memory())


def is_final(chunk: dict) -> bool:
    return chunk["type"] == "finish" and chunk["payload"]["stepResult"]["reason"] not in ("tool-calls", "suspended")


# -- case c ---------------------------------------------------------------------------------------
async def case_c(n: int, warmup: int) -> dict:
    from agents.runtime.threads import get_thread_runtime

    from bench.machine import runtime_cpu_meter, writers_flushed

    agent = bench_agent("bench-signals")
    stamp = time.time_ns()
    times: list[float] = []
    perf = time.perf_counter
    wall = 0.0
    meter = runtime_cpu_meter()
    for i in range(warmup + n):
        if i == warmup:
            await get_thread_runtime().drain_background()
            writers_flushed()
            meter.start()
        thread_id = f"c-{stamp}-{i}"
        sub = await agent.subscribe_to_thread(resource_id="bench-user", thread_id=thread_id)
        start = perf()
        result = await agent.send_message(f"hello {i}", resource_id="bench-user", thread_id=thread_id)
        async for chunk in sub.stream:
            if is_final(chunk):
                break
        elapsed = perf() - start
        sub.unsubscribe()
        if result.action != "wake" or chunk["payload"]["stepResult"]["reason"] != "stop":
            raise SystemExit(f"case c: expected a wake that ends with stop, got {result.action} {chunk}")
        await result.output.get_full_output()
        if i >= warmup:
            times.append(elapsed)
            wall += perf() - start
    await get_thread_runtime().drain_background()
    writers_flushed()
    return {**summary("c", times, wall), **meter.stop(n)}


# -- case fanout ----------------------------------------------------------------------------------
async def case_fanout(subscribers: int, rounds: int) -> dict:
    from agents.runtime.threads import ActiveRun, get_thread_runtime

    agent = bench_agent("bench-fanout", chunk_size=1)
    runtime = get_thread_runtime()
    latencies: list[float] = []
    chunk_counts = []
    perf = time.perf_counter
    wall = 0.0
    for r in range(rounds):
        thread_id = f"fanout-{time.time_ns()}-{r}"
        emitted: dict[int, float] = {}
        original = ActiveRun.emit

        def timed_emit(active, chunk, original=original, emitted=emitted):
            emitted[active.seq + 1] = perf()  # the seq this chunk is about to get
            return original(active, chunk)

        ActiveRun.emit = timed_emit
        subs = [await agent.subscribe_to_thread(resource_id="bench-user", thread_id=thread_id)
                for _ in range(subscribers)]
        received: list[dict[int, float]] = [{} for _ in subs]

        async def read(sub, into):
            async for chunk in sub.stream:
                into[chunk["seq"]] = perf()
                if is_final(chunk):
                    return

        readers = [asyncio.ensure_future(read(s, into)) for s, into in zip(subs, received)]
        start = perf()
        result = await agent.send_message("x" * FANOUT_TEXT_CHARS, resource_id="bench-user", thread_id=thread_id)
        await asyncio.wait_for(asyncio.gather(*readers), 60)
        wall += perf() - start
        ActiveRun.emit = original
        await result.output.get_full_output()
        for sub in subs:
            sub.unsubscribe()
        final_seq = max(received[0])
        emitted[final_seq] = emitted.get(final_seq) or min(into[final_seq] for into in received)
        chunk_counts.append(len(received[0]))
        for into in received:
            if sorted(into) != sorted(emitted):
                raise SystemExit("case fanout: a subscriber missed chunks")
            latencies.extend(into[seq] - emitted[seq] for seq in into if seq != final_seq)
    await runtime.drain_background()
    latencies.sort()
    line = summary("fanout", latencies, wall, count=rounds)
    line.update({"subscribers": subscribers, "chunks_per_run": chunk_counts[0],
                 "deliveries": len(latencies), "p50_ms": round(percentile(latencies, 0.5) * 1000, 4),
                 "p99_ms": round(percentile(latencies, 0.99) * 1000, 4),
                 "max_ms": round(latencies[-1] * 1000, 4)})
    return line


# -- case race: workers, check, driver -------------------------------------------------------------
async def race_worker(prefix: str, sends: int, threads: int, worker_no: int, waves: int) -> None:
    """One racing process: waits for ``go`` on stdin, then sends concurrently; prints its results."""
    from agents.runtime.threads import get_thread_runtime

    agent = bench_agent("bench-race")
    runtime = get_thread_runtime()
    await runtime.store.thread_state(key="warm-up")
    if runtime.pubsub is not None:
        await runtime.pubsub._ensure_channel()
    print(json.dumps({"event": "ready", "pubsub": type(runtime.pubsub).__name__}), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    perf = time.perf_counter

    async def send(i: int) -> dict:
        thread_id = f"{prefix}-t{i % threads}"
        text = f"race-{prefix}-w{worker_no}-{i}"
        start = perf()
        result = await agent.send_message(text, resource_id="bench-user", thread_id=thread_id)
        return {"text": text, "thread_id": thread_id, "action": result.action, "run_id": result.run_id,
                "signal_id": result.signal["id"], "ms": (perf() - start) * 1000, "output": result.output}

    # waves of concurrent sends (one per thread) with short random pauses between them, so that
    # threads go idle between waves and the processes race to wake them again and again
    rng = random.Random(worker_no)
    per_wave = max(1, sends // waves)
    start = perf()
    results = []
    for first in range(0, sends, per_wave):
        results.extend(await asyncio.gather(*(send(i) for i in range(first, min(sends, first + per_wave)))))
        await asyncio.sleep(rng.uniform(0, RACE_PAUSE_MAX_S))
    accepted_s = perf() - start
    for r in results:
        if r["output"] is not None:
            await r["output"].get_full_output()
        r.pop("output")
    await runtime.drain_background(timeout=60)
    print(json.dumps({"event": "done", "results": results, "accepted_s": accepted_s, "max_rss_mb": rss_mb(),
                      "left_active": len(runtime.active)}), flush=True)
    if runtime.pubsub is not None:
        await runtime.pubsub.close()


def race_check(prefix: str, accepted_path: str) -> None:
    """Lost / duplicated inputs and overlapping runs, from the database (stdout: one JSON object)."""
    from agents.models import Message, Run, ThreadInput, ThreadLease

    accepted = json.loads(Path(accepted_path).read_text())
    threads = sorted({a["thread_id"] for a in accepted})
    seen: dict[str, int] = {a["text"]: 0 for a in accepted}
    for message in Message.objects.filter(thread__thread_id__in=threads, role="assistant"):
        parts = message.content["parts"]  # Mastra's stored format
        for part in parts:
            for line in (part.get("text") or "").splitlines() if part.get("type") == "text" else []:
                text = line[len("echo: "):] if line.startswith("echo: ") else None
                if text in seen:
                    seen[text] += 1
    inputs = {i.input_id: i.status for i in ThreadInput.objects.filter(thread__thread_id__in=threads)}
    overlaps = 0
    runs_total = 0
    token_mismatch = 0
    for thread_id in threads:
        runs = sorted(Run.objects.filter(thread__thread_id=thread_id), key=lambda r: r.started_at)
        runs_total += len(runs)
        for before, after in zip(runs, runs[1:]):
            if before.finished_at is None or before.finished_at > after.started_at:
                overlaps += 1
        lease = ThreadLease.objects.filter(thread__thread_id=thread_id).first()
        if lease is None or lease.token != len(runs) or lease.owner_run_id is not None:
            token_mismatch += 1
    print(json.dumps({
        "lost": sum(1 for n in seen.values() if n == 0),
        "duplicated": sum(1 for n in seen.values() if n > 1),
        "not_consumed": sum(1 for a in accepted if inputs.get(a["signal_id"]) != "consumed"),
        "runs": runs_total, "overlapping_runs": overlaps, "leases_not_matching_runs": token_mismatch,
    }))


def create_database(pg_url: str) -> None:
    import psycopg

    parsed = urlparse(pg_url)
    name = parsed.path.lstrip("/")
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    env = {**os.environ, "DATABASE_URL": pg_url, "DJANGO_SETTINGS_MODULE": "mastra_site.settings"}
    env.pop("REDIS_URL", None)
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "--noinput", "-v", "0"], cwd=ROOT,
                   env=env, check=True)


def case_race(pg_url: str, redis_url: str, waves: int) -> dict:
    create_database(pg_url)
    prefix = f"race{time.time_ns()}"
    env = {**os.environ, "DATABASE_URL": pg_url, "REDIS_URL": redis_url, "LOG_LEVEL": "WARNING",
           "DJANGO_SETTINGS_MODULE": "mastra_site.settings"}
    script = str(Path(__file__).resolve())
    procs = [subprocess.Popen([sys.executable, script, "--race-worker", prefix, "--worker-no", str(n),
                               "--pg-url", pg_url, "--redis-url", redis_url, "--race-waves", str(waves)],
                              cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for n in range(RACE_PROCESSES)]
    for proc in procs:
        ready = json.loads(proc.stdout.readline())
        if ready.get("pubsub") != "ChannelLayerPubSub":
            raise SystemExit(f"case race: a worker has no Redis pub/sub: {ready}")
    start = time.perf_counter()
    for proc in procs:  # as close together as a pipe write allows
        proc.stdin.write("go\n")
        proc.stdin.flush()
    reports = []
    for proc in procs:
        line = proc.stdout.readline()
        proc.wait(timeout=120)
        if not line:
            raise SystemExit("case race: a worker died")
        reports.append(json.loads(line))
    wall = time.perf_counter() - start
    results = [r for report in reports for r in report["results"]]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(results, f)
    try:
        checked = json.loads(subprocess.run(
            [sys.executable, script, "--race-check", prefix, "--accepted", f.name, "--pg-url", pg_url],
            cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
    finally:
        os.unlink(f.name)
    wakes = sum(r["action"] == "wake" for r in results)
    delivers = sum(r["action"] == "deliver" for r in results)
    line = summary("race", [r["ms"] / 1000 for r in results], wall)
    line["max_rss_mb"] = max(report["max_rss_mb"] for report in reports)
    line.update({"processes": RACE_PROCESSES, "threads": RACE_THREADS, "waves": waves, "wakes": wakes,
                 "delivers": delivers,
                 "other_actions": len(results) - wakes - delivers, "lost": checked["lost"],
                 "duplicated": checked["duplicated"], "not_consumed": checked["not_consumed"], "runs": checked["runs"],
                 "one_wake_per_idle_period": checked["overlapping_runs"] == 0
                 and checked["leases_not_matching_runs"] == 0 and wakes + delivers == len(results),
                 "overlapping_runs": checked["overlapping_runs"],
                 "left_active": sum(report["left_active"] for report in reports)})
    return line


# -- case sql -------------------------------------------------------------------------------------
def sql_statements(key: str, thread_id: str) -> list[tuple[str, object, object]]:
    """The hot-path statements on the thread ``key`` (``thread_id`` is the key too: the foreign keys
    of leases, inputs and messages hold it)."""
    """(name, agents.sql call, ORM call) for each statement of a thread wake and its end."""
    from django.utils import timezone

    from agents import sql
    from agents.models import Message, Run, Thread, ThreadInput, ThreadLease

    counter = iter(range(10**9))
    waiting = {"thread_id": thread_id, "status": "pending", "kind": ["deliver", "echo"]}
    values = {"owner_run_id": "r1", "token": 5, "status": "running", "expires_at": timezone.now()}

    def new_input():
        return {"input_id": f"in-{time.time_ns()}-{next(counter)}", "thread_id": thread_id, "agent_id": "a",
                "kind": "deliver", "signal": {"id": "x"}}

    return [
        ("lease_lock", lambda: sql.select_one(ThreadLease, {"thread_id": thread_id}, for_update=True),
         lambda: ThreadLease.objects.select_for_update().filter(thread_id=thread_id).first()),
        ("lease_save", lambda: sql.update(ThreadLease, {"thread_id": thread_id}, values),
         lambda: ThreadLease.objects.filter(thread_id=thread_id).update(**values, updated_at=timezone.now())),
        ("thread_row", lambda: sql.select_one(Thread, {"key": thread_id}),
         lambda: Thread.objects.filter(pk=thread_id).first()),
        ("history_last_20", lambda: sql.select(Message, {"thread_id": thread_id}, order_by=("-id",), limit=20),
         lambda: list(Message.objects.filter(thread_id=thread_id).order_by("-id")[:20])),
        ("inputs_waiting_exist", lambda: sql.exists(ThreadInput, waiting),
         lambda: ThreadInput.objects.filter(thread_id=thread_id, status="pending", kind__in=["deliver", "echo"]).exists()),
        ("input_insert", lambda: sql.insert(ThreadInput, [new_input()]),
         lambda: ThreadInput.objects.bulk_create([ThreadInput(**new_input())])),
        ("run_update", lambda: sql.update(Run, {"id": "run-1"}, {"status": "completed", "steps": 1}),
         lambda: Run.objects.filter(id="run-1").update(status="completed", steps=1)),
    ]


def case_sql(name: str, n: int, warmup: int) -> list[dict]:
    from django.db import transaction
    from django.utils import timezone

    from agents.models import Message, Run, Thread, ThreadLease

    thread_id, key = f"sql-{time.time_ns()}", None
    key = f"bench-user\x1f{thread_id}"
    now = timezone.now()
    Thread.objects.create(thread_id=thread_id, resource_id="bench-user")
    ThreadLease.objects.create(thread_id=key)
    Run.objects.create(id="run-1", agent_id="a", started_at=now)
    Message.objects.bulk_create([Message(message_id=f"m-{thread_id}-{i}", thread_id=key, resource_id="bench-user",
                                         role="user", content="hello", created_at=now) for i in range(50)])
    lines = []
    for statement, fast, orm in sql_statements(key, key):
        timings: dict[str, list[float]] = {"sql": [], "orm": []}
        for i in range(warmup + n):
            for label, call in (("sql", fast), ("orm", orm)) if i % 2 else (("orm", orm), ("sql", fast)):
                with transaction.atomic():
                    start = time.perf_counter()
                    call()
                    elapsed = time.perf_counter() - start
                if i >= warmup:
                    timings[label].append(elapsed)
        orm_us = statistics.median(timings["orm"]) * 1e6
        sql_us = statistics.median(timings["sql"]) * 1e6
        lines.append({"case": name, "statement": statement, "n": n, "orm_us": round(orm_us, 1),
                      "sql_us": round(sql_us, 1), "ratio": round(orm_us / sql_us, 2)})
    return lines


# -- entry ----------------------------------------------------------------------------------------
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases (default c,fanout,race)")
    parser.add_argument("--n", type=int, default=500, help="measured wakes for case c (default 500)")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up wakes for case c (default 20)")
    parser.add_argument("--fanout-rounds", type=int, default=5, help="runs measured in case fanout (default 5)")
    parser.add_argument("--pg-url", default=os.environ.get("BENCH_PG_URL",
                                                          "postgres://postgres@127.0.0.1:5432/bench_signals"))
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0")
    parser.add_argument("--race-waves", type=int, default=10,
                        help="case race: each process sends in this many waves of concurrent sends (default 10)")
    parser.add_argument("--sql-name", default="sql", help=argparse.SUPPRESS)
    parser.add_argument("--sql-db", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--race-worker", metavar="PREFIX", help=argparse.SUPPRESS)
    parser.add_argument("--worker-no", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--race-check", metavar="PREFIX", help=argparse.SUPPRESS)
    parser.add_argument("--accepted", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in args.cases if c not in CASES]
    if unknown or not args.cases:
        parser.error(f"unknown case(s) {unknown}; choose from {', '.join(CASES)}")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.race_worker:
        setup_django(args.pg_url, args.redis_url)
        asyncio.run(race_worker(args.race_worker, RACE_SENDS, RACE_THREADS, args.worker_no, args.race_waves))
        return
    if args.race_check:
        setup_django(args.pg_url, None)
        race_check(args.race_check, args.accepted)
        return
    if "sqlpg" in args.cases:
        create_database(args.pg_url)
        subprocess.run([sys.executable, __file__, "--cases", "sql", "--n", str(args.n), "--warmup", str(args.warmup),
                        "--sql-name", "sqlpg", "--sql-db", args.pg_url], check=True)
    if "sql" in args.cases:
        setup_django(args.sql_db, None)
        for line in case_sql(args.sql_name, args.n, args.warmup):
            print(json.dumps(line), flush=True)
        return
    local = [c for c in args.cases if c not in ("race", "sqlpg")]
    if local:
        tmpdir = setup_django(None, None)
        from bench.machine import print_machine

        print_machine()  # pinned by now, as the local cases will be
        try:
            async def run_local():
                for case in local:
                    line = await (case_c(args.n, args.warmup) if case == "c"
                                  else case_fanout(FANOUT_SUBSCRIBERS, args.fanout_rounds))
                    print(json.dumps(line), flush=True)
            asyncio.run(run_local())
        finally:
            from agents.batch_writer import writers_shutdown

            writers_shutdown()  # the ledger's and the traces' queued rows, while the database exists
            if tmpdir is not None:
                import shutil

                shutil.rmtree(tmpdir, ignore_errors=True)
    if "race" in args.cases:
        print(json.dumps(case_race(args.pg_url, args.redis_url, args.race_waves)), flush=True)


if __name__ == "__main__":
    main()
