"""The ledger's retention policies (``mastra_site.sweeper`` runs them; docs/operations.md).

- ``ledger_entries``: one row per model step, past ``MASTRA_RETAIN_LEDGER_DAYS`` (400 by default:
  longer than runs, whose costs they keep); swept by primary key, which grows with the step's time;
- ``ledger_daily``: the daily sums the costs pages read, past ``MASTRA_RETAIN_LEDGER_DAILY_DAYS``
  (3650): the totals by day, agent, resource, channel and model outlive the rows they sum.
"""

from __future__ import annotations

from agents.retention import RetentionPolicy

from .models import LedgerDaily, LedgerEntry

LEDGER_ENTRIES = RetentionPolicy("ledger_entries", LedgerEntry, "created_at", by_pk=True)
LEDGER_DAILY = RetentionPolicy("ledger_daily", LedgerDaily, "day")

POLICIES = (LEDGER_ENTRIES, LEDGER_DAILY)
