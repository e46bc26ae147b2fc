"""A run whose end was never saved: the inputs it took wait again or are parked as failed.

Two paths lead here, both on the thread's locked lease: its owner died (the lease expired, and the
next wake or recovery reclaims it: :func:`lease_reclaim`), or the transaction writing its end failed
(``runs.run_fail``). An input that keeps failing is parked after :func:`input_max_attempts` runs.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db.models import F

from agents.models import Message, Run, ThreadInput, ThreadLease


def input_max_attempts() -> int:
    """``MASTRA_INPUT_MAX_ATTEMPTS``: runs an input may take without saving their end before it is
    parked as failed (default 3)."""
    return getattr(settings, "MASTRA_INPUT_MAX_ATTEMPTS", 3)


def inputs_retry_or_park(lease: ThreadLease, run_id: str, *, error: str) -> list[str]:
    """The inputs ``run_id`` took on the (locked) lease's thread and whose end was never saved:
    each counts one more attempt and waits again, ahead of later ones (ids keep their order), or is
    parked as ``failed`` once it reached :func:`input_max_attempts`. An input whose message is in
    the thread's history already (a run that saves per step wrote it) counts as answered: it stays
    consumed. Returns the ids of the inputs parked now."""
    consumed = list(ThreadInput.objects.filter(thread_id=lease.thread_id, consumed_by=run_id,
                                               status=ThreadInput.Status.CONSUMED).order_by("id"))
    if not consumed:
        return []
    saved = set(Message.objects.filter(thread_id=lease.thread_id, message_id__in=[
        i.input_id for i in consumed]).values_list("message_id", flat=True))
    limit = input_max_attempts()
    retry, park = [], []
    for row in consumed:
        if row.input_id in saved:
            continue
        (park if row.attempts + 1 >= limit else retry).append(row.pk)
    ThreadInput.objects.filter(pk__in=retry).update(status=ThreadInput.Status.PENDING, consumed_by=None,
                                                   consumed_at=None, attempts=F("attempts") + 1,
                                                   last_error=error[:2000])
    ThreadInput.objects.filter(pk__in=park).update(status=ThreadInput.Status.FAILED, attempts=F("attempts") + 1,
                                                  last_error=error[:2000])
    return [row.input_id for row in consumed if row.pk in park]


def lease_reclaim(lease: ThreadLease, now: datetime) -> None:
    """The lease's owner died (its lease expired; the row is locked): the inputs it took but never
    saved wait again (:func:`inputs_retry_or_park`); its run failed; the seqs it reserved are
    skipped (it may have handed them out)."""
    dead_run = lease.owner_run_id
    lease.last_seq = max(lease.last_seq, lease.reserved_seq)
    inputs_retry_or_park(lease, dead_run, error="the process running it stopped")
    Run.objects.filter(id=dead_run, status=Run.Status.RUNNING).update(
        status=Run.Status.FAILED, finish_reason="error", error="the process running it stopped",
        error_code="process_stopped", finished_at=now)
