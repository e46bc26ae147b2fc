"""Reads of the ledger for the costs page, the dashboard and a run's page.

The sums by day, agent, channel and model read the daily sums by agent, channel and model
(``LedgerDaily``), those by resource the daily sums by resource (``LedgerResourceDaily``), never the
rows: a page costs the same with 1 million rows as with 1,000 (bench/ledger.py). A run's own
steps are read from the rows (index on ``run_id``). Every figure carries the URL of its runs: the
admin's run list filtered by the ledger (``ledger.admin.LedgerRunFilter``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from urllib.parse import urlencode

from django.db.models import Sum
from django.urls import reverse

from .models import LedgerDaily, LedgerEntry, LedgerResourceDaily, LedgerWriteFailure

#: the dimensions the costs page sums by: ``name → (columns of LedgerDaily, run filter parameter)``
DIMENSIONS = {
    "day": (("day",), "ledger_day"),
    "agent": (("agent_id",), "ledger_agent"),
    "resource": (("resource_id",), "ledger_resource"),
    "channel": (("channel",), "ledger_channel"),
    "model": (("provider", "model"), "ledger_model"),
}
SUMS = ("steps", "priced_steps", "unknown_usage_steps", "input_tokens", "output_tokens", "cached_input_tokens",
        "reasoning_tokens", "cost")
#: the run filter's parameters for a period
FROM, TO = "ledger_from", "ledger_to"


@dataclass
class Figure:
    """Sums of one group (or of a whole period): ``cost`` sums the priced steps; ``priced_steps`` <
    ``steps`` means some steps had no price (the cost is then partial, or "no price" when none had)."""

    key: str
    steps: int = 0
    priced_steps: int = 0
    unknown_usage_steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    cost: Decimal = Decimal(0)
    runs_url: str = ""
    share: float = 0.0  # of the period's priced cost, 0 to 1 (bars)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def unpriced_steps(self) -> int:
        """Steps with tokens but no price for their model."""
        return self.steps - self.priced_steps - self.unknown_usage_steps

    @property
    def cost_main(self) -> str:
        """``$1.2345``; ``no price`` when no step had a price; ``unknown`` when no step reported usage."""
        if self.steps and not self.priced_steps:
            return "no price" if self.unpriced_steps else "unknown"
        return cost_format(self.cost)

    @property
    def cost_note(self) -> str:
        """What the cost leaves out: ``+ 3 steps without price, 2 of unknown usage`` (empty: nothing)."""
        if not self.priced_steps:
            return ""
        parts = []
        if self.unpriced_steps:
            parts.append(f"{self.unpriced_steps} step{'s' if self.unpriced_steps != 1 else ''} without price")
        if self.unknown_usage_steps:
            noun = "" if parts else ("step " if self.unknown_usage_steps == 1 else "steps ")
            parts.append(f"{self.unknown_usage_steps} {noun}of unknown usage")
        return f"+ {', '.join(parts)}" if parts else ""

    @property
    def cost_text(self) -> str:
        """:attr:`cost_main` and :attr:`cost_note`: ``$1.2345 + 3 steps without price``."""
        return f"{self.cost_main} {self.cost_note}".strip()


def cost_format(cost: Decimal | None) -> str:
    if cost is None:
        return "no price"
    if cost and abs(cost) < Decimal("0.01"):
        return f"${cost:.6f}"
    return f"${cost:,.4f}"


def runs_url(**params) -> str:
    """The admin's run list filtered by the ledger (``params``: the filter's parameters)."""
    return f"{reverse('admin:agents_run_changelist')}?{urlencode(params)}"


def period(days: int, *, today: date | None = None) -> tuple[date, date]:
    """The last ``days`` days (UTC) up to ``today`` included."""
    today = today or datetime.now(timezone.utc).date()
    return today - timedelta(days=days - 1), today


def _figure(key: str, row: dict) -> Figure:
    return Figure(key, **{name: (row.get(name) or (Decimal(0) if name == "cost" else 0)) for name in SUMS})


def costs_total(start: date, end: date) -> Figure:
    """The sums of the period ``start``..``end`` (days included)."""
    row = LedgerDaily.objects.filter(day__gte=start, day__lte=end).aggregate(**{n: Sum(n) for n in SUMS})
    figure = _figure("total", row)
    figure.runs_url = runs_url(**{FROM: start.isoformat(), TO: end.isoformat()})
    return figure


def costs_by(dimension: str, start: date, end: date, *, limit: int | None = None) -> list[Figure]:
    """The period's sums by ``dimension`` (a key of :data:`DIMENSIONS`): days in order, anything
    else by cost then tokens, highest first (the top spenders), ``limit`` of them."""
    columns, parameter = DIMENSIONS[dimension]
    table = LedgerResourceDaily if dimension == "resource" else LedgerDaily
    rows = (table.objects.filter(day__gte=start, day__lte=end).values(*columns)
            .annotate(**{f"sum_{n}": Sum(n) for n in SUMS}))
    if dimension == "day":
        rows = rows.order_by("day")
    else:
        rows = rows.order_by("-sum_cost", "-sum_input_tokens", *columns)
    if limit is not None:
        rows = rows[:limit]
    figures = []
    for row in rows:
        values = [row[c] for c in columns]
        key = values[0].isoformat() if dimension == "day" else "/".join(str(v) for v in values)
        figure = _figure(key, {n: row[f"sum_{n}"] for n in SUMS})
        if dimension == "day":
            figure.runs_url = runs_url(**{parameter: key})
        else:
            figure.runs_url = runs_url(**{FROM: start.isoformat(), TO: end.isoformat(), parameter: key})
        figures.append(figure)
    top = max((f.cost for f in figures), default=Decimal(0))
    for figure in figures:
        figure.share = float(figure.cost / top) if top else 0.0
    return figures


@dataclass
class Costs:
    """The costs page (and the dashboard's card): the period's total and its sums by dimension."""

    start: date
    end: date
    days: int
    total: Figure
    by: dict[str, list[Figure]] = field(default_factory=dict)
    failures: "FailureFigures | None" = None


@dataclass
class FailureFigures:
    """Failed and dropped ledger writes recorded since ``since``: steps whose cost is missing."""

    since: datetime
    failed: int
    dropped: int
    last_error: str
    url: str

    @property
    def steps(self) -> int:
        return self.failed + self.dropped


def write_failures(*, since: datetime) -> FailureFigures:
    rows = LedgerWriteFailure.objects.filter(created_at__gte=since)
    counts = dict(rows.values_list("kind").annotate(n=Sum("count")).order_by())
    last = rows.order_by("-created_at").values_list("error", flat=True).first() or ""
    url = f"{reverse('admin:ledger_ledgerwritefailure_changelist')}?{urlencode({'created_at__gte': since.isoformat()})}"
    return FailureFigures(since, counts.get(LedgerWriteFailure.Kind.FAILED, 0) or 0,
                          counts.get(LedgerWriteFailure.Kind.DROPPED, 0) or 0, last, url)


def costs_build(*, days: int = 30, top: int = 10, today: date | None = None,
                dimensions: tuple[str, ...] = tuple(DIMENSIONS)) -> Costs:
    """The costs of the last ``days`` days: the total, each dimension's sums (``top`` of them, days
    all), and the failed ledger writes of the period."""
    start, end = period(days, today=today)
    costs = Costs(start, end, days, costs_total(start, end))
    for dimension in dimensions:
        costs.by[dimension] = costs_by(dimension, start, end, limit=None if dimension == "day" else top)
    costs.failures = write_failures(since=datetime.combine(start, datetime.min.time(), tzinfo=timezone.utc))
    return costs


@dataclass
class RunCosts:
    """A run's steps in the ledger and their sums (its admin page)."""

    steps: list[LedgerEntry]
    total: Figure


def run_costs(*, run_id: str) -> RunCosts:
    steps = list(LedgerEntry.objects.filter(run_id=run_id).order_by("created_at", "step_number", "id"))
    total = Figure("run", steps=len(steps))
    for step in steps:
        if step.cost is not None:
            total.priced_steps += 1
            total.cost += step.cost
        if step.input_tokens is None and step.output_tokens is None:
            total.unknown_usage_steps += 1
        for name in ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens"):
            setattr(total, name, getattr(total, name) + (getattr(step, name) or 0))
    return RunCosts(steps, total)


__all__ = ["Costs", "DIMENSIONS", "Figure", "FailureFigures", "cost_format", "costs_build", "costs_by", "costs_total",
           "period", "run_costs", "runs_url", "write_failures"]
