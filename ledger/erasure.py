"""The ledger's rows of an erased resource keep their costs without naming anyone
(``mastra_site.resource_erasure.ANONYMISERS``): a step's row loses its resource, thread and run;
the resource's daily sums are added to the anonymous sums of the same day, agent, channel and model
and deleted. The site's totals stay what they were."""

from __future__ import annotations

from django.db import models

from .models import LedgerDaily
from .writer import DAILY_KEY, DAILY_SUMS, daily_add


def entries_anonymise(rows: models.QuerySet) -> tuple[int, int]:
    """Blank the resource, thread and run of ``rows`` (ledger entries); returns (0, anonymised)."""
    return 0, rows.update(resource_id="", thread_id="", run_id="")


def daily_anonymise(rows: models.QuerySet) -> tuple[int, int]:
    """Move the sums of ``rows`` (ledger days) to the anonymous rows of their day, agent, channel and
    model (resource ""); returns (0, anonymised). In the caller's transaction."""
    sums: dict[tuple, list] = {}
    found = list(rows.select_for_update().values_list("pk", *DAILY_KEY, *DAILY_SUMS))
    for pk, *row in found:
        key = tuple("" if column == "resource_id" else value for column, value in zip(DAILY_KEY, row))
        values = list(row[len(DAILY_KEY):])
        if key in sums:
            sums[key] = [a + b for a, b in zip(sums[key], values)]
        else:
            sums[key] = values
    if found:
        LedgerDaily.objects.filter(pk__in=[row[0] for row in found]).delete()
        daily_add(sums)
    return 0, len(found)


__all__ = ["daily_anonymise", "entries_anonymise"]
