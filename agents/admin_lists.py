"""Admin lists that stay quick on tables of millions of rows (runs, spans, events, records).

Django's admin list pays for every row of the table three ways: a ``list_filter`` on a plain field
offers each distinct value (``SELECT DISTINCT`` over all history), the result count is a
``COUNT(*)`` (twice with a filter: the filtered and the full count), and a foreign-key filter lists
every row of the other table. Here:

- :func:`recent_values` filters offer the values seen in the last days only, read through the
  list's date index (older values still filter by URL: ``?agent_id=…``);
- :class:`BigTableAdmin` shows no full count and counts an unfiltered list from PostgreSQL's
  statistics (``pg_class.reltuples``, kept by autovacuum) when the table is large; a filtered list is
  counted exactly.
"""

from __future__ import annotations

from datetime import timedelta

from django.contrib import admin
from django.core.paginator import Paginator
from django.db import connections
from django.utils import timezone
from django.utils.functional import cached_property

#: below this many rows (by the planner's estimate) an unfiltered list is counted exactly
EXACT_COUNT_BELOW = 100_000


def recent_values(field: str, *, date_field: str, days: int = 7, title: str | None = None):
    """A list filter offering the values of ``field`` seen in the last ``days`` days."""

    class RecentValuesFilter(admin.SimpleListFilter):
        parameter_name = field

        def lookups(self, request, model_admin):
            since = timezone.now() - timedelta(days=days)
            values = (model_admin.model._default_manager.filter(**{f"{date_field}__gte": since})
                      .exclude(**{field: ""}).order_by(field).values_list(field, flat=True).distinct())
            return [(value, value) for value in values]

        def queryset(self, request, queryset):
            value = self.value()
            return queryset.filter(**{field: value}) if value else queryset

    RecentValuesFilter.title = title or f"{field.replace('_', ' ')} (last {days} days)"
    RecentValuesFilter.__name__ = f"Recent{field.title().replace('_', '')}Filter"
    return RecentValuesFilter


class EstimatedCountPaginator(Paginator):
    """Counts an unfiltered queryset of a large PostgreSQL table from the planner's statistics."""

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        query = getattr(queryset, "query", None)
        if query is not None and not query.where and not query.distinct:
            estimate = table_estimate(queryset.db, queryset.model._meta.db_table)
            if estimate is not None and estimate >= EXACT_COUNT_BELOW:
                return estimate
        return super().count


def table_estimate(alias: str, table: str) -> int | None:
    """The planner's row estimate of ``table`` on PostgreSQL (None elsewhere, or never analysed)."""
    connection = connections[alias]
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass(%s)", [table])
        row = cursor.fetchone()
    return int(row[0]) if row and row[0] is not None and row[0] >= 0 else None


class BigTableAdmin(admin.ModelAdmin):
    """A list over a table that grows without bound: no full count, an estimated unfiltered count."""

    show_full_result_count = False
    paginator = EstimatedCountPaginator
