"""The thread decision table (DESIGN §4), written once: whether a run holds a thread, what happens to
an input when it is accepted, and which inputs the next run takes when a run ends.

Pure functions over plain values. Both thread stores (``agents.threads`` on the database and
:class:`~.memory_store.InMemoryThreadStore`) call them: the stores lock, load and persist; the
decisions are made here. ``tests/runtime/threads/test_decision.py`` lists every row of the table.

An input's decision (:func:`input_decide`), in the order the rules apply:

====================================  ==========================  ============================
the thread                             the branch's behavior      decision
====================================  ==========================  ============================
any                                    ``discard``                 ``discard``
held (by any run)                      ``persist``                 ``echo`` (the holder writes it)
held by another agent, suspended       ``wake``                    ``blocked``
held by another agent, running         ``wake``                    ``queue``
held by this agent                     ``deliver``, mode queue     ``queue``
held by this agent                     ``deliver``                 ``deliver``
idle                                   ``persist``                 ``persist`` (into the history)
idle                                   ``wake``                    ``wake``
====================================  ==========================  ============================

A thread held by another agent's run is idle for the sender, as in Mastra: its ``if_idle`` branch
applies. ``queue_message`` always wakes an idle thread (``inputs.input_branches`` sets that up).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence

#: Mastra's reason for a wake refused by a suspended run of another agent
THREAD_BLOCKED = "thread-blocked"

#: kinds of a waiting input (``agents.models.ThreadInput.Kind``)
DELIVER, QUEUE, ECHO = "deliver", "queue", "echo"
#: what the owner takes at its next step boundary: inputs for its run, and persisted ones to echo
STEP_KINDS = (DELIVER, ECHO)
#: what waits for a run (listed to clients, cancellable, recovered): not the echoes
WAITING_KINDS = (DELIVER, QUEUE)

Action = Literal["wake", "deliver", "queue", "echo", "persist", "discard", "blocked"]


def lease_held(*, owner_run_id: str | None, status: str, expires_at: Any, now: Any) -> bool:
    """Whether a lease holds its thread at ``now``: it names an owner run that is suspended (on a
    tool approval: no expiry) or running with an expiry after ``now`` (``expires_at`` and ``now``
    of one comparable type: datetimes, or seconds). An expired lease means its owner died."""
    if not owner_run_id:
        return False
    if status == "suspended":
        return True
    return expires_at is not None and expires_at > now


@dataclass(frozen=True)
class LeaseView:
    """What the table reads of a thread's lease: ``held`` (:func:`lease_held` now), the agent of its
    run, its status, whether it names an owner run, and whether the thread ever ran (``token`` > 0)."""

    held: bool
    agent_id: str = ""
    status: str = "idle"
    owner_run_id: str | None = None
    token: int = 0


@dataclass(frozen=True)
class InputDecision:
    """What happens to one input.

    ``action``: ``wake`` (take the lease, start a run with it), ``deliver`` (into the holder's run
    at its next step), ``queue`` (a run of its own once the holder's ends), ``echo`` (stored now;
    the holder writes it into the history in its run's order and echoes it), ``persist`` (into the
    history now, echoed by a short synthetic run), ``discard`` or ``blocked``. ``branch``: whose
    attributes the accepted signal takes (``if_active`` or ``if_idle``). ``waits``: the input waits
    for a run that holds the thread (the pending-inputs cap applies). ``reclaim`` (a wake): the
    lease names an owner whose lease expired: its inputs wait again and its run failed. ``leftovers``
    (a wake): deliver inputs waiting from a dead owner run first (a thread that never ran has none).
    """

    action: Action
    branch: Literal["if_active", "if_idle"]
    waits: bool = False
    reclaim: bool = False
    leftovers: bool = False

    @property
    def reply(self) -> str:
        """The action a send answers (``SendResult.action``): a queued input is ``deliver`` (with a
        run id of its own), an echo ``persist``."""
        return {"queue": "deliver", "echo": "persist"}.get(self.action, self.action)


def input_decide(lease: LeaseView, *, agent_id: str, mode: str, if_active: dict, if_idle: dict) -> InputDecision:
    """The table of the module docstring for an input of ``agent_id`` (``mode`` ``send`` or
    ``queue``) with its parsed branches (``{"behavior", ...}``)."""
    elsewhere = lease.held and bool(lease.agent_id) and lease.agent_id != agent_id
    active = lease.held and not elsewhere
    branch = "if_active" if active else "if_idle"
    behavior = (if_active if active else if_idle)["behavior"]
    if behavior == "discard":
        return InputDecision("discard", branch)
    if lease.held:
        if behavior == "persist":
            return InputDecision("echo", branch, waits=True)
        if elsewhere:
            if lease.status == "suspended":
                return InputDecision("blocked", branch, waits=True)
            return InputDecision("queue", branch, waits=True)
        return InputDecision("queue" if mode == "queue" else "deliver", branch, waits=True)
    if behavior == "persist":
        return InputDecision("persist", branch)
    return InputDecision("wake", branch, reclaim=bool(lease.owner_run_id), leftovers=lease.token > 0)


@dataclass(frozen=True)
class NextRun:
    """Which waiting inputs a run's end (or a recovery) acts on, by position in acceptance order.

    ``echoes``: inputs persisted during the ended run that it did not write: into the history now,
    echoed. ``taken``: the inputs the next run starts with (none: the thread goes idle): a queued
    input alone, under its own run id (``own_run_id``), or the deliver inputs up to the next queued
    one, under a new run id. The next run is of the first taken input's agent."""

    echoes: tuple[int, ...]
    taken: tuple[int, ...]
    own_run_id: bool = False


def next_run(kinds: Sequence[str]) -> NextRun:
    """The inputs the next run takes among waiting inputs of ``kinds`` (in acceptance order)."""
    echoes = tuple(i for i, kind in enumerate(kinds) if kind == ECHO)
    waiting = [i for i, kind in enumerate(kinds) if kind != ECHO]
    if not waiting:
        return NextRun(echoes, ())
    if kinds[waiting[0]] == QUEUE:
        return NextRun(echoes, (waiting[0],), own_run_id=True)
    taken = []
    for i in waiting:
        if kinds[i] == QUEUE:
            break
        taken.append(i)
    return NextRun(echoes, tuple(taken))


__all__ = ["DELIVER", "ECHO", "QUEUE", "STEP_KINDS", "THREAD_BLOCKED", "WAITING_KINDS", "InputDecision",
           "LeaseView", "NextRun", "input_decide", "lease_held", "next_run"]
