"""What operators changed in code-defined agents: one :class:`AgentDefinition` per agent of the
code (kept when the agent leaves the code, marked gone) and its immutable :class:`AgentVersion` rows.
:class:`EditorGeneration` is the counter every process watches to refresh its cache of published
overrides (``agents.editor.overrides``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class AgentDefinition(models.Model):
    """An agent as the code defines it, last synced (``agents.editor.sync``).

    ``defaults`` is the code's snapshot in the overrides' shape: ``instructions`` (text, or None
    when the code computes them per request), ``tools`` (names, or None when computed) and
    ``tool_descriptions``. ``editor`` is the agent's ``editor`` option (null when omitted)."""

    agent_id = models.CharField(max_length=255, unique=True)
    name = models.CharField(max_length=255)
    description = models.TextField(blank=True, default="")
    model = models.CharField(max_length=255, blank=True, default="")
    editor = models.JSONField(null=True, blank=True)
    defaults = models.JSONField(default=dict, blank=True)
    #: False once the agent left the code (its versions are kept)
    present = models.BooleanField(default=True)
    synced_at = models.DateTimeField()
    gone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "agents"
        ordering = ["agent_id"]
        verbose_name = "agent"
        permissions = [
            ("edit_agent_instructions", "Can edit agent instructions"),
            ("edit_agent_tools", "Can edit agent tools and tool descriptions"),
            ("publish_agent_version", "Can publish and roll back agent versions"),
            ("edit_agent_model", "Can edit an agent's model fallback chain"),
        ]

    def __str__(self) -> str:
        return self.agent_id


class AgentVersion(models.Model):
    """One saved edit of an agent: immutable overrides (only ``status`` moves, by publishing).

    ``number`` counts the agent's versions from 1; ``based_on`` is the version the editor started
    from (the optimistic lock: a save must be based on the latest version)."""

    class Status(models.TextChoices):
        DRAFT = "draft"
        PUBLISHED = "published"

    agent = models.ForeignKey(AgentDefinition, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    overrides = models.JSONField(default=dict, blank=True)
    based_on = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                               related_name="+")
    #: the author's username when saved (kept if the user is deleted)
    author_name = models.CharField(max_length=150, blank=True, default="")
    note = models.CharField(max_length=500, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "agents"
        ordering = ["agent", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "number"], name="agent_version_number"),
            models.UniqueConstraint(fields=["agent"], condition=Q(status="published"), name="agent_one_published"),
        ]

    def __str__(self) -> str:
        return f"{self.agent.agent_id} v{self.number}"


class EditorGeneration(models.Model):
    """One row (``id=1``): ``value`` grows with every publish or roll back."""

    value = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "agents"

    def __str__(self) -> str:
        return f"editor generation {self.value}"
