"""The ledger's retention policies (``mastra_site.sweeper`` runs them; docs/operations.md).

- ``ledger_entries``: one row per model step, past ``MASTRA_RETAIN_LEDGER_DAYS`` (400 by default:
  longer than runs, whose costs they keep); swept by primary key, which grows with the step's time;
- ``ledger_daily``: the daily sums the costs pages read (by agent, channel and model; by resource),
  past ``MASTRA_RETAIN_LEDGER_DAILY_DAYS`` (3650): the totals outlive the rows they sum.
"""

from __future__ import annotations

from agents.retention import RetentionPolicy

from .models import LedgerDaily, LedgerEntry, LedgerResourceDaily

LEDGER_ENTRIES = RetentionPolicy("ledger_entries", LedgerEntry, "created_at", by_pk=True)
LEDGER_DAILY = RetentionPolicy("ledger_daily", LedgerDaily, "day")
LEDGER_RESOURCE_DAILY = RetentionPolicy("ledger_daily", LedgerResourceDaily, "day")

POLICIES = (LEDGER_ENTRIES, LEDGER_DAILY, LEDGER_RESOURCE_DAILY)
