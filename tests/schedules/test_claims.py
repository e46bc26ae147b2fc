"""Exactly once: each fire claimed by its unique row before it runs, whatever races; the misfire
policies; fires whose process died; daylight-saving transitions, with an injected clock."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from agents.runtime.schedules import zone
from schedules.models import ScheduleTrigger
from schedules.runner import drain_fires, run_fire, schedules_tick
from schedules.services import fire_start, fires_claim_due

from . import schedule_site

pytestmark = pytest.mark.django_db(transaction=True)
UTC = timezone.utc
ROOT = Path(__file__).resolve().parents[2]


async def triggers(schedule_id: str) -> list[tuple[str, datetime, str]]:
    return await sync_to_async(list)(ScheduleTrigger.objects.filter(schedule_id=schedule_id)
                                     .order_by("scheduled_fire_at").values_list("outcome", "scheduled_fire_at", "error"))


@pytest.mark.asyncio
@pytest.mark.parametrize("days, expected_local", [
    # clocks jump forward on 29 March: 02:30 does not exist that day, the fire is at 03:30 CEST
    ((datetime(2026, 3, 27, 12), 4), ["2026-03-28T02:30:00+01:00", "2026-03-29T03:30:00+02:00",
                                     "2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00"]),
    # clocks go back on 25 October: 02:30 happens twice, the fire is at the first
    ((datetime(2026, 10, 23, 12), 4), ["2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00",
                                      "2026-10-26T02:30:00+01:00", "2026-10-27T02:30:00+01:00"]),
])
async def test_a_daily_0230_fires_once_each_day_across_daylight_saving(schedules, clock, site, days, expected_local):
    start, count = days
    clock.now = start.replace(tzinfo=UTC)
    created = await schedules.create(workflow_id="nightly", cron="30 2 * * *", timezone="Europe/Paris")
    for _ in range(count * 24 * 12):  # a scheduler ticking every 5 simulated minutes
        clock.now += timedelta(minutes=5)
        await schedules_tick(now=clock.now, clock=clock)
    await drain_fires()
    fired = await triggers(created.id)
    paris = zone("Europe/Paris")
    assert [(o, at.astimezone(paris).isoformat()) for o, at, _ in fired] == [("succeeded", t) for t in expected_local]
    assert len(site.WORKFLOW_INPUTS) == count


@pytest.mark.asyncio
@pytest.mark.parametrize("policy, cap, ran", [
    ("skip", 10, []), ("once", 10, ["14:00"]), ("all", 3, ["12:00", "13:00", "14:00"]), ("all", 10, None)])
async def test_fires_missed_while_no_scheduler_ran_follow_the_misfire_policy(schedules, clock, policy, cap, ran):
    created = await schedules.create(workflow_id="nightly", cron="0 * * * *", misfire_policy=policy, misfire_cap=cap)
    clock.now = datetime(2026, 3, 2, 14, 10, tzinfo=UTC)  # the scheduler was down from 08:00 to 14:10
    await schedules_tick(now=clock.now, clock=clock)
    await drain_fires()
    fired = await triggers(created.id)
    hours = ["09:00", "10:00", "11:00", "12:00", "13:00", "14:00"]
    ran = hours if ran is None else ran
    assert [at.strftime("%H:%M") for _, at, _ in fired] == hours
    assert [at.strftime("%H:%M") for outcome, at, _ in fired if outcome == "succeeded"] == ran
    skipped = [(at, error) for outcome, at, error in fired if outcome == "skipped"]
    assert len(skipped) == len(hours) - len(ran)
    if policy == "skip":
        assert skipped[0][1] == ("missed while no scheduler ran (due 2026-03-02T09:00:00Z, claimed 2026-03-02T14:10:00Z); "
                                 "misfire policy skip: missed fires do not run")
    if policy == "once":
        assert skipped[-1][1].endswith("misfire policy once: only the latest missed fire runs")
    # the next fire is on time and runs whatever the policy
    clock.now = datetime(2026, 3, 2, 15, 0, 20, tzinfo=UTC)
    await schedules_tick(now=clock.now, clock=clock)
    await drain_fires()
    assert (await triggers(created.id))[-1][:2] == ("succeeded", datetime(2026, 3, 2, 15, tzinfo=UTC))


@pytest.mark.asyncio
async def test_a_long_backlog_is_recorded_in_full_with_one_row_for_its_oldest_fires(schedules, clock):
    created = await schedules.create(workflow_id="nightly", cron="* * * * * *", misfire_policy="skip")
    clock.now += timedelta(hours=2)
    counts = await schedules_tick(now=clock.now, clock=clock)
    await drain_fires()
    # 7,200 fires were due: the last 61 are within the minute of grace (its ends included) and run;
    # 7,139 were missed
    assert (counts["claimed"], counts["skipped"]) == (61, 1001)
    rows = await triggers(created.id)
    oldest = await sync_to_async(ScheduleTrigger.objects.filter(schedule_id=created.id).order_by(
        "scheduled_fire_at").values_list("metadata", flat=True).first)()
    assert oldest == {"missedFires": 6139, "firstMissedAt": "2026-03-02T08:00:01Z",
                      "lastMissedAt": "2026-03-02T09:42:19Z"}
    assert len(rows) == 1 + 1000 + 61


@pytest.mark.asyncio
async def test_a_fire_whose_process_died_mid_run_fails_and_is_not_run_again(schedules, clock, site, settings):
    settings.MASTRA_SCHEDULE_FIRE_LEASE_S = 30
    created = await schedules.create(workflow_id="nightly", cron="0 9 * * *")
    clock.now = datetime(2026, 3, 2, 9, 0, 1, tzinfo=UTC)
    claim = await sync_to_async(fires_claim_due)(now=clock.now, grace=timedelta(seconds=60))
    [trigger_id] = claim.to_run
    # a process takes the fire and dies before it ends (nothing renews its lease)
    assert await sync_to_async(fire_start)(trigger_id=trigger_id, runner="host:4242:dead", now=clock.now,
                                           lease=timedelta(seconds=30)) is not None
    clock.now += timedelta(seconds=29)
    assert (await schedules_tick(now=clock.now, clock=clock))["failed"] == 0
    clock.now += timedelta(seconds=2)
    assert (await schedules_tick(now=clock.now, clock=clock))["failed"] == 1
    assert await run_fire(trigger_id, clock=clock) is None
    await drain_fires()
    [(outcome, _, error)] = await triggers(created.id)
    assert outcome == "failed"
    assert error == ("the process running this fire (host:4242:dead) stopped before it finished: its lease expired at "
                     "2026-03-02T09:00:31+00:00; the fire is not run again")
    assert site.WORKFLOW_INPUTS == []
    assert (await schedules.get(created.id)).last_outcome == "failed"


@pytest.mark.asyncio
async def test_a_claimed_fire_no_runner_started_is_dispatched_again_and_runs_once(schedules, clock, site):
    created = await schedules.create(workflow_id="nightly", cron="0 9 * * *")
    clock.now = datetime(2026, 3, 2, 9, 0, 1, tzinfo=UTC)
    await sync_to_async(fires_claim_due)(now=clock.now, grace=timedelta(seconds=60))  # its claimer died here
    clock.now += timedelta(minutes=2)
    assert (await schedules_tick(now=clock.now, clock=clock))["redispatched"] == 1
    await drain_fires()
    assert (await schedules_tick(now=clock.now + timedelta(minutes=5), clock=clock))["redispatched"] == 0
    assert [o for o, _, _ in await triggers(created.id)] == ["succeeded"]
    assert site.WORKFLOW_INPUTS == [({}, created.id)]


def _race_claimers(instants: list[datetime], *, barrier: threading.Barrier | None = None) -> list[str]:
    """Four threads (four database connections) claim the due fires at each of ``instants`` until a
    pass claims nothing; with ``barrier``, none moves to the next instant before all are done with
    this one (schedulers sharing one clock). Returns the trigger ids claimed to run."""
    claimed: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def claimer():
        try:
            for now in instants:
                got = fires_claim_due(now=now, grace=timedelta(seconds=60), limit=7)
                while got.schedules:
                    with lock:
                        claimed.extend(got.to_run)
                    got = fires_claim_due(now=now, grace=timedelta(seconds=60), limit=7)
                if barrier is not None:
                    barrier.wait(timeout=60)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            if barrier is not None:
                barrier.abort()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=claimer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    return claimed


def test_claimers_racing_on_their_own_connections_claim_each_fire_once(schedules, clock, postgres_db):
    """Four claimers on their own connections claim the same 40 every-minute schedules at the same
    simulated instants (one shared clock): every fire is claimed to run exactly once. On PostgreSQL,
    as every layout with several schedulers: SQLite serialises writers, and four of them hammering
    one file starve one another past the busy timeout."""
    import asyncio

    for i in range(40):
        asyncio.run(schedules.create(workflow_id="nightly", cron="* * * * *", id=f"race-{i}"))
    instants = [clock.now + timedelta(minutes=m, seconds=1) for m in range(1, 31)]
    claimed = _race_claimers(instants, barrier=threading.Barrier(4))
    rows = list(ScheduleTrigger.objects.values_list("schedule_id", "scheduled_fire_at", "outcome"))
    assert len(rows) == 40 * 30 and len(set(claimed)) == len(claimed) == 40 * 30
    assert Counter((s, at) for s, at, _ in rows).most_common(1)[0][1] == 1
    assert {o for _, _, o in rows} == {"claimed"}


def test_a_claimer_lagging_behind_the_others_neither_repeats_nor_loses_a_fire(schedules, clock, postgres_db,
                                                                              monkeypatch):
    """One of four claimers is slow (its clock lags: it holds its schedules' row locks while the
    others move on). The others skip the rows it holds and may reach a later instant before it
    advances them; a fire they then find more than the grace late is recorded ``skipped`` with the
    misfire policy's reason, never claimed twice and never dropped: each fire has exactly one row."""
    import asyncio

    from schedules import services

    for i in range(40):
        asyncio.run(schedules.create(workflow_id="nightly", cron="* * * * *", id=f"lag-{i}"))
    plan_rows, slow = services._plan_rows, []

    def slow_plan(row, **kwargs):
        slow[:] = slow or [threading.current_thread().name]
        if threading.current_thread().name == slow[0]:
            time.sleep(0.02)
        return plan_rows(row, **kwargs)

    monkeypatch.setattr(services, "_plan_rows", slow_plan)
    instants = [clock.now + timedelta(minutes=m, seconds=1) for m in range(1, 21)]
    claimed = _race_claimers(instants)
    rows = list(ScheduleTrigger.objects.values_list("id", "schedule_id", "scheduled_fire_at", "outcome", "error"))
    fires = Counter((s, at) for _, s, at, _, _ in rows)
    assert len(fires) == 40 * 20 and set(fires.values()) == {1}
    assert sorted(claimed) == sorted(str(i) for i, _, _, o, _ in rows if o == "claimed")
    assert {o for *_, o, _ in rows} <= {"claimed", "skipped"}
    assert all(e.startswith("missed while no scheduler ran") for *_, o, e in rows if o == "skipped")


