"""Retention of the budgets app's tables (``mastra_site.sweeper`` runs these):

- ``budget_counters``: counters not added to for ``MASTRA_RETENTION_DAYS["budget_counters"]`` days
  (keep it above 31: a month's counter is added to until its month ends);
- active-run slots expire by themselves (``expires_at``): a slot a dead process left is deleted by
  the same policy's days counted from its expiry.
"""

from __future__ import annotations

from agents.retention import RetentionPolicy

from .models import ActiveRunSlot, BudgetCounter

POLICIES = (
    RetentionPolicy(setting="budget_counters", model=BudgetCounter, age_field="updated_at"),
    RetentionPolicy(setting="budget_counters", model=ActiveRunSlot, age_field="expires_at"),
)
