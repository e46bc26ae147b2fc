"""The ledger's rows of an erased resource keep their costs without naming anyone
(``mastra_site.resource_erasure.ANONYMISERS``): a step's row loses its resource, thread and run;
the resource's daily sums are added to the anonymous sums (resource "") of the same day and
deleted. The site's totals stay what they were. (The sums by agent, channel and model name no
resource.)"""

from __future__ import annotations

from django.db import models

from .models import LedgerResourceDaily
from .writer import DAILY_SUMS, daily_add

RESOURCE_KEY = ("day", "resource_id")


def entries_anonymise(rows: models.QuerySet) -> tuple[int, int]:
    """Blank the resource, thread and run of ``rows`` (ledger entries); returns (0, anonymised)."""
    return 0, rows.update(resource_id="", thread_id="", run_id="")


def resource_daily_anonymise(rows: models.QuerySet) -> tuple[int, int]:
    """Move the sums of ``rows`` (a resource's days) to the anonymous rows of their days; returns
    (0, anonymised). In the caller's transaction."""
    found = list(rows.select_for_update().values_list("pk", "day", *DAILY_SUMS))
    sums: dict[tuple, list] = {}
    for _pk, day, *values in found:
        key = (day, "")
        sums[key] = [a + b for a, b in zip(sums[key], values)] if key in sums else list(values)
    if found:
        LedgerResourceDaily.objects.filter(pk__in=[row[0] for row in found]).delete()
        daily_add(LedgerResourceDaily, RESOURCE_KEY, sums)
    return 0, len(found)


__all__ = ["entries_anonymise", "resource_daily_anonymise"]
