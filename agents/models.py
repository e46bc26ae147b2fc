"""Threads, messages, runs and pending tool approvals.

The runtime reaches these only through ``agents.store`` (its storage protocols).
"""

from __future__ import annotations

from django.db import models

from agents.runtime.stored_messages import to_model_messages
from agents.runtime.threads.store import thread_key
from agents.sql import StatementManager


class Thread(models.Model):
    """A memory thread: one conversation owned by one resource (a user, a team...).

    A thread is identified by the pair (resource id, thread id), as Mastra's memory scopes threads by
    resource: two resources may each have a thread ``t1``, and one resource's id says nothing about
    another's. The row's primary key is that pair as one string, the runtime's thread key
    (:func:`thread_key`: resource id, ``\\x1f``, thread id; ids never hold control characters).
    The foreign keys of messages, runs, leases, inputs, events and notification records hold that key
    (their ``thread_id`` attribute is the key, not the thread id a caller names).
    """

    key = models.CharField(primary_key=True, max_length=511)
    #: no index of its own: the unique (resource_id, thread_id) and the (resource_id, -updated_at)
    #: index both begin with it
    resource_id = models.CharField(max_length=255)
    #: the id callers name (unique within the resource)
    thread_id = models.CharField(max_length=255)
    title = models.CharField(max_length=255, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    #: False while the row only holds inputs persisted (``ifIdle: persist``) before anyone created
    #: the thread: Mastra has no thread then, so memory and the API do not show it; the first run
    #: on it (or a create) makes it a thread, its history starting with those inputs
    saved = models.BooleanField(default=True)

    objects = StatementManager()

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["resource_id", "-updated_at"]),
                   models.Index(fields=["-updated_at"], name="thread_updated")]  # the admin's list
        constraints = [models.UniqueConstraint(fields=["resource_id", "thread_id"], name="thread_unique_in_resource")]

    def __str__(self) -> str:
        return self.title or self.thread_id

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.key and self.thread_id:  # a new row: its key follows from its two ids
            self.key = thread_key(self.resource_id, self.thread_id)

    def to_dict(self) -> dict:
        return {"id": self.thread_id, "resourceId": self.resource_id, "title": self.title, "metadata": self.metadata,
                "createdAt": self.created_at.isoformat(), "updatedAt": self.updated_at.isoformat()}


def thread_id_of(key: str) -> str:
    """The thread id a caller names, from a thread key (a row's ``thread_id`` foreign key value)."""
    return key.split("\x1f", 1)[1]


class Message(models.Model):
    """A stored message in Mastra's format (``agents.runtime.stored_messages``): ``role`` is
    ``user``, ``assistant``, ``system`` or ``signal``, ``content`` is ``{"format": 2, "parts", ...}``
    and, for a signal, ``type`` is its tag. ``id`` orders a thread.

    ``metadata`` is the row's own bookkeeping, never served: ``attributeOrder`` keeps the order of a
    signal's attributes, which the XML the model sees follows and PostgreSQL's ``jsonb`` does not
    keep."""

    #: unique within its thread (a caller may choose a signal's id: another thread's ids say nothing)
    message_id = models.CharField(max_length=64)
    #: no index of its own: the (thread, id) index and the unique (thread, message_id) begin with it
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="messages", db_index=False)
    resource_id = models.CharField(max_length=255)
    role = models.CharField(max_length=16)
    type = models.CharField(max_length=32, blank=True, default="")
    content = models.JSONField()
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    objects = StatementManager()

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["thread", "id"])]
        constraints = [models.UniqueConstraint(fields=["thread", "message_id"], name="message_unique_in_thread")]

    def __str__(self) -> str:
        return f"{self.role} {self.message_id}"

    def to_dict(self) -> dict:
        """The message as Mastra serves it (``MastraDBMessage``)."""
        return message_dict(self.message_id, self.role, self.type, self.content, self.metadata, self.created_at,
                            self.thread_id, self.resource_id)

    def seen_by_model(self):
        """The content the model is shown of this message (a signal's XML, rendered from its
        stored contents and attributes: ``agents.runtime.stored_messages.to_model_messages``)."""
        return to_model_messages([self.to_dict()])[0]["content"]


