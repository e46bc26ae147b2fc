"""Admin lists that stay quick on tables of millions of rows (runs, spans, events, records).

Django's admin list pays for every row of the table three ways: a ``list_filter`` on a plain field
offers each distinct value (``SELECT DISTINCT`` over all history), the result count is a
``COUNT(*)`` (twice with a filter: the filtered and the full count), and a foreign-key filter lists
every row of the other table. Here:

- :func:`recent_values` filters offer the values seen in the last days only, read through the
  list's date index (older values still filter by URL: ``?agent_id=…``) and kept by the process for
  :data:`RECENT_VALUES_TTL_S` (every view of a list, each page and each filter, read them again);
- :class:`BigTableAdmin` shows no full count and counts an unfiltered list from PostgreSQL's
  statistics (``pg_class.reltuples``, kept by autovacuum) when the table is large; a filtered list is
  counted exactly.
"""

from __future__ import annotations

import time
from datetime import timedelta

from django.contrib import admin
from django.core.paginator import Paginator
from django.db import connections
from django.utils import timezone
from django.utils.functional import cached_property

#: below this many rows (by the planner's estimate) an unfiltered list is counted exactly
EXACT_COUNT_BELOW = 100_000
#: seconds a process keeps the values a recent-values filter read (a value first seen meanwhile is
#: offered after that; it filters by URL at once)
RECENT_VALUES_TTL_S = 60.0
#: (model label, field, date field, days) -> (monotonic time read, values)
_recent: dict[tuple, tuple[float, list]] = {}


def recent_values_clear() -> None:
    """Forget the values the recent-values filters read (the next view of a list reads them anew)."""
    _recent.clear()


def recent_values(field: str, *, date_field: str, days: int = 7, title: str | None = None):
    """A list filter offering the values of ``field`` seen in the last ``days`` days."""

    class RecentValuesFilter(admin.SimpleListFilter):
        parameter_name = field

        def lookups(self, request, model_admin):
            key = (model_admin.model._meta.label_lower, field, date_field, days)
            now = time.monotonic()
            kept = _recent.get(key)
            if kept is not None and now - kept[0] < RECENT_VALUES_TTL_S:
                values = kept[1]
            else:
                since = timezone.now() - timedelta(days=days)
                values = list(model_admin.model._default_manager.filter(**{f"{date_field}__gte": since})
                              .exclude(**{field: ""}).order_by(field).values_list(field, flat=True).distinct())
                _recent[key] = (now, values)
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
