"""The notification inbox: one row per notification record (DESIGN §4).

Rows are written by ``inbox.services`` only. A row is *claimed* while a process emits signals for it
(``lock_token`` / ``locked_until``, compare-and-set); ``attempt_signal_id`` holds the id of the
signal being sent, written before the send, so that a dispatcher taking over an expired claim can
tell whether the thread accepted it (and then never sends it again).
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from agents.runtime.notifications import PRIORITY_RANK
from agents.sql import StatementManager


def new_record_id() -> str:
    return f"ntf_{uuid.uuid4().hex}"


class NotificationRecord(models.Model):
    class Priority(models.TextChoices):
        LOW = "low"
        MEDIUM = "medium"
        HIGH = "high"
        URGENT = "urgent"

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        SEEN = "seen"
        DISMISSED = "dismissed"
        ARCHIVED = "archived"
        DISCARDED = "discarded"
        FAILED = "failed"

    objects = StatementManager()

    id = models.CharField(primary_key=True, max_length=64, default=new_record_id, editable=False)
    agent_id = models.CharField(max_length=255)
    #: the owner of the record's thread (the thread row's ``resource_id``, checked when stored)
    resource_id = models.CharField(max_length=255)
    thread = models.ForeignKey("agents.Thread", on_delete=models.CASCADE, related_name="notifications")
    source = models.CharField(max_length=100)
    source_id = models.CharField(max_length=255, null=True, blank=True)
    kind = models.CharField(max_length=100)
    priority = models.CharField(max_length=8, choices=Priority.choices, default=Priority.MEDIUM)
    #: ``priority`` as a number (low 0 … urgent 3) so that the dispatcher can order by it
    priority_rank = models.PositiveSmallIntegerField(default=PRIORITY_RANK["medium"])
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    summary = models.TextField()
    payload = models.JSONField(null=True, blank=True)
    dedupe_key = models.CharField(max_length=255, null=True, blank=True)
    coalesce_key = models.CharField(max_length=255, null=True, blank=True)
    coalesced_count = models.PositiveIntegerField(default=1)
    attributes = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    deliver_at = models.DateTimeField(null=True, blank=True)
    summary_at = models.DateTimeField(null=True, blank=True)
    #: the full delivery waits for an idle thread (high priority summarised while active, ``defer``)
    deliver_when_idle = models.BooleanField(default=False)
    #: when the dispatcher looks at the row next: the earlier of deliver_at and summary_at, pushed
    #: back while waiting for an idle thread or after a failure; NULL when nothing is scheduled
    next_due_at = models.DateTimeField(null=True, blank=True)
    delivery_reason = models.CharField(max_length=255, blank=True, default="")
    delivery_attempts = models.PositiveIntegerField(default=0)
    last_delivery_error = models.TextField(blank=True, default="")
    last_delivery_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_signal_id = models.CharField(max_length=64, null=True, blank=True)
    summary_signal_id = models.CharField(max_length=64, null=True, blank=True)
    attempt_signal_id = models.CharField(max_length=64, null=True, blank=True)
    attempt_kind = models.CharField(max_length=16, blank=True, default="")
    lock_token = models.CharField(max_length=64, blank=True, default="")
    locked_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    seen_at = models.DateTimeField(null=True, blank=True)
    dismissed_at = models.DateTimeField(null=True, blank=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    discarded_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # due records, highest priority first (the dispatcher's claim query)
            models.Index(fields=["-priority_rank", "next_due_at"], condition=Q(status="pending"),
                         name="notif_due"),
            # pending records of a thread by source and kind (coalescing, summaries)
            models.Index(fields=["resource_id", "thread", "source", "kind"], condition=Q(status="pending"),
                         name="notif_pending_thread"),
            # a thread's inbox by status (the inbox tool, the admin)
            models.Index(fields=["resource_id", "thread", "status", "-created_at"], name="notif_thread_status"),
        ]

    def __str__(self) -> str:
        return f"{self.source}/{self.kind} {self.id} ({self.status})"

    def to_record(self) -> dict:
        """The runtime's record dict (snake_case keys, aware datetimes)."""
        record = {name: getattr(self, name) for name in RECORD_FIELDS}
        record["status"], record["priority"] = str(self.status), str(self.priority)  # plain str, not the enum
        return record


RECORD_FIELDS = (
    "id", "agent_id", "resource_id", "thread_id", "source", "source_id", "kind", "priority", "status", "summary",
    "payload", "dedupe_key", "coalesce_key", "coalesced_count", "attributes", "metadata", "deliver_at",
    "summary_at", "deliver_when_idle", "next_due_at", "delivery_reason", "delivery_attempts",
    "last_delivery_error", "last_delivery_attempt_at", "delivered_signal_id", "summary_signal_id",
    "attempt_signal_id", "attempt_kind", "created_at", "updated_at", "seen_at", "dismissed_at", "archived_at",
    "discarded_at", "delivered_at",
)
