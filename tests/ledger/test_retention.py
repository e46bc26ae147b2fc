"""The ledger in the retention sweep: rows go after MASTRA_RETAIN_LEDGER_DAYS, the daily sums (what
the costs pages read) are kept longer, MASTRA_RETAIN_LEDGER_DAILY_DAYS."""

from __future__ import annotations

import pytest

from ledger.models import LedgerDaily, LedgerEntry, LedgerResourceDaily
from mastra_site.sweeper import sweep_run
from tests.mastra_site import rows
from tests.mastra_site.rows import NOW, ago

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def retention(settings):
    settings.MASTRA_RETENTION_DAYS = {**settings.MASTRA_RETENTION_DAYS, "ledger_entries": 400, "ledger_daily": 3650}
    settings.MASTRA_SWEEP_PAUSE_MS = 0


def test_old_rows_go_and_their_daily_sums_stay_until_their_own_retention():
    rows.ledger_entry("old", at=ago(401))
    rows.ledger_entry("kept", at=ago(399))
    rows.ledger_day(at=ago(401))
    rows.ledger_day(at=ago(3651))
    report = {o.table: o.rows for o in sweep_run(now=NOW).outcomes if o.rows}
    assert report == {"ledger.LedgerEntry": 1, "ledger.LedgerDaily": 1, "ledger.LedgerResourceDaily": 1}
    assert list(LedgerEntry.objects.values_list("run_id", flat=True)) == ["kept"]
    assert list(LedgerDaily.objects.values_list("day", flat=True)) == [ago(401).date()]
    assert list(LedgerResourceDaily.objects.values_list("day", flat=True)) == [ago(401).date()]


def test_zero_days_keeps_the_ledger_forever(settings):
    settings.MASTRA_RETENTION_DAYS = {**settings.MASTRA_RETENTION_DAYS, "ledger_entries": 0, "ledger_daily": 0}
    rows.ledger_entry("old", at=ago(5000))
    rows.ledger_day(at=ago(5000))
    assert {o.table: o.rows for o in sweep_run(now=NOW).outcomes if o.rows} == {}
