"""Budgets: how much a scope may spend in a period (docs/operations.md, "Budgets and limits").

A :class:`Budget` is data: a site declares its defaults in code (``Mastra(budgets=[...])``) and an
operator adds more in the admin (``budgets.models.Budget``); both become this class. The rules that
say which budgets a run spends against, which counter each one adds to and when that counter's
period ends are pure and live here; where the counters are kept and how they are raced on is the
run policy's job (:mod:`agents.runtime.run_policy`, ``budgets.policy`` on the database).

- ``scope``: ``site`` (one counter for everything), ``resource``, ``agent`` or ``channel``. With
  ``match`` empty each resource (agent, channel) has a counter of its own; with ``match`` set the
  budget applies to that one only.
- ``period``: ``day`` and ``month`` start at midnight in the site's time zone (a setting);
  ``run``: one counter per run, which never resets.
- ``unit``: ``usd`` (the step's cost from the price table; a step of a model with no price adds
  nothing) or ``tokens`` (the tokens the provider reported: input + output).
- ``mode``: ``soft`` lets runs go on and posts one notice per budget and period once spent;
  ``hard`` refuses every model call of its scope once spent, until the period resets.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo

from .errors import AgentConfigError

SCOPES = ("site", "resource", "agent", "channel")
PERIODS = ("day", "month", "run")
UNITS = ("usd", "tokens")
MODES = ("soft", "hard")


@dataclass(frozen=True)
class RunScope:
    """Who a run spends for: its id, agent, resource (the thread's owner, or the API caller's
    resource for a run without memory; "" when none), thread ("" without memory) and channel (the
    way in: ``chat``, ``api``, ``slack``, ``github``, ``webhook``, ``schedule``; "" when unknown)."""

    run_id: str
    agent_id: str
    resource_id: str = ""
    thread_id: str = ""
    channel: str = ""

    def value(self, scope: str) -> str:
        """The scope value a budget of ``scope`` counts this run under."""
        if scope == "site":
            return ""
        return {"resource": self.resource_id, "agent": self.agent_id, "channel": self.channel}[scope]


@dataclass(frozen=True)
class Budget:
    """One budget (see the module docstring). ``id``: a short stable name, shown in refusals and
    notices; ``limit``: USD (a decimal) or tokens (a whole number)."""

    id: str
    limit: Decimal
    scope: str = "site"
    period: str = "day"
    unit: str = "usd"
    mode: str = "hard"
    match: str = ""

    def applies_to(self, scope: RunScope) -> bool:
        if self.scope == "site":
            return True
        value = scope.value(self.scope)
        return value == self.match if self.match else bool(value) or self.scope == "channel"

    def counter_key(self, scope: RunScope) -> str:
        """The key of the counter ``scope`` adds to (the period is the other half of it)."""
        if self.scope == "site" or self.match:
            return f"{self.id}|{self.scope}|{self.match}"
        return f"{self.id}|{self.scope}|{scope.value(self.scope)}"

    def describe(self) -> str:
        target = self.scope if self.scope == "site" else f"{self.scope} {self.match or 'each'}"
        return f"{self.id} ({target}, per {self.period}, {self.mode}: {amount_text(self.limit, self.unit)})"


def budget_make(*, id: Any, limit: Any, scope: Any = "site", period: Any = "day", unit: Any = "usd",
                mode: Any = "hard", match: Any = "", field: str = "budgets") -> Budget:
    """A checked :class:`Budget`; raises ``AgentConfigError`` naming ``field`` and the problem."""
    if not isinstance(id, str) or not id.strip() or len(id) > 100 or "|" in id:
        raise AgentConfigError(f"{field}.id", "must be a non-empty name of at most 100 characters without '|'")
    for name, value, choices in (("scope", scope, SCOPES), ("period", period, PERIODS), ("unit", unit, UNITS),
                                 ("mode", mode, MODES)):
        if value not in choices:
            raise AgentConfigError(f"{field}.{name}", f"must be one of {', '.join(choices)}")
    if not isinstance(match, str) or (match and scope == "site"):
        raise AgentConfigError(f"{field}.match", "must be a string, and empty for a site budget")
    if isinstance(limit, bool):
        raise AgentConfigError(f"{field}.limit", "must be a number")
    try:
        amount = Decimal(str(limit))
    except (InvalidOperation, ValueError):
        raise AgentConfigError(f"{field}.limit", "must be a number") from None
    if not amount.is_finite() or amount <= 0 or (unit == "tokens" and amount != amount.to_integral_value()):
        raise AgentConfigError(f"{field}.limit", "must be above 0 (a whole number of tokens)")
    return Budget(id=id, limit=amount, scope=scope, period=period, unit=unit, mode=mode, match=match)


def budgets_check(value: Any, field: str = "budgets") -> tuple[Budget, ...]:
    """``Mastra(budgets=...)``: a list of :class:`Budget` or of dicts of its fields; ids unique."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise AgentConfigError(field, "must be a list of budgets")
    found: list[Budget] = []
    for index, item in enumerate(value):
        where = f"{field}[{index}]"
        if isinstance(item, Budget):
            item = budget_make(**{**item.__dict__, "field": where})
        elif isinstance(item, dict):
            unknown = set(item) - {"id", "limit", "scope", "period", "unit", "mode", "match"}
            if unknown:
                raise AgentConfigError(where, f"unknown field(s) {', '.join(sorted(unknown))}")
            item = budget_make(**item, field=where)
        else:
            raise AgentConfigError(where, "must be a Budget or a dict")
        if any(b.id == item.id for b in found):
            raise AgentConfigError(where, f"two budgets share the id {item.id!r}")
        found.append(item)
    return tuple(found)


