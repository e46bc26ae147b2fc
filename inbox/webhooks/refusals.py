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
  removes them after ``MASTRA_RETAIN_WEBHOOK_DELIVERIES_DAYS``).

Recording costs one UPDATE of the minute's row per refused request (an INSERT, and the trim, for
the first of its minute); a failure to record is logged and never changes the sender's reply.
"""

from __future__ import annotations

import logging
from datetime import datetime

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


def webhook_refusal_record(*, source: str, name: str, endpoint: WebhookEndpoint | None, code: str, status: int,
                           reason: str, delivery_id: str = "", now: datetime | None = None) -> WebhookRefusal:
    """Count one refused request (see the module docstring) and return its minute's row.
    ``endpoint`` is None when ``name`` is no enabled endpoint of ``source`` (the row's name is then
    empty)."""
    now = now or timezone.now()
    minute = now.replace(second=0, microsecond=0)
    key = {"source": source, "name": name[:100] if endpoint is not None else "", "code": code[:64], "minute": minute}
    last = {"reason": clip(reason, MAX_REASON), "delivery_id": clip(delivery_id, 255), "last_at": now,
            "status": status, "endpoint": endpoint}
    rows = WebhookRefusal.objects.filter(**key)
    if rows.update(count=F("count") + 1, **last):
        return rows.get()
    try:
        with transaction.atomic():
            row = WebhookRefusal.objects.create(**key, **last, first_at=now)
    except IntegrityError:  # another process created the minute's row first
        rows.update(count=F("count") + 1, **last)
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


def webhook_refusal_note(**fields) -> None:
    """:func:`webhook_refusal_record`, logging instead of raising (the sender's reply is decided)."""
    try:
        webhook_refusal_record(**fields)
    except Exception:
        logger.exception("could not record a refused %s webhook request", fields.get("source"))


def webhook_refusal_note_by_name(*, source: str, name: str, **fields) -> None:
    """:func:`webhook_refusal_note` for a request refused before its endpoint was looked up (a body
    too large): the enabled endpoint ``name`` of ``source``, if there is one."""
    endpoint = WebhookEndpoint.objects.filter(source=source, name=name, enabled=True).first()
    webhook_refusal_note(source=source, name=name, endpoint=endpoint, **fields)


awebhook_refusal_note = async_twin(webhook_refusal_note)
awebhook_refusal_note_by_name = async_twin(webhook_refusal_note_by_name)

__all__ = ["awebhook_refusal_note", "awebhook_refusal_note_by_name", "webhook_refusal_note",
           "webhook_refusal_note_by_name", "webhook_refusal_record", "webhook_refusals_trim"]
