"""Budgets and limits raced across processes on PostgreSQL: the database decides.

- Two OS processes each run 8 runs of one resource at once, each a loop of 10-token steps, against
  one hard budget of 500 tokens a day: no add is lost (the counter equals the tokens of every call
  made) and the total overshoot is at most one step per concurrent run (16 steps, 160 tokens).
- Threads on their own connections take active-run slots of one resource at once: exactly the
  limit get one.
"""

import json
import os
import subprocess
import sys
import threading
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

import pytest
from django.db import connections

from agents.runtime.budgets import RunScope
from agents.runtime.errors import TooManyActiveRunsError
from budgets.models import ActiveRunSlot, BudgetCounter
from budgets.slots import limits_for, slot_release, slot_take

ROOT = Path(__file__).resolve().parents[2]
RUNS_PER_PROCESS = 8
LIMIT = 500
STEP_TOKENS = 10


def test_runs_of_one_resource_racing_in_two_processes_overshoot_at_most_one_step_each(postgres_db):
    env = {**os.environ, "DATABASE_URL": postgres_db, "PYTHONPATH": str(ROOT)}
    workers = [subprocess.Popen([sys.executable, "-m", "tests.budgets.race_worker", str(RUNS_PER_PROCESS), str(LIMIT)],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(2)]
    outputs = [w.communicate(timeout=300) for w in workers]
    assert [w.returncode for w in workers] == [0, 0], "\n".join(err[-3000:] for _, err in outputs)
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert [r["errors"] for r in reports] == [[], []]
    assert sum(r["refused"] for r in reports) == 2 * RUNS_PER_PROCESS  # every run ended on the budget
    counter = BudgetCounter.objects.get(budget_id="alice-daily")
    calls = sum(r["calls"] for r in reports)
    assert counter.spent == Decimal(calls * STEP_TOKENS)  # no add lost
    overshoot = int(counter.spent) - LIMIT
    print(f"\nbudget race: limit {LIMIT} tokens, {2 * RUNS_PER_PROCESS} concurrent runs in 2 processes, "
          f"{calls} calls, spent {int(counter.spent)}, overshoot {overshoot} tokens ({overshoot // STEP_TOKENS} steps)")
    assert 0 <= overshoot <= 2 * RUNS_PER_PROCESS * STEP_TOKENS
    assert counter.reached_at is not None


def test_threads_on_their_own_connections_take_at_most_the_limit_of_slots(postgres_db):
    now = datetime(2026, 12, 3, 10, 0, tzinfo=timezone.utc)
    barrier = threading.Barrier(12)
    taken, refused, errors = [], [], []
    lock = threading.Lock()

    def take(n: int) -> None:
        scope = RunScope(run_id=f"run-{n}", agent_id="bot", resource_id="alice")
        try:
            barrier.wait()
            slot_take(scope=scope, limits=limits_for(scope, per_resource=3, per_agent=0), now=now, ttl_s=60)
            with lock:
                taken.append(n)
        except TooManyActiveRunsError as exc:
            with lock:
                refused.append(exc.details)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=take, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert (len(taken), len(refused)) == (3, 9)
    assert refused[0] == {"scope": "resource", "limit": 3, "active": 3}
    assert ActiveRunSlot.objects.filter(resource_id="alice").count() == 3
    # one ends: the next run gets its place
    slot_release(run_id=f"run-{taken[0]}")
    scope = RunScope(run_id="run-late", agent_id="bot", resource_id="alice")
    slot_take(scope=scope, limits=limits_for(scope, per_resource=3, per_agent=0), now=now, ttl_s=60)
    assert ActiveRunSlot.objects.filter(resource_id="alice").count() == 3


def test_adds_racing_across_a_soft_limit_claim_its_one_notice_once(postgres_db):
    from agents.runtime.budgets import Budget
    from budgets.counters import CounterAdd, counters_add
    from zoneinfo import ZoneInfo

    now = datetime(2026, 12, 3, 10, 0, tzinfo=timezone.utc)
    watch = Budget(id="watch", limit=Decimal(100), unit="tokens", mode="soft")
    barrier = threading.Barrier(10)
    reached, errors = [], []

    def add(n: int) -> None:
        try:
            barrier.wait()
            for _ in range(3):
                reached.extend(counters_add(scope=RunScope(run_id=f"run-{n}", agent_id="bot"),
                                            adds=[CounterAdd(watch, Decimal(5))], at=now, tz=ZoneInfo("UTC")))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=add, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert BudgetCounter.objects.get(budget_id="watch").spent == 150
    assert [(budget.id, spent >= 100) for budget, spent in reached] == [("watch", True)]
