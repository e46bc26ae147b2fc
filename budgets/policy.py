"""The site's run policy (``agents.runtime.run_policy.RunPolicy``) on the database: budgets
(:mod:`budgets.counters`) and concurrency limits (:mod:`budgets.slots`), docs/operations.md.

Each call first works out, in memory, which budgets and limits apply to the run (the budgets in
force are cached: :func:`budgets.selectors.admin_budgets`); when none does it returns without
touching the database. Otherwise one call on the worker thread (``async_twin``) does the work.
"""

from __future__ import annotations

import logging
from datetime import datetime
from decimal import Decimal
from typing import Callable

from django.conf import settings
from django.utils import timezone

from agents.connections import async_twin
from agents.runtime.budgets import Budget, RunScope, step_amount
from agents.runtime.run_policy import BudgetNotice, StepSpend, resets_at, soft_notice

from .counters import CounterAdd, counters_add, counters_refusal
from .selectors import admin_budgets, admin_budgets_cached, budget_time_zone, budgets_in_force
from .slots import limits_for, slot_release, slot_take, slots_refusal

logger = logging.getLogger(__name__)

#: a step's cost: ``(provider, model, usage, at) -> Decimal | None`` (None: the model has no price)
Pricer = Callable[[str, str, dict, datetime], "Decimal | None"]


def no_price(provider: str, model: str, usage: dict, at: datetime) -> Decimal | None:
    return None


class DatabaseRunPolicy:
    """Budgets and concurrency limits enforced by the database (module docstring). ``now`` is the
    clock (periods are counted from it); ``pricer`` gives a step's cost."""

    def __init__(self, *, pricer: Pricer = no_price, now: Callable[[], datetime] = timezone.now):
        self.pricer = pricer
        self.now = now

    @staticmethod
    def limits(scope: RunScope) -> list[tuple[str, str, int]]:
        return limits_for(scope, per_resource=settings.MASTRA_MAX_ACTIVE_RUNS_PER_RESOURCE,
                          per_agent=settings.MASTRA_MAX_ACTIVE_RUNS_PER_AGENT)

    @staticmethod
    async def in_force(budgets: tuple[Budget, ...]) -> tuple[Budget, ...]:
        """The budgets in force: the code's and the admin's (read again when the cache is stale)."""
        admin = admin_budgets_cached()
        if admin is None:
            admin = await async_twin(admin_budgets)()
        return budgets_in_force(budgets, admin)

    async def hard(self, scope: RunScope, budgets: tuple[Budget, ...], *, per_run: bool = True) -> list[Budget]:
        return [b for b in await self.in_force(budgets) if b.mode == "hard" and b.applies_to(scope)
                and (per_run or b.period != "run")]

    async def admit(self, scope: RunScope, budgets: tuple[Budget, ...]) -> None:
        """Before a run is started for an HTTP call: refuse it at once when a hard budget of its
        scope is spent or a concurrency limit is full (nothing is taken)."""
        hard, limits = await self.hard(scope, budgets, per_run=False), self.limits(scope)
        if hard or limits:
            await async_twin(self._admit)(scope, hard, limits)

    def _admit(self, scope: RunScope, hard: list[Budget], limits: list) -> None:
        now = self.now()
        refused = (counters_refusal(scope=scope, budgets=hard, at=now, tz=budget_time_zone()) if hard else None) or (
            slots_refusal(scope=scope, limits=limits, now=now) if limits else None)
        if refused is not None:
            raise refused

    async def before_model_call(self, scope: RunScope, budgets: tuple[Budget, ...]) -> None:
        hard, limits = await self.hard(scope, budgets), self.limits(scope)
        if hard or limits:
            await async_twin(self._before)(scope, hard, limits)

    def _before(self, scope: RunScope, hard: list[Budget], limits: list) -> None:
        now = self.now()
        if hard:
            refused = counters_refusal(scope=scope, budgets=hard, at=now, tz=budget_time_zone())
            if refused is not None:
                raise refused
        if limits:
            slot_take(scope=scope, limits=limits, now=now, ttl_s=settings.MASTRA_ACTIVE_RUN_TTL_S)

    async def before_side_call(self, scope: RunScope, budgets: tuple[Budget, ...]) -> None:
        """Before a model call made for a run outside its steps (its thread's title): refuse it when
        a hard budget of the run's scope is spent. No slot is taken: the call is not a run."""
        hard = await self.hard(scope, budgets)
        if hard:
            await async_twin(self._before)(scope, hard, [])

    async def after_step(self, scope: RunScope, budgets: tuple[Budget, ...], spend: StepSpend) -> list[BudgetNotice]:
        applying = [b for b in await self.in_force(budgets) if b.applies_to(scope)]
        if not applying:
            return []
        return await async_twin(self._after)(scope, applying, spend)

    def _after(self, scope: RunScope, applying: list[Budget], spend: StepSpend) -> list[BudgetNotice]:
        cost = None
        if any(b.unit == "usd" for b in applying):
            cost = self.pricer(spend.provider, spend.model_id, spend.usage, spend.at)
        adds = []
        for budget in applying:
            amount = step_amount(budget, usage=spend.usage, cost=cost)
            if amount is not None and amount > 0:
                adds.append(CounterAdd(budget, amount))
        if not adds:
            return []
        now, tz = self.now(), budget_time_zone()
        reached = counters_add(scope=scope, adds=adds, at=now, tz=tz)
        for budget, spent in reached:
            logger.warning("budget %s reached for run %s: %s spent", budget.describe(), scope.run_id, spent)
        return [soft_notice(budget, spent=spent, resets_at=resets_at(budget, now, tz))
                for budget, spent in reached if budget.mode == "soft"]

    async def run_end(self, scope: RunScope) -> None:
        if self.limits(scope):
            await async_twin(slot_release)(run_id=scope.run_id)


__all__ = ["DatabaseRunPolicy", "Pricer", "no_price"]
