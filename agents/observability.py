"""Scores and trace spans of runs (``agents.runtime.scoring`` / ``agents.runtime.tracing``).

Both are keyed by run id, not linked to ``Run`` rows: a successful run without memory has no row
(docs/agents.md), its scores and spans are kept all the same. Written only through
``agents.observability_services``.
"""

from __future__ import annotations

from django.db import models


class Score(models.Model):
    """One scorer's result for one run (a failed scorer keeps its ``error`` and no score)."""

    score_id = models.CharField(max_length=64, unique=True)
    run_id = models.CharField(max_length=64, db_index=True)
    agent_id = models.CharField(max_length=255, blank=True, default="")
    thread_id = models.CharField(max_length=255, blank=True, default="")
    resource_id = models.CharField(max_length=255, blank=True, default="")
    scorer_key = models.CharField(max_length=255)
    scorer_id = models.CharField(max_length=255, db_index=True)
    scorer_name = models.CharField(max_length=255, blank=True, default="")
    score = models.FloatField(null=True, blank=True)
    reason = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")
    input = models.JSONField(null=True, blank=True)
    output = models.JSONField(null=True, blank=True)
    preprocess_result = models.JSONField(null=True, blank=True)
    analyze_result = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["-created_at"], name="score_created")]  # the admin's list

    def __str__(self) -> str:
        return f"{self.scorer_id} on {self.run_id}: {self.score}"


class TraceSpan(models.Model):
    """One finished span; a trace is the spans sharing a ``trace_id``."""

    #: no index of its own: the unique constraint on (trace_id, span_id) serves a trace's lookups
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True, default="")
    #: the run the span belongs to (the nearest ``agent_run`` span's run)
    run_id = models.CharField(max_length=64, blank=True, default="", db_index=True)
    name = models.CharField(max_length=255)
    type = models.CharField(max_length=32)
    attributes = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    input = models.JSONField(null=True, blank=True)
    output = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["started_at", "id"]
        indexes = [models.Index(fields=["started_at"], name="trace_span_started")]  # the admin's list, newest first
        constraints = [models.UniqueConstraint(fields=["trace_id", "span_id"], name="trace_span_unique")]

    def __str__(self) -> str:
        return f"{self.type} {self.name} ({self.span_id})"
