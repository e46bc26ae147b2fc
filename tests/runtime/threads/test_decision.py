"""The thread decision table (DESIGN §4), row by row: ``agents.runtime.threads.decision``.

Both thread stores take their decisions from these functions; the store contract tests check that
each store stores what was decided."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone

import pytest

from agents.runtime.threads.decision import InputDecision, LeaseView, NextRun, input_decide, lease_held, next_run

NOW = datetime(2026, 1, 1, 12, tzinfo=timezone.utc)

# -- whether a run holds the thread --------------------------------------------------------------
LEASE_HELD = [
    # owner run, status, expires at, held
    (None, "idle", None, False),
    (None, "running", NOW + timedelta(seconds=5), False),  # no owner: nothing holds it
    ("r1", "running", NOW + timedelta(seconds=5), True),
    ("r1", "running", NOW, False),  # expired at this instant: its owner died
    ("r1", "running", NOW - timedelta(seconds=5), False),
    ("r1", "running", None, False),
    ("r1", "suspended", None, True),  # on a tool approval: held with no expiry
    ("r1", "suspended", NOW - timedelta(days=9), True),
]


@pytest.mark.parametrize("owner, status, expires_at, held", LEASE_HELD)
def test_whether_a_lease_holds_its_thread(owner, status, expires_at, held):
    assert lease_held(owner_run_id=owner, status=status, expires_at=expires_at, now=NOW) is held
    # seconds compare as datetimes do (the in-memory store's clock)
    seconds = None if expires_at is None else expires_at.timestamp()
    assert lease_held(owner_run_id=owner, status=status, expires_at=seconds, now=NOW.timestamp()) is held


# -- an input ------------------------------------------------------------------------------------
NEVER_RAN = LeaseView(held=False)
IDLE = LeaseView(held=False, agent_id="bot", token=3)
DEAD_OWNER = LeaseView(held=False, agent_id="bot", status="running", owner_run_id="r0", token=2)
OURS = LeaseView(held=True, agent_id="bot", status="running", owner_run_id="r1", token=1)
OURS_SUSPENDED = LeaseView(held=True, agent_id="bot", status="suspended", owner_run_id="r1", token=1)
THEIRS = LeaseView(held=True, agent_id="other", status="running", owner_run_id="r9", token=4)
THEIRS_SUSPENDED = LeaseView(held=True, agent_id="other", status="suspended", owner_run_id="r9", token=4)

D = InputDecision
ROWS = [
    # the thread, mode, if_active, if_idle → decision (agent "bot" sends)
    # idle: if_idle decides; mode says nothing more (queue_message's branches always wake)
    (NEVER_RAN, "send", "deliver", "wake", D("wake", "if_idle")),
    (NEVER_RAN, "send", "deliver", "persist", D("persist", "if_idle")),
    (NEVER_RAN, "send", "deliver", "discard", D("discard", "if_idle")),
    (NEVER_RAN, "queue", "deliver", "wake", D("wake", "if_idle")),
    (IDLE, "send", "deliver", "wake", D("wake", "if_idle", leftovers=True)),
    (IDLE, "send", "deliver", "persist", D("persist", "if_idle")),
    (IDLE, "send", "deliver", "discard", D("discard", "if_idle")),
    (IDLE, "queue", "deliver", "wake", D("wake", "if_idle", leftovers=True)),
    (DEAD_OWNER, "send", "deliver", "wake", D("wake", "if_idle", reclaim=True, leftovers=True)),
    (DEAD_OWNER, "send", "deliver", "persist", D("persist", "if_idle")),
    (DEAD_OWNER, "send", "deliver", "discard", D("discard", "if_idle")),
    (DEAD_OWNER, "queue", "deliver", "wake", D("wake", "if_idle", reclaim=True, leftovers=True)),
    # held by this agent's run: if_active decides
    (OURS, "send", "deliver", "wake", D("deliver", "if_active", waits=True)),
    (OURS, "send", "persist", "wake", D("echo", "if_active", waits=True)),
    (OURS, "send", "discard", "wake", D("discard", "if_active")),
    (OURS, "queue", "deliver", "wake", D("queue", "if_active", waits=True)),
    (OURS, "queue", "persist", "wake", D("echo", "if_active", waits=True)),
    (OURS, "queue", "discard", "wake", D("discard", "if_active")),
    # suspended on an approval, it still holds the thread: same-agent inputs wait for the resume
    (OURS_SUSPENDED, "send", "deliver", "wake", D("deliver", "if_active", waits=True)),
    (OURS_SUSPENDED, "send", "persist", "wake", D("echo", "if_active", waits=True)),
    (OURS_SUSPENDED, "send", "discard", "wake", D("discard", "if_active")),
    (OURS_SUSPENDED, "queue", "deliver", "wake", D("queue", "if_active", waits=True)),
    # held by another agent's run: idle for this agent (if_idle), accepted behind that run
    (THEIRS, "send", "deliver", "wake", D("queue", "if_idle", waits=True)),
    (THEIRS, "send", "deliver", "persist", D("echo", "if_idle", waits=True)),
    (THEIRS, "send", "deliver", "discard", D("discard", "if_idle")),
    (THEIRS, "queue", "deliver", "wake", D("queue", "if_idle", waits=True)),
    # ... unless that run is suspended: a wake is blocked
    (THEIRS_SUSPENDED, "send", "deliver", "wake", D("blocked", "if_idle", waits=True)),
    (THEIRS_SUSPENDED, "send", "deliver", "persist", D("echo", "if_idle", waits=True)),
    (THEIRS_SUSPENDED, "send", "deliver", "discard", D("discard", "if_idle")),
    (THEIRS_SUSPENDED, "queue", "deliver", "wake", D("blocked", "if_idle", waits=True)),
]


@pytest.mark.parametrize("lease, mode, active, idle, decision", ROWS)
def test_each_row_of_the_input_table(lease, mode, active, idle, decision):
    assert input_decide(lease, agent_id="bot", mode=mode, if_active={"behavior": active},
                        if_idle={"behavior": idle}) == decision


def test_the_branch_that_does_not_apply_changes_nothing():
    """The rows above list one behavior of the other branch; every other one decides the same."""
    for lease, mode, active, idle, decision in ROWS:
        for other in ("deliver", "persist", "discard") if decision.branch == "if_idle" else ("wake", "persist",
                                                                                                 "discard"):
            branches = {"if_active": {"behavior": other}, "if_idle": {"behavior": idle}} \
                if decision.branch == "if_idle" else {"if_active": {"behavior": active}, "if_idle": {"behavior": other}}
            assert input_decide(lease, agent_id="bot", mode=mode, **branches) == decision


def test_every_thread_state_mode_and_behavior_is_a_row():
    listed = {(lease, mode, active if d.branch == "if_active" else idle) for lease, mode, active, idle, d in ROWS}
    for lease, mode in itertools.product((NEVER_RAN, IDLE, DEAD_OWNER), ("send", "queue")):
        # queue_message's idle branch is always wake (inputs.input_branches)
        for idle in (("wake",) if mode == "queue" else ("wake", "persist", "discard")):
            assert (lease, mode, idle) in listed
    for lease, mode, behavior in itertools.product((OURS, THEIRS, THEIRS_SUSPENDED), ("send", "queue"),
                                                   ("deliver", "persist", "discard")):
        if lease is OURS:
            assert (lease, mode, behavior) in listed
        elif mode == "send":
            assert (lease, mode, {"deliver": "wake"}.get(behavior, behavior)) in listed


@pytest.mark.parametrize("action, reply", [("wake", "wake"), ("deliver", "deliver"), ("queue", "deliver"),
                                           ("echo", "persist"), ("persist", "persist"), ("discard", "discard"),
                                           ("blocked", "blocked")])
def test_what_a_send_answers_for_each_action(action, reply):
    assert D(action, "if_idle").reply == reply


# -- what runs after a run ends ------------------------------------------------------------------
NEXT = [
    # waiting inputs' kinds in acceptance order → (echoes, taken, own run id)
    ([], NextRun((), ())),
    (["echo"], NextRun((0,), ())),
    (["echo", "echo"], NextRun((0, 1), ())),
    (["deliver"], NextRun((), (0,))),
    (["deliver", "deliver"], NextRun((), (0, 1))),
    (["deliver", "queue", "deliver"], NextRun((), (0,))),  # deliver inputs up to the first queued one
    (["queue"], NextRun((), (0,), own_run_id=True)),
    (["queue", "queue"], NextRun((), (0,), own_run_id=True)),  # a queued input runs alone
    (["queue", "deliver"], NextRun((), (0,), own_run_id=True)),
    (["echo", "deliver", "echo", "deliver", "queue"], NextRun((0, 2), (1, 3))),  # echoes are never taken
    (["echo", "queue", "deliver"], NextRun((0,), (1,), own_run_id=True)),
]


@pytest.mark.parametrize("kinds, plan", NEXT)
def test_each_row_of_the_next_run_table(kinds, plan):
    assert next_run(kinds) == plan
