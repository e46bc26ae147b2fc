"""A schedule and its fires (DESIGN §4's scheduler, docs/schedules.md).

Rows are written by ``schedules.services`` only. A fire is *claimed* by inserting its
:class:`ScheduleTrigger` row, unique per (schedule, scheduled fire time) for cron fires, in the same
transaction that moves the schedule's ``next_fire_at`` past it with a compare-and-set: however many
schedulers race, one row exists per fire time, and a fire runs only after its row moved from
``claimed`` to ``running`` (compare-and-set again), so it runs once.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from agents.runtime.schedules import FINAL_OUTCOMES, MISFIRE_POLICIES


class Schedule(models.Model):
    class Kind(models.TextChoices):
        AGENT = "agent"
        WORKFLOW = "workflow"

    class Status(models.TextChoices):
        ACTIVE = "active"
        PAUSED = "paused"

    id = models.CharField(primary_key=True, max_length=255)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.AGENT)
    agent_id = models.CharField(max_length=255, blank=True, default="", db_index=True)
    workflow_id = models.CharField(max_length=255, blank=True, default="")
    name = models.CharField(max_length=255, null=True, blank=True)
    prompt = models.TextField(blank=True, default="")
    thread_id = models.CharField(max_length=255, blank=True, default="")
    resource_id = models.CharField(max_length=255, blank=True, default="", db_index=True)
    cron = models.CharField(max_length=255)
    timezone = models.CharField(max_length=64, blank=True, default="", help_text="IANA zone; empty: UTC")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.ACTIVE)
    next_fire_at = models.DateTimeField()
    last_fire_at = models.DateTimeField(null=True, blank=True)
    last_run_id = models.CharField(max_length=255, blank=True, default="")
    last_outcome = models.CharField(max_length=16, blank=True, default="")
    signal_type = models.CharField(max_length=16, blank=True, default="")
    tag_name = models.CharField(max_length=255, blank=True, default="")
    attributes = models.JSONField(null=True, blank=True)
    provider_options = models.JSONField(null=True, blank=True)
    if_active = models.JSONField(null=True, blank=True)
    if_idle = models.JSONField(null=True, blank=True)
    input_data = models.JSONField(null=True, blank=True)
    initial_state = models.JSONField(null=True, blank=True)
    request_context = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(null=True, blank=True)
    misfire_policy = models.CharField(max_length=8, choices=[(p, p) for p in MISFIRE_POLICIES], default="once")
    misfire_cap = models.PositiveIntegerField(default=10)
    #: who created it over HTTP or in the admin (None: from code); sees a threadless schedule
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["status", "next_fire_at"], name="schedule_due")]

    def __str__(self) -> str:
        return self.id


class ScheduleTrigger(models.Model):
    class Outcome(models.TextChoices):
        CLAIMED = "claimed"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        DELIVERED = "delivered"
        PERSISTED = "persisted"
        DISCARDED = "discarded"
        SKIPPED = "skipped"
        ABORTED = "aborted"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="triggers")
    claim_id = models.CharField(max_length=320)
    trigger_kind = models.CharField(max_length=16, default="schedule-fire")
    scheduled_fire_at = models.DateTimeField()
    actual_fire_at = models.DateTimeField()
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.CLAIMED)
    run_id = models.CharField(max_length=255, blank=True, default="")
    error = models.TextField(blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    #: the runner holding a ``running`` fire, and until when (renewed while it runs): past it, the
    #: fire is failed by the sweep, never run again
    runner = models.CharField(max_length=64, blank=True, default="")
    lease_until = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-actual_fire_at", "-scheduled_fire_at"]
        constraints = [
            models.UniqueConstraint(fields=["schedule", "scheduled_fire_at"], condition=Q(trigger_kind="schedule-fire"),
                                    name="one_trigger_per_fire"),
        ]
        indexes = [
            models.Index(fields=["schedule", "-actual_fire_at"], name="trigger_history"),
            models.Index(fields=["outcome", "lease_until"], name="trigger_in_flight",
                         condition=Q(outcome__in=["claimed", "running"])),
        ]

    @property
    def finished(self) -> bool:
        return self.outcome in FINAL_OUTCOMES

    def __str__(self) -> str:
        return f"{self.schedule_id} @ {self.scheduled_fire_at:%Y-%m-%d %H:%M:%S}"