def test_scheduler_processes_racing_run_each_fire_once(schedules, clock, postgres_db, tmp_path):
    """Four scheduler processes tick over the same 20 schedules through the same simulated hour (ticks every 20 s, 08:00:01 to 09:00:01), and
    run what they claim: every fire runs once (the fire log holds each claim id once)."""
    import asyncio

    schedule_site_ids = []
    from agents.runtime.schedules import Schedules
    from . import race_site

    race = Schedules(race_site.mastra, clock=clock.ms)
    for i in range(20):
        created = asyncio.run(race.create(workflow_id="log", cron="*/5 * * * *", id=f"proc-{i}"))
        schedule_site_ids.append(created.id)
    log = tmp_path / "fires.log"
    # each process has its own simulated clock and runs its hour as fast as it can, so the clocks
    # drift minutes apart: a lease longer than the hour keeps one process's sweep from taking
    # another's fire as dead, and a grace of a day keeps a fire that a lagging process held locked
    # while another ran ahead from counting as missed (that case, fires recorded skipped, is
    # test_a_claimer_lagging_behind_the_others_neither_repeats_nor_loses_a_fire)
    env = {**os.environ, "DATABASE_URL": postgres_db, "FIRE_LOG": str(log), "PYTHONPATH": str(ROOT),
           "MASTRA_SCHEDULE_FIRE_LEASE_S": "86400", "MASTRA_SCHEDULE_MISFIRE_GRACE_S": "86400"}
    start = (clock.now + timedelta(seconds=1)).isoformat()
    workers = [subprocess.Popen([sys.executable, "-m", "tests.schedules.claim_worker", start, "20", "181"], cwd=ROOT,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for _ in range(4)]
    outputs = [w.communicate(timeout=300)[0] for w in workers]
    assert [w.returncode for w in workers] == [0, 0, 0, 0], "\n".join(o[-3000:] for o in outputs)
    fired = log.read_text().split()
    rows = list(ScheduleTrigger.objects.order_by("scheduled_fire_at").values_list("claim_id", "outcome", "error"))
    outcomes = Counter(o for _, o, _ in rows)
    assert len(fired) == 20 * 12 and len(set(fired)) == len(fired), (outcomes, [r for r in rows if r[1] != "succeeded"][:5])
    assert outcomes == {"succeeded": 20 * 12}
