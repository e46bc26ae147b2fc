"""Admin of the cost ledger: the price table (a price is added, never rewritten: a saved row's
prices are read-only; "New price from this one" opens the add form filled with them, for a new
effective date), the ledger's rows (filters by day, agent, resource, channel and model), the failed
writes, the costs page (*Costs*, in place of the daily rollup's list) and a filter of the run list
by the ledger, which every figure of the costs page links to."""

from __future__ import annotations

from datetime import date, timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.paginator import Paginator
from django.db.models import Sum
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.functional import cached_property
from django.utils.html import format_html

from agents.admin_display import run_cell, with_run_stored
from agents.models import Run
from agents.trace_waterfall import duration_label

from .models import LedgerDaily, LedgerEntry, LedgerResourceDaily, LedgerWriteFailure, ModelPrice
from .selectors import cost_format, costs_build, period

#: the days the list filters' choices come from
CHOICE_DAYS = 30
#: the most rows the ledger's list counts (its pages go that far; filters narrow it down)
COUNT_CAP = 10_000

PRICE_FIELDS = ("provider", "model", "input", "output", "cached_input", "reasoning", "effective_from")


@admin.register(ModelPrice)
class ModelPriceAdmin(admin.ModelAdmin):
    list_display = ("provider", "model", "input", "output", "cached_input", "reasoning", "currency",
                    "effective_from", "note")
    list_filter = ("provider", "effective_from")
    search_fields = ("model",)

    def get_fields(self, request, obj=None):
        if obj is None:
            return PRICE_FIELDS + ("note",)
        return PRICE_FIELDS + ("currency", "note", "new_price")

    def get_readonly_fields(self, request, obj=None):
        # history stays as it was: a price change is a new row with its own effective date
        return PRICE_FIELDS + ("currency", "new_price") if obj is not None else ()

    @admin.display(description="change of price")
    def new_price(self, obj: ModelPrice) -> str:
        query = urlencode({"provider": obj.provider, "model": obj.model, "input": obj.input, "output": obj.output,
                           "cached_input": "" if obj.cached_input is None else obj.cached_input,
                           "reasoning": "" if obj.reasoning is None else obj.reasoning})
        return format_html('<a href="{}?{}">New price from this one</a> (a new row with its own effective date; '
                           "steps already recorded keep their cost)", reverse("admin:ledger_modelprice_add"), query)

    def has_delete_permission(self, request, obj=None) -> bool:
        # a price some steps were costed at stays; only a superuser removes a mistake
        return request.user.is_superuser and super().has_delete_permission(request, obj)


# -- the ledger's rows ----------------------------------------------------------------------------
class RecentChoicesFilter(admin.SimpleListFilter):
    """A filter whose choices come from the daily rollup of the last :data:`CHOICE_DAYS` days
    (a few hundred rows), not from a ``SELECT DISTINCT`` over every ledger row."""

    columns: tuple[str, ...] = ()
    table = LedgerDaily
    limit = 50

    def lookups(self, request, model_admin):
        start, _ = period(CHOICE_DAYS)
        rows = (self.table.objects.filter(day__gte=start).values(*self.columns).annotate(total=Sum("cost"))
                .order_by("-total", *self.columns)[:self.limit])
        values = ["/".join(str(row[c]) for c in self.columns) for row in rows]
        return [(value, value or "(none)") for value in values]

    def queryset(self, request, queryset):
        value = self.value()
        if value is None:
            return queryset
        if len(self.columns) == 2:
            provider, _, model = value.partition("/")
            return queryset.filter(provider=provider, model=model)
        return queryset.filter(**{self.columns[0]: value})


class AgentFilter(RecentChoicesFilter):
    title, parameter_name, columns = "agent", "agent_id", ("agent_id",)


class ResourceFilter(RecentChoicesFilter):
    title, parameter_name, columns, limit = "resource (top spenders)", "resource_id", ("resource_id",), 20
    table = LedgerResourceDaily


class ChannelFilter(RecentChoicesFilter):
    title, parameter_name, columns = "channel", "channel", ("channel",)


class ModelFilter(RecentChoicesFilter):
    title, parameter_name, columns = "model", "model", ("provider", "model")


class DayFilter(admin.SimpleListFilter):
    title, parameter_name = "day (UTC)", "day"

    def lookups(self, request, model_admin):
        start, end = period(14)
        return [((end - timedelta(days=n)).isoformat(), (end - timedelta(days=n)).isoformat())
                for n in range((end - start).days + 1)]

    def queryset(self, request, queryset):
        return queryset.filter(day=self.value()) if self.value() else queryset


class CappedCountPaginator(Paginator):
    """Counts at most :data:`COUNT_CAP` rows (a count of a million ledger rows is a scan of the
    table on every page view): past it, the list shows that many and pages up to there."""

    @cached_property
    def count(self) -> int:
        # the rows' ids only: a column's annotation (whether the run is stored) is read for the page
        return self.object_list.values("pk")[:COUNT_CAP].count()