def period_bounds(period: str, at: datetime, tz: ZoneInfo) -> tuple[datetime, datetime]:
    """``(start, end)`` of the day or month holding ``at`` (an aware datetime) in ``tz``, both
    aware; the end is the next period's start (the counter's reset)."""
    local = at.astimezone(tz)
    if period == "day":
        start = local.replace(hour=0, minute=0, second=0, microsecond=0)
        following = (start + timedelta(days=1, hours=12)).replace(hour=0)  # a DST day is 23 or 25 hours
    elif period == "month":
        start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        following = (start + timedelta(days=32)).replace(day=1)
    else:
        raise ValueError(f"a {period!r} budget has no calendar period")
    # re-attach the zone: a wall-clock midnight across a DST change has another UTC offset
    return start.replace(tzinfo=tz), following.replace(tzinfo=tz)


def period_key(period: str, at: datetime, tz: ZoneInfo, run_id: str) -> str:
    """The period half of a counter's key: ``2026-12-03``, ``2026-12`` or ``run:<run id>``."""
    if period == "run":
        return f"run:{run_id}"
    start, _ = period_bounds(period, at, tz)
    return start.strftime("%Y-%m-%d" if period == "day" else "%Y-%m")


def step_amount(budget: Budget, *, usage: dict, cost: Decimal | None) -> Decimal | None:
    """What one model step adds to ``budget``'s counter: its tokens (input + output as reported;
    None when the provider reported none) or its cost (None: no price for the model)."""
    if budget.unit == "usd":
        return cost
    tokens = [usage.get(name) for name in ("input_tokens", "output_tokens")]
    if all(t is None for t in tokens):
        total = usage.get("total_tokens")
        return Decimal(total) if isinstance(total, (int, float)) and total > 0 else None
    return Decimal(sum(int(t) for t in tokens if isinstance(t, (int, float))))


def amount_text(amount: Decimal, unit: str) -> str:
    if unit == "usd":
        return f"{amount.quantize(Decimal('0.01')) if amount >= 1 else amount.normalize():f} USD"
    return f"{int(amount)} tokens"


__all__ = ["Budget", "MODES", "PERIODS", "RunScope", "SCOPES", "UNITS", "amount_text", "budget_make",
           "budgets_check", "period_bounds", "period_key", "step_amount"]
