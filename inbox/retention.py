"""The inbox's retention policies (``agents.retention``, docs/operations.md):

- ``notifications``: records no longer pending, by their last change (a pending record is kept
  whatever its age: it still waits for its delivery);
- ``webhook_deliveries``: deliveries by their arrival, but those still being turned into
  notifications (``received``). A delivery swept is no longer a redelivery guard: the sender's
  redelivery of an event older than the setting is stored again. Refused requests
  (``WebhookRefusal``, counted per minute) go with them, by their last request.
"""

from __future__ import annotations

from django.db.models import Q

from agents.retention import RetentionPolicy

from .models import NotificationRecord, WebhookDelivery, WebhookRefusal

NOTIFICATIONS = RetentionPolicy("notifications", NotificationRecord, "updated_at",
                                keep=lambda: Q(status=NotificationRecord.Status.PENDING))
WEBHOOK_DELIVERIES = RetentionPolicy("webhook_deliveries", WebhookDelivery, "received_at",
                                     keep=lambda: Q(outcome=WebhookDelivery.Outcome.RECEIVED), by_pk=True)

WEBHOOK_REFUSALS = RetentionPolicy("webhook_deliveries", WebhookRefusal, "last_at")

POLICIES = (NOTIFICATIONS, WEBHOOK_DELIVERIES, WEBHOOK_REFUSALS)
