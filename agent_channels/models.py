"""Channel conversations on the database: which platform thread is which memory thread, the
platform events received (each once), the durable outbox of every platform write, and the approval
cards with their decisions.

Rows are written by this app's services only (``receive``, ``handoff``, ``relay``, ``outbox``,
``approvals``); the admin shows them read-only, with one action (retry a failed delivery).
"""

from __future__ import annotations

from django.db import models


class Platform(models.TextChoices):
    SLACK = "slack"
    GITHUB = "github"


class ChannelThread(models.Model):
    """One platform thread (a Slack thread, an issue or pull request) ↔ one memory thread.

    ``target`` says where answers go (Slack: ``team``, ``channel``, ``thread_ts``; GitHub:
    ``repository``, ``number``, ``installation``). ``relay_seq`` is the last event of the memory
    thread relayed to the platform; ``relay_open`` is set while something may still come to relay."""

    agent_id = models.CharField(max_length=255)
    platform = models.CharField(max_length=16, choices=Platform.choices)
    key = models.CharField(max_length=255)
    resource_id = models.CharField(max_length=255)
    thread_id = models.CharField(max_length=255)
    target = models.JSONField(default=dict)
    context_fetched = models.BooleanField(default=False)
    relay_seq = models.BigIntegerField(default=0)
    relay_open = models.BooleanField(default=False, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_activity_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-last_activity_at"]
        constraints = [models.UniqueConstraint(fields=["agent_id", "platform", "key"], name="channel_thread_key")]

    def __str__(self) -> str:
        return f"{self.platform} {self.key}"


class ChannelEvent(models.Model):
    """A platform event received for an agent, stored before the sender gets its 200.

    Unique on the platform's event id (Slack's ``event_id``, GitHub's ``X-GitHub-Delivery``) *and*
    on the platform message it carries (``message_key``: Slack's team, channel and ts; GitHub's
    comment), so a retry, a redelivery or the same message as both ``app_mention`` and ``message``
    is stored once, whichever process receives it. ``received`` events are handed to the thread
    runtime (``handoff``), claimed with ``claimed_until`` so that one process does it."""

    class Status(models.TextChoices):
        RECEIVED = "received"
        HANDED = "handed"
        IGNORED = "ignored"
        FAILED = "failed"

    agent_id = models.CharField(max_length=255)
    platform = models.CharField(max_length=16, choices=Platform.choices)
    event_id = models.CharField(max_length=255)
    message_key = models.CharField(max_length=255, null=True, blank=True)
    kind = models.CharField(max_length=32)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RECEIVED)
    payload = models.JSONField(default=dict)
    channel_thread = models.ForeignKey(ChannelThread, null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="events")
    run_id = models.CharField(max_length=64, blank=True, default="")
    attempts = models.PositiveSmallIntegerField(default=0)
    claimed_until = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    handed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["agent_id", "platform", "event_id"], name="channel_event_id"),
            models.UniqueConstraint(fields=["agent_id", "platform", "message_key"], name="channel_event_message"),
        ]
        indexes = [models.Index(fields=["status", "claimed_until"], name="channel_event_due")]

    def __str__(self) -> str:
        return f"{self.platform} {self.kind} {self.event_id} ({self.status})"


class ChannelRun(models.Model):
    """A run answering in a channel thread: who started it (the default approver), what triggered
    it (GitHub's comment, for the reaction), and the answer text relayed so far."""

    run_id = models.CharField(max_length=64, unique=True)
    channel_thread = models.ForeignKey(ChannelThread, on_delete=models.CASCADE, related_name="runs")
    requested_by = models.CharField(max_length=255, blank=True, default="")
    text = models.TextField(blank=True, default="")
    finished = models.BooleanField(default=False)
    finish_reason = models.CharField(max_length=32, blank=True, default="")
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"run {self.run_id}"


