"""The ledger's tests turn its background writer on (tests/settings.py has it off) in
transactional tests: the writer's thread writes through a connection of its own."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from ledger.prices import prices_forget
from ledger.writer import ledger_writer

shipped = importlib.import_module("ledger.migrations.0002_shipped_prices")


@pytest.fixture
def shipped_prices(django_db_blocker):
    """The shipped default prices (a transactional test empties every table after it, the data
    migration's rows too)."""
    with django_db_blocker.unblock():
        shipped.add_prices(apps, None)
    prices_forget()


@pytest.fixture
def ledger_on(settings, shipped_prices):
    settings.MASTRA_LEDGER = True
    yield ledger_writer()
    # every row a test queued is written before the test's tables are emptied
    assert ledger_writer().flush(timeout=10)
    prices_forget()
