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
from agents.models import thread_id_of
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
            # the admin's list, newest first
            models.Index(fields=["-created_at"], name="notif_created"),
        ]

    def __str__(self) -> str:
        return f"{self.source}/{self.kind} {self.id} ({self.status})"

    def to_record(self) -> dict:
        """The runtime's record dict (snake_case keys, aware datetimes)."""
        record = {name: getattr(self, name) for name in RECORD_FIELDS}
        record["thread_id"] = thread_id_of(self.thread_id)  # the column holds the thread's key
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


class WebhookEndpoint(models.Model):
    """Where a GitHub or Slack webhook delivers (``/api/webhooks/<source>/<name>``): the secret that
    signs its requests and how its events become notifications (``inbox.webhooks``).

    ``thread_template`` names the thread a notification goes to; it may use ``{source}``,
    ``{repository}``, ``{branch}``, ``{number}``, ``{channel}`` and ``{user}`` (an empty string when
    the event has none). ``priority_rules`` maps a kind (``ci-status``, ``review-comment``,
    ``mention``, ``direct-message``) to the priority to use instead of the default. ``mention_name``
    (a GitHub login) turns a comment that contains ``@mention_name`` into a ``mention``."""

    class Source(models.TextChoices):
        GITHUB = "github", "GitHub"
        SLACK = "slack", "Slack"

    name = models.SlugField(max_length=100, unique=True, help_text="the last part of the webhook URL")
    source = models.CharField(max_length=16, choices=Source.choices)
    secret = models.CharField(max_length=255, help_text="GitHub webhook secret or Slack signing secret")
    agent_id = models.CharField(max_length=255, help_text="the agent whose thread gets the notifications")
    resource_id = models.CharField(max_length=255, help_text="the resource (user) that owns the threads")
    thread_template = models.CharField(max_length=255, default="{source}:{repository}{channel}")
    priority_rules = models.JSONField(default=dict, blank=True)
    mention_name = models.CharField(max_length=100, blank=True, default="")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.source}/{self.name}"

    def clean(self) -> None:
        """The rules and the template, checked (``inbox.webhooks.endpoints``): ValidationError per field."""
        from django.core.exceptions import ValidationError

        from .endpoint_rules import priority_rules_problem, thread_template_problem

        errors = {}
        problem = priority_rules_problem(self.priority_rules, self.source)
        if problem:
            errors["priority_rules"] = problem
        problem = thread_template_problem(self.thread_template)
        if problem:
            errors["thread_template"] = problem
        if errors:
            raise ValidationError(errors)


class WebhookDelivery(models.Model):
    """One delivery an endpoint received, by the sender's id (``X-GitHub-Delivery``, Slack's
    ``event_id``) and by the event's own identity in the signed body (``event_key``): a redelivery
    of the same id, or the same event under another id, stores nothing more."""

    class Outcome(models.TextChoices):
        RECEIVED = "received"  # claimed, being turned into a notification
        STORED = "stored"
        IGNORED = "ignored"

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    delivery_id = models.CharField(max_length=255)
    #: the event's identity read from the signed body (``inbox.webhooks.github.event_key``, Slack's
    #: ``event_id``); GitHub does not sign the delivery id
    event_key = models.CharField(max_length=255)
    event = models.CharField(max_length=100)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.RECEIVED)
    #: why an ignored delivery was ignored (``"push is not handled"``); a database default too, so
    #: that processes of the previous release can insert deliveries while the migration runs
    reason = models.CharField(max_length=500, blank=True, default="", db_default="")
    record_ids = models.JSONField(default=list, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-received_at"]
        verbose_name_plural = "webhook deliveries"
        constraints = [models.UniqueConstraint(fields=["endpoint", "delivery_id"], name="webhook_delivery_once"),
                       models.UniqueConstraint(fields=["endpoint", "event_key"], name="webhook_event_once")]

    def __str__(self) -> str:
        return f"{self.endpoint} {self.delivery_id} ({self.outcome})"


class WebhookRefusal(models.Model):
    """Requests a webhook URL refused or failed to store (``inbox.webhooks.refusals``), counted per
    minute: one row per sender, endpoint name, error code and minute, with how many requests it
    stands for and the last one's reason. A name that is no endpoint is not kept in the key (anyone
    may post to any name): all of a minute's requests to unknown endpoints of a sender share a row,
    whose reason names the last one. Rows beyond ``MASTRA_WEBHOOK_REFUSALS_MAX`` are deleted, oldest
    first, and the retention sweep removes them with the deliveries."""

    source = models.CharField(max_length=16)
    #: the endpoint's name; empty for requests to a name that is no enabled endpoint
    name = models.CharField(max_length=100, blank=True, default="")
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.SET_NULL, null=True, blank=True,
                                 related_name="refusals")
    code = models.CharField(max_length=64)
    status = models.PositiveSmallIntegerField()
    reason = models.CharField(max_length=500, blank=True, default="")
    #: the sender's delivery id of the last request counted here, as it was sent (unsigned)
    delivery_id = models.CharField(max_length=255, blank=True, default="")
    #: the start of the minute the row counts
    minute = models.DateTimeField()
    count = models.PositiveIntegerField(default=1)
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()

    class Meta:
        ordering = ["-last_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["source", "name", "code", "minute"],
                                               name="webhook_refusal_minute")]
        indexes = [models.Index(fields=["endpoint", "-last_at"], name="webhook_refusal_endpoint")]

    def __str__(self) -> str:
        return f"{self.source}/{self.name or '?'} {self.code} ×{self.count}"