#: the fields :func:`message_dict` takes, in its order (``Message.objects.select_values(MESSAGE_FIELDS, ...)``)
MESSAGE_FIELDS = ("message_id", "role", "type", "content", "metadata", "created_at", "thread", "resource_id")


def message_dict(message_id: str, role: str, type: str, content, metadata: dict, created_at, thread_key: str,
                 resource_id: str) -> dict:
    """A message row as Mastra serves it (``MastraDBMessage``), from its values: ``Message.to_dict``,
    and a read of rows that makes no instance."""
    data = {"id": message_id, "role": role, "content": message_content_ordered(content, metadata),
            "createdAt": created_at.isoformat(), "threadId": thread_id_of(thread_key), "resourceId": resource_id}
    if type:
        data["type"] = type
    return data


def message_bookkeeping(message: dict) -> dict:
    """The ``metadata`` column of a stored message's row: the order of its signal's attributes."""
    content = message.get("content")
    if not isinstance(content, dict):
        return {}
    attributes = ((content.get("metadata") or {}).get("signal") or {}).get("attributes")
    if isinstance(attributes, dict) and len(attributes) > 1:
        return {"attributeOrder": list(attributes)}
    return {}


def message_content_ordered(content, bookkeeping: dict | None):
    """``content`` with its signal's attributes back in their order (``attributeOrder``)."""
    order = (bookkeeping or {}).get("attributeOrder")
    if not order or not isinstance(content, dict):
        return content
    signal = (content.get("metadata") or {}).get("signal")
    attributes = signal.get("attributes") if isinstance(signal, dict) else None
    if not isinstance(attributes, dict):
        return content
    ranked = {name: attributes[name] for name in order if name in attributes}
    ranked.update((name, value) for name, value in attributes.items() if name not in ranked)
    signal["attributes"] = ranked
    return content


