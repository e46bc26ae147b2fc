"""Reads of budgets: the budgets in force (code's and the admin's) and what their counters show."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils import timezone

from agents.runtime.budgets import Budget, RunScope, amount_text, budget_make, period_bounds, period_key
from agents.runtime.errors import AgentConfigError

from .models import Budget as BudgetRow
from .models import BudgetCounter

_cache_lock = threading.Lock()
_cache: tuple[float, tuple[Budget, ...]] | None = None


def budgets_cache_clear(**_signal_kwargs) -> None:
    """Forget the admin's budgets read last (a ``post_save`` / ``post_delete`` receiver)."""
    global _cache
    with _cache_lock:
        _cache = None


def admin_budgets_cached() -> tuple[Budget, ...] | None:
    """The admin's budgets when read less than ``MASTRA_BUDGETS_CACHE_S`` ago, else None (no query)."""
    with _cache_lock:
        if _cache is not None and time.monotonic() - _cache[0] < settings.MASTRA_BUDGETS_CACHE_S:
            return _cache[1]
    return None


def admin_budgets() -> tuple[Budget, ...]:
    """The enabled budgets of the admin, read at most every ``MASTRA_BUDGETS_CACHE_S`` seconds per
    process (a change made in this process is seen at once). A row the runtime would refuse is
    left out (the admin's form refuses it first)."""
    global _cache
    cached = admin_budgets_cached()
    if cached is not None:
        return cached
    found = []
    for row in BudgetRow.objects.filter(enabled=True).order_by("name"):
        try:
            found.append(budget_make(id=row.name, limit=row.limit, scope=row.scope, period=row.period, unit=row.unit,
                                     mode=row.mode, match=row.match))
        except AgentConfigError:
            continue
    with _cache_lock:
        _cache = (time.monotonic(), tuple(found))
    return tuple(found)


def budgets_in_force(code: tuple[Budget, ...], admin: tuple[Budget, ...] | None = None) -> tuple[Budget, ...]:
    """The site's budgets: the code's (``Mastra(budgets=)``), each replaced by the admin's budget
    of the same id, then the admin's others (``admin``: as read, else read here)."""
    admin = {b.id: b for b in (admin_budgets() if admin is None else admin)}
    return tuple(admin.pop(b.id, b) for b in code) + tuple(admin.values())


def budget_time_zone() -> ZoneInfo:
    """The time zone days and months of budgets start in (``MASTRA_BUDGET_TIME_ZONE``)."""
    return ZoneInfo(settings.MASTRA_BUDGET_TIME_ZONE)


@dataclass(frozen=True)
class BudgetStatus:
    """One budget's spend in the current period, for the dashboard: the site's counter, or (a
    budget per resource, agent or channel) its top spender's."""

    budget: Budget
    spent: Decimal
    who: str
    resets_at: datetime | None
    reached_at: datetime | None

    @property
    def percent(self) -> int:
        return min(100, int(self.spent * 100 / self.budget.limit)) if self.budget.limit else 0

    @property
    def spent_text(self) -> str:
        return amount_text(self.spent, self.budget.unit)

    @property
    def limit_text(self) -> str:
        return amount_text(self.budget.limit, self.budget.unit)


def budget_statuses(code: tuple[Budget, ...], *, now: datetime | None = None) -> list[BudgetStatus]:
    """Every calendar budget in force (per-run budgets have no standing figure) with its spend now."""
    now = now or timezone.now()
    tz = budget_time_zone()
    out = []
    for budget in budgets_in_force(code):
        if budget.period == "run":
            continue
        key = period_key(budget.period, now, tz, "")
        _, resets = period_bounds(budget.period, now, tz)
        counters = BudgetCounter.objects.filter(budget_id=budget.id, period_key=key)
        if budget.scope == "site" or budget.match:
            counters = counters.filter(counter_key=budget.counter_key(RunScope(run_id="", agent_id="")))
        top = counters.order_by("-spent").first()
        out.append(BudgetStatus(budget=budget, spent=Decimal(top.spent) if top else Decimal(0),
                                who=top.scope_value if top and budget.scope != "site" and not budget.match else "",
                                resets_at=resets, reached_at=top.reached_at if top else None))
    return out


__all__ = ["BudgetStatus", "admin_budgets", "admin_budgets_cached", "budget_statuses", "budget_time_zone", "budgets_cache_clear",
           "budgets_in_force"]
