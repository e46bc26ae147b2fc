"""Deliveries of a webhook endpoint: find the endpoint, claim a delivery id and an event once, and send the
event's notification to the endpoint's agent (``send_notification_signal``, which creates the
thread through the thread store and stores the record)."""

from __future__ import annotations

import hashlib
import logging

from django.db import IntegrityError, transaction

from agents.registry import get_mastra
from agents.runtime.ids import MAX_THREAD_ID
from agents.runtime.tracing import if_idle_with_channel

from ..models import WebhookDelivery, WebhookEndpoint
from .events import WebhookEvent

logger = logging.getLogger(__name__)

THREAD_FIELDS = ("repository", "branch", "number", "channel", "user")


def webhook_endpoint_get(*, source: str, name: str) -> WebhookEndpoint | None:
    """The enabled endpoint ``name`` of ``source``, or None."""
    return WebhookEndpoint.objects.filter(source=source, name=name, enabled=True).first()


def column_key(value: str, limit: int = 255) -> str:
    """``value`` as it fits a key column: itself, or past ``limit`` characters its SHA-256 (a
    truncation would make two long keys with the same start one key)."""
    if len(value) <= limit:
        return value
    return "sha256:" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def webhook_delivery_claim(*, endpoint: WebhookEndpoint, delivery_id: str, event_key: str, event: str,
                           outcome: str = WebhookDelivery.Outcome.RECEIVED, reason: str = "") -> bool:
    """Record the delivery (with its ``outcome`` and ``reason`` when they are known already: an
    ignored event); False when this delivery id or this event (``event_key``, read from the
    signed body) was received before: a redelivery, a retry, or a replay of a captured body under
    another delivery id or event name. The unique constraints decide, so two processes receiving
    the same event at once claim it once."""
    try:
        with transaction.atomic():
            WebhookDelivery.objects.create(endpoint=endpoint, delivery_id=column_key(delivery_id),
                                           event_key=column_key(event_key),
                                           event=event[:100], outcome=outcome, reason=reason[:500])
    except IntegrityError:
        return False
    return True


def webhook_delivery_finish(*, endpoint: WebhookEndpoint, delivery_id: str, outcome: str,
                            record_ids: list[str] | None = None) -> None:
    WebhookDelivery.objects.filter(endpoint=endpoint, delivery_id=column_key(delivery_id)).update(
        outcome=outcome, record_ids=record_ids or [])


def webhook_delivery_release(*, endpoint: WebhookEndpoint, delivery_id: str) -> None:
    """Forget a claimed delivery whose notification could not be stored: a redelivery may try again."""
    WebhookDelivery.objects.filter(endpoint=endpoint, delivery_id=column_key(delivery_id),
                                   outcome=WebhookDelivery.Outcome.RECEIVED).delete()


def webhook_thread(endpoint: WebhookEndpoint, event: WebhookEvent) -> str:
    """The thread id of the endpoint's template for ``event`` (missing fields are empty)."""
    fields = {name: "" for name in THREAD_FIELDS}
    fields.update({k: str(v) for k, v in event.fields.items() if k in fields})
    thread_id = endpoint.thread_template.format(source=endpoint.source, **fields)
    return "".join(ch for ch in thread_id if ch.isprintable())[:MAX_THREAD_ID] or endpoint.source


async def webhook_notify(endpoint: WebhookEndpoint, event: WebhookEvent) -> dict:
    """Send ``event``'s notification to the endpoint's agent; ``{recordId, threadId, decision}``."""
    notification = dict(event.notification)
    notification["priority"] = (endpoint.priority_rules or {}).get(notification["kind"], event.default_priority)
    thread_id = webhook_thread(endpoint, event)
    agent = get_mastra().get_agent(endpoint.agent_id)
    result = await agent.send_notification_signal(notification, resource_id=endpoint.resource_id,
                                                  thread_id=thread_id,
                                                  if_idle=if_idle_with_channel(None, "webhook"))
    return {"recordId": result.record["id"], "threadId": thread_id, "decision": result.decision.to_dict()}
