"""Schedules: exactly once under racing schedulers and restarts, over a simulated month.

    .venv/bin/python bench/schedules.py [--schedules 1000] [--days 30] [--processes 4] [--seconds 240]

1,000 schedules (daily at a random minute in a random one of five time zones, two of them with a
daylight-saving change inside the month; every fiftieth hourly) over 30 simulated days, on a temporary
SQLite file (or ``DATABASE_URL``'s PostgreSQL database: the bench migrates it and deletes its
schedules). Four scheduler processes run ``schedules.runner.schedules_tick`` in a loop on a shared
simulated clock (the month passes in ``--seconds`` of real time) and run the fires they claim (a
workflow that appends the fire's claim id to the process's log). Every few seconds the bench kills
one of them (SIGKILL, whatever it is doing) and starts it again: restarts land across fire instants.

Prints one JSON line: ``fires_expected`` (the cron's fire times in the month), ``run`` (fires whose
workflow ran), ``duplicated`` (fires run more than once: must be 0), ``recorded_not_run`` (fires with
a trigger row that did not run: skipped per the misfire policy or failed because their process was
killed mid-run, each with its reason), ``dropped_without_record`` (expected fires with no trigger
row: must be 0), ``restarts`` and ``claim_ms_per_fire`` (the time of the claim transactions divided by
the fires they claimed, from the processes' own counts).
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
    """A scheduler process: tick on the shared simulated clock until the month is over."""
    setup_django()
    import asyncio

    from schedules import runner, services

    sim_start, wall_start, speed, end = (float(os.environ[k]) for k in ("SIM_START", "WALL_START", "SPEED", "SIM_END"))
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

    def clock() -> datetime:
        return datetime.fromtimestamp(sim_start + (time.time() - wall_start) * speed, tz=timezone.utc)

    async def loop() -> None:
        ticks = 0
        while clock().timestamp() < end:
            try:
                await runner.schedules_tick(clock=clock)
                await runner.drain_fires()
            except Exception as exc:  # noqa: BLE001 - as the site's background job: logged, tried again
                print(f"tick failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            ticks += 1
            if ticks % 20 == 0:
                stats.write_text(json.dumps({"claim_s": spent, "fires": fires, "calls": calls}))
            await asyncio.sleep(0.01)
        stats.write_text(json.dumps({"claim_s": spent, "fires": fires, "calls": calls}))

    asyncio.run(loop())


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--schedules", type=int, default=1000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=240.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-schedules-"))
    (work / "bench_schedules_site.py").write_text(
        "from agents.runtime import Mastra\nfrom agents.runtime.workflows import create_workflow\n"
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('bench_schedules', {str(Path(__file__))!r})\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "mastra = Mastra(workflows={'log': create_workflow(id='log', execute=module.log_fire)})\n")
    speed = args.days * 86400 / args.seconds
    env = {**os.environ, "PYTHONPATH": f"{work}{os.pathsep}{ROOT}", "MASTRA_SCHEDULE_SCHEDULER": "true",
           "LOG_LEVEL": "ERROR",
           # simulated seconds pass ``speed`` times faster than real ones: a fire's lease and the
           # grace of a late fire are a simulated day (several real seconds)
           "MASTRA_SCHEDULE_FIRE_LEASE_S": "86400", "MASTRA_SCHEDULE_MISFIRE_GRACE_S": "86400"}
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
    wall_start = time.time() + 2.0  # the processes start together
    env.update(SIM_START=str(START.timestamp()), WALL_START=str(wall_start), SPEED=str(speed),
               # after the month, the processes go on for three simulated days (no more kills): fires
               # claimed by a killed process are dispatched again, dead ones settled
               SIM_END=str(end.timestamp() + 3 * 86400), STATS=str(stats))

    def start(index: int) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, __file__, "--worker", str(index)], cwd=ROOT,
                                env={**env, "FIRE_LOG": str(logs / f"{index}-{time.time_ns()}.log")})

    procs = {i: start(i) for i in range(args.processes)}
    restarts = 0
    deadline = wall_start + args.seconds * 1.2 + 60
    next_kill = wall_start + 3.0
    while any(p.poll() is None for p in procs.values()) and time.time() < deadline:
        time.sleep(0.2)
        if time.time() >= next_kill and time.time() < wall_start + args.seconds:
            victim = rng.randrange(args.processes)
            if procs[victim].poll() is None:
                procs[victim].send_signal(signal.SIGKILL)
                procs[victim].wait()
                procs[victim] = start(victim)
                restarts += 1
            next_kill = time.time() + rng.uniform(2.0, 6.0)
    for p in procs.values():
        if p.poll() is None:
            p.kill()
    ran = Counter(line for log in logs.iterdir() for line in log.read_text().split())
    in_window = {claim for claim in ran if claim in expected}
    recorded = set(ScheduleTrigger.objects.filter(trigger_kind="schedule-fire").values_list("claim_id", flat=True))
    claim_s = fires = 0
    for path in stats.iterdir():
        data = json.loads(path.read_text())
        claim_s += data["claim_s"]
        fires += data["fires"]
    db = "postgres" if os.environ["DATABASE_URL"].startswith("postgres") else "sqlite"
    print(json.dumps({
        "case": "schedules", "db": db, "schedules": args.schedules, "days": args.days, "processes": args.processes,
        "fires_expected": len(expected), "run": len(in_window),
        "duplicated": sum(1 for claim in in_window if ran[claim] > 1),
        "recorded_not_run": len((expected & recorded) - in_window),
        "outcomes": dict(Counter(ScheduleTrigger.objects.filter(claim_id__in=list(expected)).values_list("outcome", flat=True))),
        "dropped_without_record": len(expected - recorded),
        "restarts": restarts, "claim_ms_per_fire": round(claim_s * 1000 / max(fires, 1), 3)}))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]))
    else:
        main()
