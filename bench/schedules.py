"""Schedules: exactly once under racing schedulers and restarts, over a simulated month.

    .venv/bin/python bench/schedules.py [--schedules 1000] [--days 30] [--processes 4] [--step 600] [--restarts 40]

1,000 schedules (daily at a random minute in a random one of five time zones, two of them with a
daylight-saving change inside the month; every fiftieth hourly) over 30 simulated days, on a temporary
SQLite file (or ``DATABASE_URL``'s PostgreSQL database: the bench migrates it and deletes its
schedules). Four scheduler processes share an injected clock that the bench moves by ``--step``
simulated seconds (10 minutes) once each process has ticked (``schedules.runner.schedules_tick``)
and run the fires it claimed (a workflow that appends the fire's claim id to the process's log), a
simulated day past the month so that killed fires settle. ``--restarts`` times, at random instants,
the bench kills one of them (SIGKILL, whatever it is doing: claiming, running a fire, idle) and
starts it again: restarts land across fire instants.

Prints one JSON line: ``fires_expected`` (the cron's fire times in the month), ``run`` (fires whose
workflow ran), ``duplicated`` (fires run more than once: must be 0), ``recorded_not_run`` (fires with
a trigger row that did not run: skipped per the misfire policy or failed because their process was
killed mid-run, each with its reason), ``dropped_without_record`` (expected fires with no trigger
row: must be 0), ``restarts`` and ``claim_ms_per_fire`` (the time of the claim transactions divided by
the fires they claimed, empty claims included, from the processes' own counts; and per claim call).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
START = datetime(2026, 3, 1, tzinfo=timezone.utc)
ZONES = ["UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo", "Australia/Sydney"]


def log_fire(input, context):  # the scheduled workflow: one line per run
    with open(os.environ["FIRE_LOG"], "a") as log:
        log.write(f"{context.run_id}\n")


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mastra_site.settings")
    os.environ["MASTRA"] = "bench_schedules_site:mastra"
    import django

    django.setup()


def worker(index: int) -> None:
    """A scheduler process: at each simulated instant the bench publishes (``$CLOCK``), tick once and
    run what it claimed, then acknowledge the instant (``$ACKS/<index>``)."""
    setup_django()
    import asyncio

    from schedules import runner, services

    clock_file, ack = Path(os.environ["CLOCK"]), Path(os.environ["ACKS"]) / str(index)
    stats = Path(os.environ["STATS"]) / f"{index}-{os.getpid()}.json"
    spent, fires, calls = 0.0, 0, 0
    claim = services.fires_claim_due

    def timed_claim(**kwargs):  # the claim transaction's cost, as this process saw it
        nonlocal spent, fires, calls
        t0 = time.perf_counter()
        got = claim(**kwargs)
        spent += time.perf_counter() - t0
        fires += len(got.to_run) + got.skipped
        calls += 1
        return got

    runner.fires_claim_due = timed_claim

    async def loop() -> None:
        done = -1.0
        while True:
            try:
                instant = float(clock_file.read_text() or "-1")
            except (OSError, ValueError):
                instant = -1.0
            if instant < 0:  # the month is over
                break
            if instant > done:
                now = datetime.fromtimestamp(instant, tz=timezone.utc)
                try:
                    await runner.schedules_tick(now=now, clock=lambda: now)
                    await runner.drain_fires()
                except Exception as exc:  # noqa: BLE001 - as the site's background job: logged, tried again
                    print(f"tick failed: {type(exc).__name__}: {exc}", file=sys.stderr)
                    continue
                done = instant
                stats.write_text(json.dumps({"claim_s": spent, "fires": fires, "calls": calls}))
                (ack.parent / f"{ack.name}.new").write_text(str(instant))
                os.replace(ack.parent / f"{ack.name}.new", ack)
            else:
                await asyncio.sleep(0.002)

    asyncio.run(loop())


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--schedules", type=int, default=1000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--step", type=int, default=600, help="simulated seconds between two ticks")
    parser.add_argument("--restarts", type=int, default=40, help="processes killed (SIGKILL) and started again")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-schedules-"))
    (work / "bench_schedules_site.py").write_text(
        "from agents.runtime import Mastra\nfrom agents.runtime.workflows import create_workflow\n"
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('bench_schedules', {str(Path(__file__))!r})\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "mastra = Mastra(workflows={'log': create_workflow(id='log', execute=module.log_fire)})\n")
    env = {**os.environ, "PYTHONPATH": f"{work}{os.pathsep}{ROOT}", "MASTRA_SCHEDULE_SCHEDULER": "true",
           "LOG_LEVEL": "ERROR",
           # ticks are ``--step`` simulated seconds apart: a fire up to a step late is on time
           "MASTRA_SCHEDULE_MISFIRE_GRACE_S": str(args.step + 60)}
    if not os.environ.get("DATABASE_URL"):
        env["DATABASE_URL"] = f"sqlite:///{work / 'bench.sqlite3'}"
    os.environ.update(env)
    sys.path.insert(0, str(work))
    setup_django()
    from asgiref.sync import async_to_sync
    from django.core.management import call_command

    from agents.registry import get_mastra
    from agents.runtime.schedules import Schedules, fire_times
    from schedules.models import Schedule, ScheduleTrigger

    call_command("migrate", verbosity=0)
    Schedule.objects.all().delete()
    end = START + timedelta(days=args.days)
    rng = random.Random(7)
    schedules = Schedules(get_mastra(), clock=lambda: int(START.timestamp() * 1000))
    expected: set[str] = set()
    for i in range(args.schedules):
        cron = f"{rng.randrange(60)} * * * *" if i % 50 == 0 else f"{rng.randrange(60)} {rng.randrange(24)} * * *"
        zone = ZONES[i % len(ZONES)]
        created = async_to_sync(schedules.create)(workflow_id="log", cron=cron, timezone=zone, id=f"bench-{i}",
                                                  misfire_policy="all", misfire_cap=1000)
        for at in fire_times(cron, zone, START):
            if at > end:
                break
            expected.add(f"sched_{created.id}_{int(at.timestamp() * 1000)}")
    from django.db import connections

    connections.close_all()
    logs = work / "logs"
    logs.mkdir()
    stats = work / "stats"
    stats.mkdir()
    clock_file, acks = work / "clock", work / "acks"
    acks.mkdir()

    def publish(value: float) -> None:  # atomically: a reader never sees a half-written file
        (work / "clock.new").write_text(str(value))
        os.replace(work / "clock.new", clock_file)

    publish(START.timestamp())
    env.update(CLOCK=str(clock_file), ACKS=str(acks), STATS=str(stats))

    def start(index: int) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, __file__, "--worker", str(index)], cwd=ROOT,
                                env={**env, "FIRE_LOG": str(logs / f"{index}-{time.time_ns()}.log")})

    def acked(index: int) -> float:
        try:
            return float((acks / str(index)).read_text())
        except (OSError, ValueError):
            return -1.0

    procs = {i: start(i) for i in range(args.processes)}
    restarts, began = 0, time.time()
    steps = int((args.days + 1) * 86400 / args.step)  # a simulated day more: killed fires settle
    kill_at = {rng.randrange(10, steps - 200): rng.randrange(args.processes) for _ in range(args.restarts)}
    for step in range(1, steps + 1):
        instant = START.timestamp() + step * args.step
        publish(instant)
        victim = kill_at.get(step)
        if victim is not None:  # killed while it works on this instant: claiming, running or idle
            time.sleep(rng.uniform(0.0, 0.02))
            procs[victim].send_signal(signal.SIGKILL)
            procs[victim].wait()
            procs[victim] = start(victim)
            restarts += 1
        while any(acked(i) < instant for i in procs):
            for i, proc in procs.items():
                if proc.poll() is not None:
                    raise SystemExit(f"scheduler process {i} exited with {proc.returncode}")
            time.sleep(0.001)
    publish(-1)
    for proc in procs.values():
        proc.wait(timeout=60)
    elapsed = time.time() - began
    ran = Counter(line for log in logs.iterdir() for line in log.read_text().split())
    in_window = {claim for claim in ran if claim in expected}
    recorded = set(ScheduleTrigger.objects.filter(trigger_kind="schedule-fire").values_list("claim_id", flat=True))
    claim_s = fires = calls = 0
    for path in stats.iterdir():
        data = json.loads(path.read_text())
        claim_s += data["claim_s"]
        fires += data["fires"]
        calls += data["calls"]
    db = "postgres" if os.environ["DATABASE_URL"].startswith("postgres") else "sqlite"
    print(json.dumps({
        "case": "schedules", "db": db, "schedules": args.schedules, "days": args.days, "processes": args.processes,
        "fires_expected": len(expected), "run": len(in_window),
        "duplicated": sum(1 for claim in in_window if ran[claim] > 1),
        "recorded_not_run": len((expected & recorded) - in_window),
        "outcomes": dict(Counter(ScheduleTrigger.objects.filter(claim_id__in=list(expected)).values_list("outcome", flat=True))),
        "dropped_without_record": len(expected - recorded),
        "restarts": restarts, "claim_ms_per_fire": round(claim_s * 1000 / max(fires, 1), 3),
        "claim_calls": calls, "claim_ms_per_call": round(claim_s * 1000 / max(calls, 1), 3),
        "ticks": steps, "wall_s": round(elapsed, 1)}))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]))
    else:
        main()
