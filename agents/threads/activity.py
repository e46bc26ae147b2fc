"""Whether a thread is active: the one rule for "does a run hold this thread now".

A thread is active while its lease names an owner run and that run is either suspended (on a tool
approval: no expiry, the thread stays held) or running with an unexpired lease. An expired lease
means its owner died: the thread is idle and the next wake (or recovery) reclaims it. The rule is
the runtime's (``agents.runtime.threads.decision.lease_held``); every module of ``agents`` that asks
the question on a lease row asks it here.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from agents.models import ThreadLease
from agents.runtime.threads.decision import LeaseView, lease_held

from .identity import thread_ref


def lease_is_active(lease: ThreadLease, now: datetime) -> bool:
    """Whether ``lease`` (a row, locked or not) holds its thread at ``now`` (the runtime's
    ``decision.lease_held``)."""
    return lease_held(owner_run_id=lease.owner_run_id, status=lease.status, expires_at=lease.expires_at, now=now)


def lease_view(lease: ThreadLease, now: datetime) -> LeaseView:
    """What the decision table reads of a lease row at ``now``."""
    return LeaseView(held=lease_is_active(lease, now), agent_id=lease.agent_id, status=lease.status,
                     owner_run_id=lease.owner_run_id, token=lease.token)


def lease_state(lease: ThreadLease, now: datetime) -> dict:
    """``{"active_run_id", "status", "agent_id", "last_seq"}`` of a lease row (``status`` is
    ``idle`` when the thread is not active, whatever the row says)."""
    active = lease_is_active(lease, now)
    return {"active_run_id": lease.owner_run_id if active else None, "status": lease.status if active else "idle",
            "agent_id": lease.agent_id, "last_seq": lease.last_seq}


def thread_state_get(*, key: str) -> dict | None:
    """The thread's state (:func:`lease_state`), or None when no input ever reached it."""
    thread_ref(key)
    lease = ThreadLease.objects.select_row({"thread_id": key})
    return None if lease is None else lease_state(lease, timezone.now())


def thread_states_get(*, keys: set[str] | list[str], checked: bool = False) -> dict[str, dict | None]:
    """:func:`thread_state_get` for several threads in one query (read-only). ``checked``: the
    caller checked the keys already."""
    if not keys:
        return {}
    if not checked:
        for key in keys:
            thread_ref(key)
    now = timezone.now()
    leases = {lease.thread_id: lease for lease in ThreadLease.objects.filter(thread_id__in=sorted(keys))}
    return {key: (lease_state(leases[key], now) if key in leases else None) for key in keys}
