"""The operator dashboard (the admin's front page): one selector reading every figure, each with
the admin list it links to, and the token-usage chart as inline SVG."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone as dt_timezone
from urllib.parse import urlencode

from django.db.models import Count, F, Sum
from django.urls import reverse
from django.utils import timezone

from agent_channels.models import OutboxMessage, RateLimitWait
from agents.models import Run, ThreadLease, ToolApproval
from agents.registry import get_mastra
from agents.runtime.providers.credentials import MissingKey, missing_keys
from agents.runtime.providers.breaker import breakers_snapshot
from budgets.selectors import BudgetStatus, budget_statuses
from inbox.models import NotificationRecord
from ledger.models import LedgerDaily
from ledger.selectors import Costs, Figure as CostFigure, costs_build, costs_total

PRIORITIES = ("urgent", "high", "medium", "low")
#: the runs card counts the live runs, and the finished ones started within this window
LIVE_RUNS = (Run.Status.RUNNING, Run.Status.SUSPENDED)
RUN_WINDOW = timedelta(hours=24)
USAGE_DAYS = 7
#: the cost card's period (days, UTC) and how many top spenders it lists per dimension
COST_DAYS, COST_TOP = 7, 5
#: bar colours, one per agent (cycled)
PALETTE = ("#417690", "#e09f3e", "#6a994e", "#9e2a2b", "#7b2cbf", "#2a9d8f", "#bc6c25", "#588157")


def changelist(model: str, **filters) -> str:
    url = reverse(f"admin:{model}_changelist")
    return f"{url}?{urlencode(filters)}" if filters else url


@dataclass
class Figure:
    label: str
    count: int
    url: str


@dataclass
class Dashboard:
    threads: list[Figure] = field(default_factory=list)
    runs: list[Figure] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)
    failed_url: str = ""
    approvals: Figure | None = None
    approval_rows: list[ToolApproval] = field(default_factory=list)
    backlog: list[Figure] = field(default_factory=list)
    due: Figure | None = None
    #: channels: platform writes failed for good, and the rate-limit waits platforms asked for in the last hour
    deliveries_failed: Figure | None = None
    rate_waits: Figure | None = None
    usage_days: list[str] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    chart: dict = field(default_factory=dict)
    #: agents that cannot answer: their provider key is not set
    missing_keys: list[MissingKey] = field(default_factory=list)
    #: this process's model circuit breakers with failures (``agents.runtime.providers.breaker``)
    breakers: list[dict] = field(default_factory=list)
    #: each calendar budget's spend against its limit in the current period (``budgets.selectors``)
    budgets: list[BudgetStatus] = field(default_factory=list)
    #: the cost ledger: the last :data:`COST_DAYS` days' sums and top spenders, today's, failed writes
    costs: Costs | None = None
    costs_today: CostFigure | None = None
    costs_url: str = ""


def dashboard_build(*, now: datetime | None = None) -> Dashboard:
    """Every figure of the dashboard at ``now``."""
    now = now or timezone.now()
    board = Dashboard()
    board.missing_keys = missing_keys(get_mastra().get_agents().values())
    held = dict(ThreadLease.objects.exclude(owner_run_id=None).values_list("status").annotate(n=Count("pk")))
    board.threads = [Figure(status, held.get(status, 0), changelist("agents_threadlease", status=status))
                     for status in ("running", "suspended")]
    # live runs, and the others started in the last RUN_WINDOW: a count over all history would read
    # every run ever recorded on each page view (hundreds of thousands on a busy site)
    since = now - RUN_WINDOW
    by_status = dict(Run.objects.filter(status__in=LIVE_RUNS).values_list("status").annotate(n=Count("pk")))
    by_status.update(Run.objects.filter(started_at__gte=since).exclude(status__in=LIVE_RUNS)
                     .values_list("status").annotate(n=Count("pk")).order_by())
    board.runs = [Figure(status, by_status.get(status, 0),
                         changelist("agents_run", status=status) if status in LIVE_RUNS
                         else changelist("agents_run", status=status, started_at__gte=since.isoformat()))
                  for status in Run.Status.values]
    hour_ago = now - timedelta(hours=1)
    failed = Run.objects.filter(status=Run.Status.FAILED, started_at__gte=hour_ago).order_by("-started_at")
    board.failed = [{"id": run.id, "agent_id": run.agent_id, "error": (run.error or "").splitlines()[0][:160]
                     if run.error else "", "code": run.error_code,
                     "url": reverse("admin:agents_run_change", args=[run.id])}
                    for run in failed[:20]]
    board.failed_url = changelist("agents_run", status="failed", started_at__gte=hour_ago.isoformat())
    pending = ToolApproval.objects.filter(status=ToolApproval.Status.PENDING)
    board.approvals = Figure("pending approvals", pending.count(), changelist("agents_toolapproval", status="pending"))
    board.approval_rows = list(pending.order_by("created_at")[:10])
    records = NotificationRecord.objects.filter(status=NotificationRecord.Status.PENDING)
    backlog = dict(records.values_list("priority").annotate(n=Count("pk")))
    board.backlog = [Figure(p, backlog.get(p, 0), changelist("inbox_notificationrecord", status="pending", priority=p))
                     for p in PRIORITIES]
    board.due = Figure("due dispatches", records.filter(next_due_at__lte=now).count(),
                       changelist("inbox_notificationrecord", status="pending", next_due_at__lte=now.isoformat()))
    board.deliveries_failed = Figure(
        "failed deliveries", OutboxMessage.objects.filter(status=OutboxMessage.Status.FAILED).count(),
        changelist("agent_channels_outboxmessage", status="failed"))
    board.rate_waits = Figure("rate-limit waits in the last hour",
                              RateLimitWait.objects.filter(created_at__gte=hour_ago).count(),
                              changelist("agent_channels_ratelimitwait", created_at__gte=hour_ago.isoformat()))
    usage_fill(board, now)
    board.breakers = breakers_snapshot()
    board.budgets = budget_rows(now)
    costs_fill(board, now)
    return board


def budget_rows(now: datetime) -> list[dict]:
    """The budgets in force with their spend now, each linking to its counters in the admin."""
    rows = []
    for status in budget_statuses(get_mastra().budgets, now=now):
        budget = status.budget
        rows.append({"status": status, "id": budget.id, "mode": budget.mode, "period": budget.period,
                     "scope": budget.scope if budget.scope == "site" else f"{budget.scope} {budget.match or 'each'}",
                     "who": status.who, "url": changelist("budgets_budgetcounter", budget_id=budget.id)})
    return rows


def costs_fill(board: Dashboard, now: datetime) -> None:
    """The cost card: the ledger's daily sums (never its rows), each figure linking to its runs."""
    today = now.astimezone(dt_timezone.utc).date()
    board.costs = costs_build(days=COST_DAYS, top=COST_TOP, today=today,
                              dimensions=("agent", "resource", "channel", "model"))
    board.costs_today = costs_total(today, today)
    board.costs_url = reverse("admin:ledger_ledgerdaily_changelist")