class ReadOnly(admin.ModelAdmin):
    """Rows written by the ledger only: viewed, never added, changed or deleted by hand."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def has_view_permission(self, request, obj=None) -> bool:
        return request.user.is_active and request.user.is_staff and (
            super().has_view_permission(request, obj) or super().has_change_permission(request, obj))


def _token_column(field: str, header: str):
    """A list column of the token count ``field`` under the short ``header`` (its field's name is
    "input tokens", ...), sorted by it (cell class ``field-tokens_<header>``)."""
    def column(obj: LedgerEntry) -> int | None:
        return getattr(obj, field)

    column.__name__ = f"tokens_{header}"
    return admin.display(description=header, ordering=field)(column)


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnly):
    # thirteen columns beside the admin's menu: the step's cost right after its model and call, short
    # headers, the run's id shortened (whole in its title); the list scrolls for the rest at 1280 px
    list_display = ("created_at", "agent_id", "resource_id", "model_label", "call", "cost_text",
                    *(_token_column(field, header) for field, header in (
                        ("input_tokens", "in"), ("output_tokens", "out"), ("cached_input_tokens", "cached"),
                        ("reasoning_tokens", "reasoning"))),
                    "latency", "channel", "run_link")
    list_filter = (DayFilter, AgentFilter, ResourceFilter, ChannelFilter, ModelFilter, "kind")
    search_fields = ("=run_id", "=resource_id", "=thread_id")
    # the count of every row would be a scan of the table: counted up to COUNT_CAP rows at most
    show_full_result_count = False
    paginator = CappedCountPaginator
    # a count per filter choice would scan the table once per choice
    show_facets = admin.ShowFacets.NEVER
    list_per_page = 50

    @admin.display(description="model")
    def model_label(self, obj: LedgerEntry) -> str:
        return f"{obj.provider}/{obj.model}"

    @admin.display(description="call", ordering="step_number")
    def call(self, obj: LedgerEntry) -> str:
        return obj.call_label

    @admin.display(description="took", ordering="latency_ms")
    def latency(self, obj: LedgerEntry) -> str:
        return "-" if obj.latency_ms is None else duration_label(obj.latency_ms)

    @admin.display(description="cost", ordering="cost")
    def cost_text(self, obj: LedgerEntry) -> str:
        return cost_format(obj.cost)

    def get_queryset(self, request):
        return with_run_stored(super().get_queryset(request))

    @admin.display(description="run", ordering="run_id")
    def run_link(self, obj: LedgerEntry) -> str:
        return run_cell(obj.run_id, stored=obj.run_stored)


@admin.register(LedgerWriteFailure)
class LedgerWriteFailureAdmin(ReadOnly):
    list_display = ("created_at", "kind", "count", "error", "process")
    list_filter = ("kind", "created_at")


@admin.register(LedgerDaily)
class CostsAdmin(ReadOnly):
    """*Cost ledger → Costs*: the costs page (the rollup's change list is replaced by it)."""

    def changelist_view(self, request, extra_context=None):
        try:
            days = int(request.GET.get("days", 30))
        except ValueError:
            days = 30
        days = min(max(days, 1), 366)
        context = {**self.admin_site.each_context(request), "title": f"Costs: the last {days} days (UTC)",
                   "costs": costs_build(days=days), "periods": (1, 7, 30, 90, 365), "opts": self.model._meta,
                   "retention_days": settings.MASTRA_RETENTION_DAYS["ledger_entries"] or "forever",
                   **(extra_context or {})}
        return TemplateResponse(request, "admin/ledger/costs.html", context)


# -- the run list, filtered by the ledger ---------------------------------------------------------
class LedgerRunFilter(admin.ListFilter):
    """The runs with ledger rows of a day or period, agent, resource, channel or model (the costs
    page's links: ``?ledger_from=2026-06-01&ledger_to=2026-06-30&ledger_channel=slack``)."""

    title = "cost ledger"
    PARAMETERS = ("ledger_day", "ledger_from", "ledger_to", "ledger_agent", "ledger_resource", "ledger_channel",
                  "ledger_model")

    def __init__(self, request, params, model, model_admin):
        super().__init__(request, params, model, model_admin)
        self.values: dict[str, str] = {}
        for name in self.PARAMETERS:
            if name in params:
                value = params.pop(name)
                self.values[name] = value[-1] if isinstance(value, list) else value

    def has_output(self) -> bool:
        return bool(self.values)

    def expected_parameters(self):
        return list(self.PARAMETERS)

    def choices(self, changelist):
        yield {"selected": False, "query_string": changelist.get_query_string(remove=self.PARAMETERS),
               "display": "All runs"}
        yield {"selected": True, "query_string": changelist.get_query_string(),
               "display": ", ".join(f"{k.removeprefix('ledger_')} {v}" for k, v in self.values.items())}

    def queryset(self, request, queryset):
        if not self.values:
            return queryset
        rows = LedgerEntry.objects.all()
        v = self.values
        try:
            if "ledger_day" in v:
                rows = rows.filter(day=date.fromisoformat(v["ledger_day"]))
            if "ledger_from" in v:
                rows = rows.filter(day__gte=date.fromisoformat(v["ledger_from"]))
            if "ledger_to" in v:
                rows = rows.filter(day__lte=date.fromisoformat(v["ledger_to"]))
        except ValueError as exc:
            raise IncorrectLookupParameters(exc) from exc
        for name, column in (("ledger_agent", "agent_id"), ("ledger_resource", "resource_id"),
                             ("ledger_channel", "channel")):
            if name in v:
                rows = rows.filter(**{column: v[name]})
        if "ledger_model" in v:
            provider, _, model = v["ledger_model"].partition("/")
            rows = rows.filter(provider=provider, model=model)
        return queryset.filter(id__in=rows.values("run_id"))


def run_admin_filter_add() -> None:
    """Give the run list the ledger's filter (the agents app knows nothing of the ledger)."""
    run_admin = admin.site.get_model_admin(Run)
    if LedgerRunFilter not in run_admin.list_filter:
        run_admin.list_filter = tuple(run_admin.list_filter) + (LedgerRunFilter,)


run_admin_filter_add()