class OutboxMessage(models.Model):
    """One platform write, durable: written before it is sent, sent by the outbox worker.

    ``key`` is the idempotency key (``answer:<run>:<part>``, ``failed:<run>``, ``card:<approval>``,
    ``react:<event>``, ...): one row, hence one platform message, per key. An answer row is posted
    once (``platform_ref`` then holds Slack's ts or GitHub's comment id) and then edited in place as
    its ``body`` grows: each change bumps ``version``; ``sent_version`` is the last one the platform
    accepted. A row whose send may have reached the platform without being recorded (a crash, a
    timeout) is looked up on the platform by its key before it is posted again."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        FAILED = "failed"

    class Op(models.TextChoices):
        POST = "post"  # create once, then edit in place
        EPHEMERAL = "ephemeral"  # Slack: a message only one user sees
        REACT = "react"  # GitHub: 👀 on the triggering comment

    agent_id = models.CharField(max_length=255)
    platform = models.CharField(max_length=16, choices=Platform.choices)
    key = models.CharField(max_length=255)
    channel_thread = models.ForeignKey(ChannelThread, null=True, blank=True, on_delete=models.CASCADE,
                                       related_name="outbox")
    op = models.CharField(max_length=16, choices=Op.choices, default=Op.POST)
    target = models.JSONField(default=dict)
    body = models.TextField(blank=True, default="")
    blocks = models.JSONField(null=True, blank=True)
    version = models.PositiveIntegerField(default=1)
    sent_version = models.PositiveIntegerField(default=0)
    final = models.BooleanField(default=True)
    platform_ref = models.CharField(max_length=64, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    #: the pacing and rate-limit bucket (``slack:<team>``, ``github:<installation or owner>``)
    bucket = models.CharField(max_length=255)
    attempts = models.PositiveSmallIntegerField(default=0)
    calls = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    claimed_until = models.DateTimeField(null=True, blank=True)
    claim = models.CharField(max_length=32, blank=True, default="")
    last_error = models.TextField(blank=True, default="")
    last_sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["agent_id", "platform", "key"], name="outbox_key")]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="outbox_due")]

    def __str__(self) -> str:
        return f"{self.platform} {self.key} ({self.status})"


class OutboxBucket(models.Model):
    """A platform's rate-limit bucket: no write before ``blocked_until`` (a ``Retry-After``), and
    (GitHub) content-creating writes spaced by the pacing interval from ``last_write_at``."""

    key = models.CharField(max_length=255, primary_key=True)
    blocked_until = models.DateTimeField(null=True, blank=True)
    last_write_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.key


class RateLimitWait(models.Model):
    """A rate-limit answer of a platform (429 or GitHub's secondary limit) and the wait it asked."""

    platform = models.CharField(max_length=16, choices=Platform.choices)
    bucket = models.CharField(max_length=255)
    seconds = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]


class ChannelApproval(models.Model):
    """An approval card in a channel thread, bound to (run, tool call id, args hash)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        DECLINED = "declined"
        STALE = "stale"

    agent_id = models.CharField(max_length=255)
    platform = models.CharField(max_length=16, choices=Platform.choices)
    channel_thread = models.ForeignKey(ChannelThread, on_delete=models.CASCADE, related_name="approvals")
    run_id = models.CharField(max_length=64)
    tool_call_id = models.CharField(max_length=255)
    tool_name = models.CharField(max_length=255)
    args = models.JSONField(default=dict, blank=True)
    args_hash = models.CharField(max_length=64)
    requested_by = models.CharField(max_length=255, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    decided_by = models.CharField(max_length=255, blank=True, default="")
    decided_where = models.CharField(max_length=255, blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["run_id", "tool_call_id"], name="channel_approval_call")]

    def __str__(self) -> str:
        return f"{self.tool_name} in {self.run_id} ({self.status})"


class ChannelDecision(models.Model):
    """Every click on a card or ``/approve`` / ``/deny`` command, with who, where and what came of it."""

    class Outcome(models.TextChoices):
        ACCEPTED = "accepted"
        ALREADY_DECIDED = "already-decided"
        STALE = "stale"
        REFUSED = "refused"

    approval = models.ForeignKey(ChannelApproval, on_delete=models.CASCADE, related_name="decisions")
    user = models.CharField(max_length=255)
    where = models.CharField(max_length=255, blank=True, default="")
    decision = models.CharField(max_length=16)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.user} {self.decision}: {self.outcome}"