class Run(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        COMPLETED = "completed"
        SUSPENDED = "suspended"
        FAILED = "failed"
        ABORTED = "aborted"

    id = models.CharField(primary_key=True, max_length=64)
    agent_id = models.CharField(max_length=255, db_index=True)
    #: the resource the run belongs to (its thread's, or the caller's for a run without memory; empty
    #: for a run started from Python without either): only it (and staff) may act on the run
    resource_id = models.CharField(max_length=255, blank=True, default="", db_index=True)
    #: the memory thread the run answered in (None for a run without memory)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, null=True, blank=True, related_name="runs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    finish_reason = models.CharField(max_length=32, blank=True, default="")
    usage = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    #: the stable code of the error a failed run ended with (``model_unavailable``, ``provider_http_error``, ...)
    error_code = models.CharField(max_length=64, blank=True, default="")
    steps = models.PositiveIntegerField(default=0)
    #: the model that answered each step, ``provider/model_id`` (a fallback chain may change it)
    step_models = models.JSONField(default=list, blank=True)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = StatementManager()

    class Meta:
        ordering = ["-started_at"]
        # the admin's list and its date filter, the dashboard's recent failures and usage, per status
        indexes = [models.Index(fields=["-started_at"], name="run_started"),
                   models.Index(fields=["status", "-started_at"], name="run_status_started")]
        # staff holding it may pick any model id for a run over HTTP or the websocket (agents.model_choice)
        permissions = [("choose_any_model", "Can choose any model for a run")]

    def __str__(self) -> str:
        return f"{self.agent_id} {self.id} ({self.status})"


class ToolApproval(models.Model):
    """A run suspended on a tool call, bound to the exact call (invariant 5)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        DECLINED = "declined"

    run_id = models.CharField(max_length=64, db_index=True)
    agent_id = models.CharField(max_length=255, blank=True, default="")
    tool_call_id = models.CharField(max_length=255)
    tool_name = models.CharField(max_length=255)
    args = models.JSONField(default=dict, blank=True)
    args_hash = models.CharField(max_length=64)
    state = models.JSONField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["run_id", "tool_call_id"], name="approval_unique_call")]

    def __str__(self) -> str:
        return f"{self.tool_name} in {self.run_id} ({self.status})"


class ThreadLease(models.Model):
    """Who runs a thread (invariant 2). One row per thread, changed only by compare-and-set.

    ``owner_run_id`` is the run that holds the thread (NULL when idle); ``token`` grows with every
    acquisition and fences a stale owner; ``expires_at`` is renewed by the owner while it runs and is
    NULL while the run is suspended on a tool approval (the thread stays held). ``last_seq`` is the
    last event sequence number written (or skipped) for the thread; ``reserved_seq`` is the highest
    one the owner run may hand to subscribers before it is logged: a run that takes the thread over
    numbers its events after it, so a seq a dead owner handed out is never given to another chunk.
    """

    class Status(models.TextChoices):
        IDLE = "idle"
        RUNNING = "running"
        SUSPENDED = "suspended"

    thread = models.OneToOneField(Thread, primary_key=True, on_delete=models.CASCADE, related_name="lease")
    agent_id = models.CharField(max_length=255, blank=True, default="")
    owner_run_id = models.CharField(max_length=64, null=True, blank=True, db_index=True)
    owner_process = models.CharField(max_length=128, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IDLE)
    token = models.BigIntegerField(default=0)
    expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    abort_requested = models.BooleanField(default=False)
    last_seq = models.BigIntegerField(default=0)
    reserved_seq = models.BigIntegerField(default=0)
    #: the highest seq the retention sweeper deleted (``agents.retention``): a subscriber resuming
    #: from before it gets the thread's snapshot first
    swept_seq = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    objects = StatementManager()

    def __str__(self) -> str:
        return f"{thread_id_of(self.thread_id)} → {self.owner_run_id or 'idle'}"

    @property
    def resource_id(self) -> str:
        """The resource of the lease's thread (from its key)."""
        return self.thread_id.split("\x1f", 1)[0]

    @property
    def thread_name(self) -> str:
        """The id callers name the lease's thread by (from its key)."""
        return thread_id_of(self.thread_id)


class ThreadInput(models.Model):
    """An accepted input waiting for (or consumed by) a run: nothing accepted is lost (invariant 1).

    ``attempts`` counts the runs that took the input and ended without saving their end (their
    process died, or their final write failed); at ``MASTRA_INPUT_MAX_ATTEMPTS`` the input is
    ``failed`` (parked: never run again, shown in the admin) and the thread goes on with the next."""

    class Kind(models.TextChoices):
        DELIVER = "deliver"  # into the active run at its next step boundary (or the run it wakes)
        QUEUE = "queue"  # a run of its own after the active one
        ECHO = "echo"  # stored in history already; only echoed to subscribers by the owner

    class Status(models.TextChoices):
        PENDING = "pending"
        CONSUMED = "consumed"
        CANCELLED = "cancelled"
        FAILED = "failed"

    #: unique within its thread, as message ids
    input_id = models.CharField(max_length=64)
    #: no index of its own: ``thread_input_waiting`` and the unique (thread, input_id) begin with it
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="inputs", db_index=False)
    agent_id = models.CharField(max_length=255)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    signal = models.JSONField()
    run_id = models.CharField(max_length=64, null=True, blank=True)  # target or future run
    consumed_by = models.CharField(max_length=64, null=True, blank=True)
    stream_options = models.JSONField(default=dict, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    consumed_at = models.DateTimeField(null=True, blank=True)

    objects = StatementManager()

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["thread", "status", "id"], name="thread_input_waiting")]
        constraints = [models.UniqueConstraint(fields=["thread", "input_id"], name="input_unique_in_thread")]

    def __str__(self) -> str:
        return f"{self.kind} {self.input_id} ({self.status})"


class ThreadEvent(models.Model):
    """The thread's chunk log: per-thread ``seq`` for resumable subscriptions (invariant 3)."""

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="events", db_index=False)
    seq = models.BigIntegerField()
    run_id = models.CharField(max_length=64, blank=True, default="")
    chunk = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    objects = StatementManager()

    class Meta:
        ordering = ["thread", "seq"]
        constraints = [models.UniqueConstraint(fields=["thread", "seq"], name="thread_event_seq")]
        indexes = [models.Index(fields=["thread", "run_id", "seq"], name="thread_event_run")]

    def __str__(self) -> str:
        return f"{thread_id_of(self.thread_id)}#{self.seq}"

# -- scores and trace spans of runs (their own module) --
from agents.observability import Score, TraceSpan  # noqa: E402,F401

# the editor's models live in their own package and land in this app's migrations
from agents.editor.models import AgentDefinition, AgentVersion, EditorGeneration  # noqa: E402,F401
