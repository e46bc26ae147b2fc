"""Budgets configured in the admin, their counters, and the active-run slots of the concurrency
limits (docs/operations.md, "Budgets and limits")."""

from __future__ import annotations

from django.db import models

from agents.runtime.budgets import MODES, PERIODS, SCOPES, UNITS


def _choices(values: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(v, v) for v in values]


class Budget(models.Model):
    """A budget set by an operator (``agents.runtime.budgets.Budget``); one with the id of a budget
    in code (``Mastra(budgets=)``) replaces it."""

    name = models.SlugField(max_length=100, unique=True, help_text="Shown in refusals and notices.")
    scope = models.CharField(max_length=16, choices=_choices(SCOPES), default="site")
    match = models.CharField(max_length=255, blank=True, default="",
                             help_text="The resource, agent or channel it applies to; empty: each one separately "
                                       "(and always empty for the site).")
    period = models.CharField(max_length=16, choices=_choices(PERIODS), default="day")
    unit = models.CharField(max_length=16, choices=_choices(UNITS), default="usd")
    limit = models.DecimalField(max_digits=20, decimal_places=6)
    mode = models.CharField(max_length=16, choices=_choices(MODES), default="hard",
                            help_text="soft: runs go on and one notice is posted; hard: model calls are refused.")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class BudgetCounter(models.Model):
    """What one budget's scope spent in one period: added to by ``UPDATE … SET spent = spent + x``
    after each model step, read before each model call. ``counter_key`` is the budget id, its
    scope and the scope's value; ``period_key`` the day, month or run. ``limit`` and ``mode`` are
    the budget's when the counter was last added to (the dashboard shows them)."""

    counter_key = models.CharField(max_length=400)
    period_key = models.CharField(max_length=80)
    budget_id = models.CharField(max_length=100, db_index=True)
    scope = models.CharField(max_length=16)
    scope_value = models.CharField(max_length=255, blank=True, default="")
    #: the resource of a resource budget's counter, or of a per-run counter's run (export and erasure
    #: find it by this column)
    resource_id = models.CharField(max_length=255, blank=True, default="", db_index=True)
    #: the run of a per-run counter
    run_id = models.CharField(max_length=64, blank=True, default="")
    unit = models.CharField(max_length=16)
    mode = models.CharField(max_length=16)
    limit = models.DecimalField(max_digits=20, decimal_places=6)
    spent = models.DecimalField(max_digits=24, decimal_places=8, default=0)
    period_start = models.DateTimeField(null=True, blank=True)
    resets_at = models.DateTimeField(null=True, blank=True)
    #: when the counter reached its limit (the soft budget's one notice was claimed then)
    reached_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["counter_key", "period_key"], name="budget_counter_unique")]
        indexes = [models.Index(fields=["period_key", "budget_id"], name="budget_counter_period")]

    def __str__(self) -> str:
        return f"{self.counter_key} {self.period_key}"


class ActiveRunSlot(models.Model):
    """One run holding a place under the concurrency limits, until it ends or ``expires_at`` (a
    process that died holding it; each model call of the run pushes it on)."""

    run_id = models.CharField(primary_key=True, max_length=64)
    resource_id = models.CharField(max_length=255, blank=True, default="", db_index=True)
    agent_id = models.CharField(max_length=255, db_index=True)
    acquired_at = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return self.run_id
