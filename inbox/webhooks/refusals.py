"""Requests a webhook URL refused (a bad signature 401, an unknown endpoint 404, a bad payload 400,
...) or could not store (the agent's notification failed): kept so that the operator sees why a
sender's deliveries do not arrive, within a bound an attacker cannot push.

Anyone may post to a webhook URL, so a flood of bad requests must not become a flood of rows:

- requests are counted, not stored one by one: one :class:`~inbox.models.WebhookRefusal` row per
  sender, endpoint name, error code and minute holds how many there were and the last one's
  reason and delivery id;
- a name that is no endpoint is not part of the key (it is the caller's choice): a minute's
  requests to unknown endpoints of a sender share one row per code, the reason naming the last;
- at most ``MASTRA_WEBHOOK_REFUSALS_MAX`` rows are kept: a new row deletes the oldest beyond it
  (so the rows stay bounded even when the flood goes on for days; the retention sweep also
  removes them after ``MASTRA_RETAIN_WEBHOOK_DELIVERIES_DAYS``);
- the writes are paced (:class:`RefusalBatcher`): a process writes a row at most once per
  ``MASTRA_WEBHOOK_REFUSAL_WRITE_MS`` (1000); the refusals in between are counted in memory and
  added by the next write of that process (the first refusal of a row is written at once). A flood
  costs each process one UPDATE per row per second, not one per request; what a process holds when
  it stops (at most that last second) is not counted.

A failure to record is logged and never changes the sender's reply.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from datetime import datetime
from typing import Callable

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from agents.connections import async_twin

from ..models import WebhookEndpoint, WebhookRefusal

logger = logging.getLogger(__name__)

MAX_REASON = 500


def clip(text: str, limit: int) -> str:
    text = "".join(ch for ch in str(text or "") if ch.isprintable())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def refusal_key(*, source: str, name: str, endpoint: WebhookEndpoint | None, code: str, now: datetime) -> dict:
    """The row a refusal is counted on (see the module docstring)."""
    return {"source": source, "name": name[:100] if endpoint is not None else "", "code": code[:64],
            "minute": now.replace(second=0, microsecond=0)}


def webhook_refusal_record(*, source: str, name: str, endpoint: WebhookEndpoint | None, code: str, status: int,
                           reason: str, delivery_id: str = "", now: datetime | None = None,
                           count: int = 1) -> WebhookRefusal:
    """Count ``count`` refused requests on their minute's row (the last one's ``reason`` and
    ``delivery_id``) and return the row. ``endpoint`` is None when ``name`` is no enabled endpoint
    of ``source`` (the row's name is then empty)."""
    now = now or timezone.now()
    key = refusal_key(source=source, name=name, endpoint=endpoint, code=code, now=now)
    last = {"reason": clip(reason, MAX_REASON), "delivery_id": clip(delivery_id, 255), "last_at": now,
            "status": status, "endpoint": endpoint}
    rows = WebhookRefusal.objects.filter(**key)
    if rows.update(count=F("count") + count, **last):
        return rows.get()
    try:
        with transaction.atomic():
            row = WebhookRefusal.objects.create(**key, **last, first_at=now, count=count)
    except IntegrityError:  # another process created the minute's row first
        rows.update(count=F("count") + count, **last)
        return rows.get()
    webhook_refusals_trim(keep=settings.MASTRA_WEBHOOK_REFUSALS_MAX)
    return row


def webhook_refusals_trim(*, keep: int) -> int:
    """Delete the rows beyond the newest ``keep``; how many were deleted."""
    beyond = list(WebhookRefusal.objects.order_by("-id").values_list("id", flat=True)[keep:keep + 1])
    if not beyond:
        return 0
    deleted, _ = WebhookRefusal.objects.filter(id__lte=beyond[0]).delete()
    return deleted


class RefusalBatcher:
    """This process's pacing of refusal writes: :meth:`take` says which rows to write now and with
    how many requests each. A row (its key) is written at once when this process has not written it
    within ``interval_ms`` (``MASTRA_WEBHOOK_REFUSAL_WRITE_MS`` when None); otherwise the refusal is
    held, and the held requests of every row that is due go with the next write. Keys are dropped
    two minutes after their last write (a row counts one minute), so memory stays bounded."""

    def __init__(self, *, interval_ms: int | None = None, clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime] = timezone.now):
        self.interval_ms = interval_ms
        self.clock = clock
        #: the wall clock that stamps a refusal (and so picks its minute's row)
        self.now = now
        self.held: dict[tuple, tuple[int, dict]] = {}
        self.written_at: dict[tuple, float] = {}
        self.lock = threading.Lock()

    def interval_s(self) -> float:
        ms = self.interval_ms if self.interval_ms is not None else settings.MASTRA_WEBHOOK_REFUSAL_WRITE_MS
        return ms / 1000.0

    def take(self, fields: dict) -> list[tuple[dict, int]]:
        """Add one refusal (the keyword arguments of :func:`webhook_refusal_record`, ``now`` set);
        return ``[(fields of the last refusal of a row, requests to add)]`` to write now."""
        key = tuple(refusal_key(**{k: fields[k] for k in ("source", "name", "endpoint", "code", "now")}).values())
        with self.lock:
            now = self.clock()
            count, _ = self.held.get(key, (0, None))
            self.held[key] = (count + 1, fields)
            due = [k for k in self.held if now - self.written_at.get(k, -math.inf) >= self.interval_s()]
            out = []
            for k in due:
                out.append(tuple(reversed(self.held.pop(k))))
                self.written_at[k] = now
            for k, at in list(self.written_at.items()):
                if now - at > 120 and k not in self.held:
                    del self.written_at[k]
            return out

    def reset(self) -> None:
        with self.lock:
            self.held.clear()
            self.written_at.clear()


#: this process's pacing of refusal writes
refusal_batcher = RefusalBatcher()


def webhook_refusal_note(**fields) -> None:
    """Count one refused request through :data:`refusal_batcher`; logs instead of raising (the
    sender's reply is decided)."""
    fields.setdefault("now", refusal_batcher.now())
    try:
        for last, count in refusal_batcher.take(fields):
            webhook_refusal_record(**last, count=count)
    except Exception:
        logger.exception("could not record a refused %s webhook request", fields.get("source"))


def webhook_refusal_note_by_name(*, source: str, name: str, **fields) -> None:
    """:func:`webhook_refusal_note` for a request refused before its endpoint was looked up (a body
    too large): the enabled endpoint ``name`` of ``source``, if there is one."""
    endpoint = WebhookEndpoint.objects.filter(source=source, name=name, enabled=True).first()
    webhook_refusal_note(source=source, name=name, endpoint=endpoint, **fields)


awebhook_refusal_note = async_twin(webhook_refusal_note)
awebhook_refusal_note_by_name = async_twin(webhook_refusal_note_by_name)

__all__ = ["RefusalBatcher", "awebhook_refusal_note", "awebhook_refusal_note_by_name", "refusal_batcher",
           "refusal_key", "webhook_refusal_note",
           "webhook_refusal_note_by_name", "webhook_refusal_record", "webhook_refusals_trim"]
