"""The retention sweeper under a write load, on PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<scratch db> .venv/bin/python bench/retention.py \
        [--events 1000000] [--writers 4] [--rate 50] [--phase-s 5]

The bench migrates the database named by ``DATABASE_URL`` and empties the thread tables (TRUNCATE):
point it at a scratch database. It fills ``--events`` thread events over 1,000 idle threads with one
``INSERT … SELECT generate_series`` (runs of 50 events, the threads' runs interleaved, as a busy
site writes them); 90 % of them are 30 days old, past the default 14 days of
``MASTRA_RETAIN_THREAD_EVENTS_DAYS``, the rest an hour old.

Write load: ``--writers`` threads, each the owner of a live thread, append 5 events per call
through the site's event log (``agents.threads.events.events_append``: lock the lease, insert,
update the lease; one transaction), ``--rate`` calls per second each, on a fixed schedule (a call
that falls behind it starts at once: an open load, as runs streaming to their threads are, not a
closed loop that would saturate the host and measure only its CPU share). Latency per call.

The sweep: ``manage.py sweep``'s command in another process (as Celery's worker is), with the
default batch and pause, deleting the expired events. The host's own load drifts (other work shares
it), so the sweeper is paused (SIGSTOP) and resumed (SIGCONT) in alternating ``--phase-s`` windows
until it is done: each write counts for the window it started in, and the two sets of windows see
the same drift.

Cases, one JSON line each:
  fill                  the events written and how long it took;
  writes_alone          the writes of the windows with the sweeper paused;
  writes_with_sweeper   the writes of the windows with the sweeper running;
  sweep                 rows_before/rows_after (events in the table), expired_before/expired_after
                        (those older than the retention), deleted, the sweep's running time;
  summary               the write p99 with and without the sweeper and its change in % (the target:
                        under 10 %).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
THREADS = 1000
RUN_LENGTH = 50  # events one run writes in a row
OLD_SHARE = 0.9
CHUNKS_PER_WRITE = 5


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(round(q * (len(sorted_values) - 1))))]


def setup_django() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ["DJANGO_SETTINGS_MODULE"] = "mastra_site.settings"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("DEBUG", "false")
    os.environ["MASTRA_NOTIFICATION_SCHEDULER"] = "0"
    os.environ["MASTRA_SWEEP_SCHEDULER"] = "0"
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.db import connection

    if connection.vendor != "postgresql":
        sys.exit("bench/retention.py measures PostgreSQL: set DATABASE_URL to a scratch PostgreSQL database")
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def fill(events: int) -> None:
    """``events`` events over :data:`THREADS` idle threads, in runs of :data:`RUN_LENGTH`, the oldest
    first (ids grow with time, as the site writes them)."""
    from django.db import connection

    per_thread = events // THREADS
    round_size = THREADS * RUN_LENGTH
    old_rounds = int(per_thread * OLD_SHARE) // RUN_LENGTH
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE agents_thread CASCADE")
        cursor.execute("""
            INSERT INTO agents_thread (key, resource_id, thread_id, title, metadata, created_at, updated_at, saved)
            SELECT 'bench-r' || (t %% 50) || chr(31) || 'bench-t' || t, 'bench-r' || (t %% 50), 'bench-t' || t,
                   '', '{}'::jsonb, now() - interval '31 days', now(), true
            FROM generate_series(0, %s - 1) AS t""", [THREADS])
        cursor.execute("""
            INSERT INTO agents_threadlease (thread_id, agent_id, owner_process, status, token, abort_requested,
                                            last_seq, reserved_seq, swept_seq, updated_at)
            SELECT key, 'bench', '', 'idle', 1, false, %s, %s, 0, now() FROM agents_thread""",
                       [per_thread, per_thread])
        cursor.execute("""
            INSERT INTO agents_threadevent (thread_id, seq, run_id, chunk, created_at)
            SELECT 'bench-r' || (t %% 50) || chr(31) || 'bench-t' || t, seq, 'run-' || t || '-' || r,
                   jsonb_build_object('type', 'text-delta', 'runId', 'run-' || t || '-' || r, 'seq', seq,
                                      'from', 'AGENT', 'payload', jsonb_build_object('id', 'txt-1',
                                      'text', 'a few words of the answer, as a model streams them')),
                   CASE WHEN r < %(old_rounds)s THEN now() - interval '30 days' ELSE now() - interval '1 hour' END
                       + g * interval '1 millisecond'
            FROM generate_series(0, %(n)s - 1) AS g,
                 LATERAL (SELECT g / %(round)s AS r, (g %% %(round)s) / %(run)s AS t) AS place,
                 LATERAL (SELECT r * %(run)s + g %% %(run)s + 1 AS seq) AS numbered""",
                       {"n": per_thread * THREADS, "round": round_size, "run": RUN_LENGTH, "old_rounds": old_rounds})
        cursor.execute("ANALYZE agents_threadevent")


def writer_threads(writers: int) -> list[str]:
    """The live threads of the writers (their leases held by a run, token 1)."""
    from django.db import connection

    keys = [f"bench-live{chr(31)}live-{i}" for i in range(writers)]
    with connection.cursor() as cursor:
        for key in keys:
            cursor.execute("""
                INSERT INTO agents_thread (key, resource_id, thread_id, title, metadata, created_at, updated_at, saved)
                VALUES (%s, 'bench-live', %s, '', '{}'::jsonb, now(), now(), true) ON CONFLICT DO NOTHING""",
                           [key, key.split(chr(31))[1]])
            cursor.execute("""
                INSERT INTO agents_threadlease (thread_id, agent_id, owner_run_id, owner_process, status, token,
                                                abort_requested, last_seq, reserved_seq, swept_seq, updated_at)
                VALUES (%s, 'bench', 'live-run', 'bench', 'running', 1, false, 0, 0, 0, now())
                ON CONFLICT DO NOTHING""", [key])
    return keys


class WriteLoad:
    """``len(keys)`` threads appending events until :meth:`stop_timed`."""

    def __init__(self, keys: list[str], rate: float):
        self.keys = keys
        self.interval = 1.0 / rate
        self.timed: list[tuple[float, float]] = []  # (start, latency)
        self.started = time.perf_counter()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._write, args=(key,)) for key in keys]

    def start(self) -> None:
        self.started = time.perf_counter()
        for thread in self._threads:
            thread.start()

    def stop_timed(self) -> list[tuple[float, float]]:
        """Stop; every call's (start, latency)."""
        self._stop.set()
        for thread in self._threads:
            thread.join()
        return self.timed

    def _write(self, key: str) -> None:
        from django.db import connection

        from agents.models import ThreadLease
        from agents.threads.events import events_append

        seq = ThreadLease.objects.get(thread_id=key).last_seq
        mine = []
        due = time.perf_counter()
        try:
            while not self._stop.is_set():
                due += self.interval
                wait = due - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
                else:
                    due = time.perf_counter()  # behind: start now, no burst to catch up
                chunks = [{"type": "text-delta", "runId": "live-run", "from": "AGENT", "seq": seq + i,
                           "payload": {"id": "txt-1", "text": "a few words of the answer"}}
                          for i in range(1, CHUNKS_PER_WRITE + 1)]
                started = time.perf_counter()
                assert events_append(key=key, token=1, events=chunks)
                mine.append((started, time.perf_counter() - started))
                seq += CHUNKS_PER_WRITE
        finally:
            connection.close()
            with self._lock:
                self.timed.extend(mine)


