"""Budget counters: read before a model call, added to after a step (docs/operations.md).

The database decides across processes. :func:`counters_add` adds a step's amount with one
``UPDATE … SET spent = spent + x`` per counter (the row lock makes concurrent adds queue, none is
lost), inserting the period's row first when there is none; the one add that takes a counter to
its limit claims ``reached_at`` by compare-and-set, so that a soft budget's notice is posted once
per period however many processes cross it together. :func:`counters_refusal` reads the counters
without locking: runs of one scope that read below the limit at the same time each make their
call, so the total overshoot is at most one step per run in flight (the racing test measures it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.db import IntegrityError, transaction
from django.db.models import F, Q

from agents.runtime.budgets import Budget, RunScope, period_bounds, period_key
from agents.runtime.errors import BudgetExceededError
from agents.runtime.run_policy import refusal, resets_at

from .models import BudgetCounter


@dataclass(frozen=True)
class CounterAdd:
    """One budget's share of a step: ``amount`` to add to ``budget``'s counter for ``scope``."""

    budget: Budget
    amount: Decimal


def counter_ref(budget: Budget, scope: RunScope, at: datetime, tz: ZoneInfo) -> tuple[str, str]:
    """``(counter_key, period_key)`` of ``budget``'s counter for ``scope`` at ``at``."""
    return budget.counter_key(scope), period_key(budget.period, at, tz, scope.run_id)


def counter_resource(budget: Budget, scope: RunScope) -> str:
    """The resource a counter belongs to (export and erasure): a resource budget's resource, and a
    per-run counter's run's."""
    if budget.scope == "resource" or budget.period == "run":
        return scope.resource_id
    return ""


def counters_refusal(*, scope: RunScope, budgets: list[Budget], at: datetime,
                     tz: ZoneInfo) -> BudgetExceededError | None:
    """The refusal of the first of ``budgets`` (hard ones that apply to ``scope``) whose counter
    reached its limit, or None. One query, no lock."""
    refs = {counter_ref(b, scope, at, tz): b for b in budgets}
    query = Q()
    for counter_key, key in refs:
        query |= Q(counter_key=counter_key, period_key=key)
    spent = {(c, p): Decimal(s) for c, p, s in
             BudgetCounter.objects.filter(query).values_list("counter_key", "period_key", "spent")}
    for ref, budget in refs.items():
        if spent.get(ref, Decimal(0)) >= budget.limit:
            return refusal(budget, spent=spent[ref], resets_at=resets_at(budget, at, tz))
    return None


def counters_add(*, scope: RunScope, adds: list[CounterAdd], at: datetime, tz: ZoneInfo) -> list[tuple[Budget, Decimal]]:
    """Add each amount to its counter in one transaction (counters in key order, so that two steps
    adding to the same counters never deadlock); returns ``(budget, spent)`` for each budget this
    add took to its limit (its ``reached_at`` claimed here: one caller per counter and period)."""
    reached = []
    entries = sorted(((counter_ref(a.budget, scope, at, tz), a) for a in adds), key=lambda e: e[0])
    with transaction.atomic():
        for (counter_key, key), add in entries:
            budget = add.budget
            rows = BudgetCounter.objects.filter(counter_key=counter_key, period_key=key)
            changes = {"spent": F("spent") + add.amount, "limit": budget.limit, "mode": budget.mode, "updated_at": at}
            if not rows.update(**changes):
                start, end = period_bounds(budget.period, at, tz) if budget.period != "run" else (None, None)
                value = scope.value(budget.scope) if budget.scope != "site" else ""
                try:
                    with transaction.atomic():  # a savepoint: a row another process inserted first fails alone
                        BudgetCounter.objects.create(
                            counter_key=counter_key, period_key=key, budget_id=budget.id, scope=budget.scope,
                            scope_value=value, resource_id=counter_resource(budget, scope),
                            run_id=scope.run_id if budget.period == "run" else "", unit=budget.unit,
                            mode=budget.mode, limit=budget.limit, spent=add.amount, period_start=start,
                            resets_at=end, updated_at=at)
                except IntegrityError:
                    rows.update(**changes)  # add to that row
            claimed = rows.filter(reached_at=None, spent__gte=F("limit")).update(reached_at=at)
            if claimed:
                reached.append((budget, Decimal(rows.values_list("spent", flat=True).get())))
    return reached


__all__ = ["CounterAdd", "counter_ref", "counters_add", "counters_refusal"]
