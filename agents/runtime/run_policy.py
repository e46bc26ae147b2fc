"""The run policy: the seam through which a site limits what runs spend (docs/operations.md).

A :class:`RunPolicy` is given to ``Mastra(policy=...)`` and reaches every run of its agents when
the run is built. The run calls it at three points, and nothing else of the runtime knows about
budgets or limits:

- :meth:`RunPolicy.before_model_call` right before each model call (after the step's inputs were
  taken, so that a refused call leaves them answered by the refusal, not waiting for another run):
  it raises :class:`~agents.runtime.errors.RunRefusedError` (``budget_exceeded``,
  ``too_many_active_runs``) to end the run with that error before the call;
- :meth:`RunPolicy.after_step` once the step's model answered, with what the step used: it returns
  the notices to post (a soft budget just spent), which the run streams as ``data-budget-notice``
  and keeps in its thread;
- :meth:`RunPolicy.run_end` when the run ended (any way, also suspended): whatever the policy held
  for the run (an active-run slot) is let go.

A model call made for a run outside its steps (its thread's title, asked after the run ended) is
checked with :meth:`RunPolicy.before_side_call` (the run's hard budgets, no slot taken: a spent
budget means no call) and counted with :meth:`RunPolicy.after_step` like a step. A policy without
``before_side_call`` does not check those calls.

Without a policy a run calls nothing. The site's implementation is ``budgets.policy`` (counters in
the database); :class:`MemoryRunPolicy` keeps them in the process (plain Python use, tests).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from typing import Callable, Protocol
from zoneinfo import ZoneInfo

from .budgets import Budget, RunScope, amount_text, period_bounds, period_key, step_amount
from .errors import BudgetExceededError
from .providers.chain import label_parts
# the request context key naming the channel a run came in by (one definition, with the ledger's)
from .tracing.steps import CHANNEL_KEY  # noqa: F401

#: the request context key that names the resource a run without memory belongs to (as Mastra's
#: server sets it for an authenticated caller): only that resource may act on the run afterwards
RESOURCE_ID_KEY = "mastra__resourceId"


@dataclass(frozen=True)
class StepSpend:
    """What one model step used: the model that answered (``provider/model_id``), the usage the
    provider reported (snake_case keys), and when it ended."""

    model: str
    usage: dict
    at: datetime

    @property
    def provider(self) -> str:
        return label_parts(self.model)[0]

    @property
    def model_id(self) -> str:
        return label_parts(self.model)[1]


@dataclass(frozen=True)
class BudgetNotice:
    """A soft budget was spent: posted once per budget and period, in the run's thread (kept as a
    notice entry) and on the dashboard."""

    budget: str
    message: str
    resets_at: str | None

    def to_dict(self) -> dict:
        return {"code": "budget_soft_limit", "budget": self.budget, "message": self.message,
                "resetsAt": self.resets_at}


class RunPolicy(Protocol):
    """See the module docstring. ``budgets`` are the site's budgets in code (``Mastra(budgets=)``),
    given with each call so that the policy may add its own (the admin's)."""

    async def before_model_call(self, scope: RunScope, budgets: tuple[Budget, ...]) -> None: ...

    async def after_step(self, scope: RunScope, budgets: tuple[Budget, ...],
                         spend: StepSpend) -> list[BudgetNotice]: ...

    async def run_end(self, scope: RunScope) -> None: ...

    async def before_side_call(self, scope: RunScope, budgets: tuple[Budget, ...]) -> None: ...

    async def admit(self, scope: RunScope, budgets: tuple[Budget, ...]) -> None: ...


def refusal(budget: Budget, *, spent: Decimal, resets_at: datetime | None) -> BudgetExceededError:
    """The error of a model call ``budget`` refuses (``spent`` reached its limit)."""
    when = f"it resets at {resets_at.isoformat()}" if resets_at is not None else "it does not reset (a per-run budget)"
    return BudgetExceededError(
        f"budget {budget.id!r} is spent ({amount_text(spent, budget.unit)} of {amount_text(budget.limit, budget.unit)}"
        f" per {budget.period}); {when}",
        details={"budget": budget.id, "scope": budget.scope, "match": budget.match, "period": budget.period,
                 "unit": budget.unit, "limit": str(budget.limit), "spent": str(spent),
                 "resetsAt": resets_at.isoformat() if resets_at is not None else None})


def soft_notice(budget: Budget, *, spent: Decimal, resets_at: datetime | None) -> BudgetNotice:
    when = f"; it resets at {resets_at.isoformat()}" if resets_at is not None else ""
    return BudgetNotice(budget=budget.id, resets_at=resets_at.isoformat() if resets_at is not None else None,
                        message=f"Budget {budget.id!r} is spent ({amount_text(spent, budget.unit)} of "
                                f"{amount_text(budget.limit, budget.unit)} per {budget.period}); runs go on"
                                f" (a soft budget){when}.")


def resets_at(budget: Budget, at: datetime, tz: ZoneInfo) -> datetime | None:
    return None if budget.period == "run" else period_bounds(budget.period, at, tz)[1]


@dataclass
class MemoryRunPolicy:
    """A :class:`RunPolicy` whose counters live in this process (one event loop): plain Python
    use and the runtime's tests. ``pricer(provider, model, usage, at)`` gives a step's cost (None:
    no price); ``now`` and ``tz`` set the clock and the periods' time zone."""

    pricer: Callable[[str, str, dict, datetime], Decimal | None] = lambda *args: None
    tz: ZoneInfo = field(default_factory=lambda: ZoneInfo("UTC"))
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
    spent: dict = field(default_factory=dict)  # (counter key, period key) -> Decimal
    notified: set = field(default_factory=set)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def _key(self, budget: Budget, scope: RunScope, at: datetime) -> tuple[str, str]:
        return budget.counter_key(scope), period_key(budget.period, at, self.tz, scope.run_id)

    async def admit(self, scope: RunScope, budgets: tuple[Budget, ...]) -> None:
        at = self.now()
        for budget in budgets:
            if budget.mode == "hard" and budget.period != "run" and budget.applies_to(scope):
                spent = self.spent.get(self._key(budget, scope, at), Decimal(0))
                if spent >= budget.limit:
                    raise refusal(budget, spent=spent, resets_at=resets_at(budget, at, self.tz))

    async def before_model_call(self, scope: RunScope, budgets: tuple[Budget, ...]) -> None:
        at = self.now()
        for budget in budgets:
            if budget.mode == "hard" and budget.applies_to(scope):
                spent = self.spent.get(self._key(budget, scope, at), Decimal(0))
                if spent >= budget.limit:
                    raise refusal(budget, spent=spent, resets_at=resets_at(budget, at, self.tz))

    async def before_side_call(self, scope: RunScope, budgets: tuple[Budget, ...]) -> None:
        await self.before_model_call(scope, budgets)  # (this policy holds no slots)

    async def after_step(self, scope: RunScope, budgets: tuple[Budget, ...], spend: StepSpend) -> list[BudgetNotice]:
        notices, at = [], self.now()  # periods follow the policy's clock; the price, the step's time
        cost = self.pricer(spend.provider, spend.model_id, spend.usage, spend.at) if any(
            b.unit == "usd" for b in budgets) else None
        async with self.lock:
            for budget in budgets:
                if not budget.applies_to(scope):
                    continue
                amount = step_amount(budget, usage=spend.usage, cost=cost)
                if amount is None:
                    continue
                key = self._key(budget, scope, at)
                self.spent[key] = total = self.spent.get(key, Decimal(0)) + amount
                if budget.mode == "soft" and total >= budget.limit and key not in self.notified:
                    self.notified.add(key)
                    notices.append(soft_notice(budget, spent=total, resets_at=resets_at(budget, at, self.tz)))
        return notices

    async def run_end(self, scope: RunScope) -> None:
        return None


__all__ = ["BudgetNotice", "CHANNEL_KEY", "RESOURCE_ID_KEY", "MemoryRunPolicy", "RunPolicy", "StepSpend", "refusal", "resets_at",
           "soft_notice"]