def counts() -> tuple[int, int]:
    """(events in the table, events older than the retention)."""
    from django.conf import settings
    from django.db import connection

    days = settings.MASTRA_RETENTION_DAYS["thread_events"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), count(*) FILTER (WHERE created_at < now() - %s * interval '1 day') "
                       "FROM agents_threadevent", [days])
        return cursor.fetchone()


def summary_of(latencies: list[float]) -> dict:
    return {"writes": len(latencies), "median_ms": round(statistics.median(latencies) * 1000, 3),
            "p95_ms": round(percentile(latencies, 0.95) * 1000, 3),
            "p99_ms": round(percentile(latencies, 0.99) * 1000, 3)}


SWEEPER = """
import os, sys
sys.path.insert(0, sys.argv[1])
import django
django.setup()
from django.core.management import call_command
print("ready", flush=True)
sys.stdin.readline()
call_command("sweep")
"""


def interleaved(keys: list[str], rate: float, phase_s: float) -> None:
    """The write load while the sweeper runs in ``phase_s`` windows, paused in the others."""
    rows_before, expired_before = counts()
    sweeper = subprocess.Popen([sys.executable, "-c", SWEEPER, str(ROOT)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
                               cwd=ROOT)
    assert sweeper.stdout.readline().strip() == "ready"
    load = WriteLoad(keys, rate)
    load.start()
    windows: list[tuple[float, float, bool]] = []  # (start, end, sweeper running)
    time.sleep(phase_s)
    windows.append((load.started, time.perf_counter(), False))
    sweeper.stdin.write("go\n")
    sweeper.stdin.flush()
    running, sweep_s = True, 0.0
    while sweeper.poll() is None:
        began = time.perf_counter()
        try:
            sweeper.wait(timeout=phase_s)
        except subprocess.TimeoutExpired:
            pass
        ended = time.perf_counter()
        if running:
            sweep_s += ended - began
        windows.append((began, ended, running))
        if sweeper.poll() is None:
            os.kill(sweeper.pid, signal.SIGSTOP if running else signal.SIGCONT)
            running = not running
    began = time.perf_counter()
    time.sleep(phase_s)  # one more window without the sweeper after it ended
    windows.append((began, time.perf_counter(), False))
    timed = load.stop_timed()
    out, err = sweeper.communicate()
    if sweeper.returncode != 0:
        sys.exit(f"manage.py sweep failed: {err}")
    deleted = int(re.search(r"agents\.ThreadEvent: deleted (\d+)", out).group(1))
    rows_after, expired_after = counts()

    def of(on: bool) -> list[float]:
        return sorted(latency for at, latency in timed
                      if any(start <= at < end and state == on for start, end, state in windows))

    alone, with_sweeper = of(False), of(True)
    line = {"phase_s": phase_s, "windows": sum(1 for w in windows if not w[2])}
    print(json.dumps({"case": "writes_alone", **line, **summary_of(alone)}), flush=True)
    print(json.dumps({"case": "writes_with_sweeper", **line, "windows": sum(1 for w in windows if w[2]),
                      **summary_of(with_sweeper)}), flush=True)
    print(json.dumps({"case": "sweep", "rows_before": rows_before, "rows_after": rows_after,
                      "expired_before": expired_before, "expired_after": expired_after, "deleted": deleted,
                      "sweep_s": round(sweep_s, 1), "deleted_per_s": round(deleted / sweep_s)}), flush=True)
    p99_alone, p99_with = summary_of(alone)["p99_ms"], summary_of(with_sweeper)["p99_ms"]
    print(json.dumps({"case": "summary", "p99_alone_ms": p99_alone, "p99_with_sweeper_ms": p99_with,
                      "p99_change_pct": round((p99_with - p99_alone) / p99_alone * 100, 1),
                      "rows_before": rows_before, "rows_after": rows_after}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--rate", type=float, default=50.0, help="calls per second of each writer")
    parser.add_argument("--phase-s", type=float, default=5.0, help="seconds of each window")
    args = parser.parse_args()
    setup_django()
    from django.conf import settings
    from django.db import connection

    started = time.perf_counter()
    fill(args.events)
    keys = writer_threads(args.writers)
    print(json.dumps({"case": "fill", "events": counts()[0], "seconds": round(time.perf_counter() - started, 1),
                      "batch": settings.MASTRA_SWEEP_BATCH, "pause_ms": settings.MASTRA_SWEEP_PAUSE_MS,
                      "duty_percent": settings.MASTRA_SWEEP_DUTY_PERCENT,
                      "retention_days": settings.MASTRA_RETENTION_DAYS["thread_events"], "writers": args.writers,
                      "writes_per_s": args.writers * args.rate, "cpus": os.cpu_count()}), flush=True)
    connection.close()
    interleaved(keys, args.rate, args.phase_s)


if __name__ == "__main__":
    main()
