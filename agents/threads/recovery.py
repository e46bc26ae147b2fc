"""Recovery: threads whose owner died (expired lease) or that have waiting inputs and no owner.

The inputs a dead owner took but never saved wait again, ahead of later ones; its run is marked
failed (``retries.lease_reclaim``); the lease goes to a new run of this process.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Callable

from django.db import transaction
from django.utils import timezone

from agents.models import ThreadInput, ThreadLease
from agents.runtime.threads.decision import WAITING_KINDS
from agents.runtime.threads.store import RunLease

from .activity import lease_is_active
from .leases import lease_lock
from .retries import lease_reclaim
from .runs import run_next_start


def threads_recover(*, process_id: str, ttl_ms: int, new_run_id: Callable[[], str],
                    agent_ids: list[str] | None = None) -> list[RunLease]:
    """Take over threads whose owner's lease expired, or idle threads with waiting inputs.

    A pass stops taking threads once a third of ``ttl_ms`` has gone by (the next one, a third of a
    TTL later, takes the rest). Only threads of ``agent_ids`` (the agents this process can run;
    None: any) are taken, so that a process never holds a lease it cannot serve. Each returned lease
    carries the ``events`` written for inputs persisted during the dead run."""
    leases = ThreadLease.objects.filter(status=ThreadLease.Status.RUNNING, expires_at__lt=timezone.now())
    inputs = ThreadInput.objects.filter(status=ThreadInput.Status.PENDING, kind__in=WAITING_KINDS)
    if agent_ids is not None:
        leases = leases.filter(agent_id__in=agent_ids)
        inputs = inputs.filter(agent_id__in=agent_ids)
    expired = list(leases.values_list("thread_id", flat=True))  # thread keys
    waiting = list(inputs.values_list("thread_id", flat=True).distinct())
    started = []
    began = timezone.now()
    for key in dict.fromkeys(expired + waiting):
        if started and timezone.now() - began > timedelta(milliseconds=ttl_ms / 3):
            # the leases taken so far must reach their runs, which renew them a third of a TTL
            # after they start, before they expire: the next pass takes the rest
            break
        with transaction.atomic():
            lease = lease_lock(key)
            # read once the lease is locked: the takeovers before this one (and the wait for the
            # lock) took time, and a lease taken with an older time would expire that much sooner
            now = timezone.now()
            if lease is None or lease_is_active(lease, now):
                continue
            if lease.owner_run_id:
                lease_reclaim(lease, now)
            echoes: list[dict] = []
            nxt = run_next_start(lease, new_run_id=new_run_id(), process_id=process_id, ttl_ms=ttl_ms, now=now,
                                 events=echoes)
            if nxt is not None:
                started.append(dataclasses.replace(nxt, events=echoes))
    return started