def usage_fill(board: Dashboard, now: datetime) -> None:
    """Tokens (input and output) per agent per day over the last :data:`USAGE_DAYS` days (UTC),
    and the chart: from the ledger's daily sums, a few rows a day whatever the site's traffic (the
    runs' own usage, summed by the database, grew with the week's runs: 15 ms a page view at 10,000)."""
    today = now.astimezone(dt_timezone.utc).date()
    days = [today - timedelta(days=n) for n in range(USAGE_DAYS - 1, -1, -1)]
    totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    rows = (LedgerDaily.objects.filter(day__gte=days[0], day__lte=today)
            .values_list("agent_id", "day").annotate(tokens=Sum(F("input_tokens") + F("output_tokens"))).order_by())
    for agent_id, day, tokens in rows:
        if tokens:
            totals[agent_id][day.isoformat()] += int(tokens)
    board.usage_days = [d.isoformat() for d in days]
    board.usage = {agent: dict(per_day) for agent, per_day in sorted(totals.items())}
    board.chart = usage_chart(board.usage_days, board.usage)


def usage_chart(days: list[str], usage: dict[str, dict[str, int]], *, width: int = 640, height: int = 200) -> dict:
    """Geometry of a grouped bar chart (one group per day, one bar per agent) for the template."""
    agents = list(usage)
    peak = max([n for per_day in usage.values() for n in per_day.values()] or [0])
    left, bottom, top = 48, 24, 10
    plot_h = height - bottom - top
    group_w = (width - left) / max(len(days), 1)
    bar_w = max(2.0, (group_w - 8) / max(len(agents), 1))
    bars, labels = [], []
    for i, day in enumerate(days):
        x0 = left + i * group_w + 4
        labels.append({"x": round(left + i * group_w + group_w / 2, 1), "y": height - 6, "text": day[5:]})
        for j, agent in enumerate(agents):
            value = usage[agent].get(day, 0)
            h = (value / peak) * plot_h if peak else 0
            next_day = (datetime.fromisoformat(day) + timedelta(days=1)).date().isoformat()
            bars.append({"x": round(x0 + j * bar_w, 1), "y": round(top + plot_h - h, 1), "w": round(bar_w - 1, 1),
                         "h": round(h, 1), "color": PALETTE[j % len(PALETTE)], "title": f"{agent} {day}: {value} tokens",
                         "url": changelist("agents_run", agent_id=agent, started_at__gte=f"{day}T00:00:00+00:00",
                                           started_at__lt=f"{next_day}T00:00:00+00:00")})
    legend = [{"agent": agent, "color": PALETTE[j % len(PALETTE)]} for j, agent in enumerate(agents)]
    return {"width": width, "height": height, "bars": bars, "labels": labels, "legend": legend, "peak": peak,
            "axis_x": left, "axis_y": top + plot_h, "top": top}


__all__ = ["Dashboard", "Figure", "dashboard_build", "usage_chart"]
