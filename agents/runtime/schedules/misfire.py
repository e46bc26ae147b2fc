"""Which due fires of a schedule run, and which are recorded as skipped (the misfire policy).

When a scheduler claims a schedule at ``now``, every fire time from its ``next_fire_at`` up to
``now`` is due. A fire less than ``grace`` late is on time and runs. The others were missed while no
scheduler ran; the schedule's policy decides:

- ``skip``: none of them runs;
- ``once`` (the default, Mastra's behaviour): the latest of them runs, unless an on-time fire runs;
- ``all``: the latest ``cap`` of them run, oldest first.

Every fire that does not run is recorded as a ``skipped`` trigger with the reason, so nothing is
dropped silently. A backlog longer than :data:`ROWS_MAX` keeps a row for each of its latest fires and
one row for the older ones (their count and range in ``metadata``); a claim looks at most
:data:`ENUMERATE_MAX` fire times, and the next claim goes on from there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .cron import fire_times

#: fire times one claim looks at (the rest of a longer backlog is for the next claim)
ENUMERATE_MAX = 100_000
#: skipped fires of one claim recorded one row each (older ones share one row)
ROWS_MAX = 1000


@dataclass(frozen=True)
class PlannedFire:
    """A due fire: ``run`` or ``skip`` (``reason`` says why; ``metadata`` for a row standing for
    several missed fires)."""

    at: datetime
    action: str
    reason: str | None = None
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class FirePlan:
    fires: list[PlannedFire]
    next_fire_at: datetime | None  # None: the expression has no more fire times


def _iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def plan_due_fires(*, cron: str, timezone: str | None, next_fire_at: datetime, now: datetime, policy: str,
                   cap: int, grace: timedelta) -> FirePlan:
    """The due fires of a schedule whose next fire time is ``next_fire_at`` (<= ``now``), in
    increasing time, and its next fire time after them."""
    due: list[datetime] = [next_fire_at]
    following = None
    for instant in fire_times(cron, timezone, next_fire_at):
        if instant > now or len(due) >= ENUMERATE_MAX:
            following = instant
            break
        due.append(instant)
    complete = following is None or following > now  # False: more due fires wait for the next claim
    late_before = now - grace
    late = [t for t in due if t < late_before]
    on_time = due[len(late):]
    run_late: set[datetime] = set()
    if complete and policy == "once" and not on_time and late:
        run_late = {late[-1]}
    elif complete and policy == "all":
        run_late = set(late[-cap:])
    reason_by_policy = {
        "skip": "misfire policy skip: missed fires do not run",
        "once": "misfire policy once: only the latest missed fire runs" if not on_time
        else "misfire policy once: an on-time fire ran instead",
        "all": f"misfire policy all: only the latest {cap} missed fires run",
    }
    why = reason_by_policy[policy] if complete else \
        f"misfire policy {policy}: a later fire of the same backlog is the one that may run"
    fires: list[PlannedFire] = []
    skipped = [t for t in late if t not in run_late]
    if len(skipped) > ROWS_MAX:
        older, skipped = skipped[:-ROWS_MAX], skipped[-ROWS_MAX:]
        fires.append(PlannedFire(older[0], "skip",
                                 f"missed while no scheduler ran ({len(older)} fires from {_iso(older[0])} to "
                                 f"{_iso(older[-1])}, recorded in this one row); {why}",
                                 {"missedFires": len(older), "firstMissedAt": _iso(older[0]),
                                  "lastMissedAt": _iso(older[-1])}))
    skipped_set = set(skipped)
    for t in due:
        if t in skipped_set:
            fires.append(PlannedFire(t, "skip", f"missed while no scheduler ran (due {_iso(t)}, claimed "
                                                f"{_iso(now)}); {why}"))
        elif t in run_late or t in on_time:
            fires.append(PlannedFire(t, "run"))
    return FirePlan(fires=fires, next_fire_at=following)
