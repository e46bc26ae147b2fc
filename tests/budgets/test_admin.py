"""The budgets' admin: budgets are edited under the runtime's rules; counters and slots are read-only."""

import pytest
from django.urls import reverse

from budgets.models import Budget

pytestmark = pytest.mark.django_db

FORM = {"name": "per-user", "scope": "resource", "match": "", "period": "month", "unit": "tokens", "limit": "2000000",
        "mode": "soft", "enabled": "on"}


def test_an_operator_adds_a_budget_and_the_runtime_rules_refuse_a_bad_one(admin_client):
    added = admin_client.post(reverse("admin:budgets_budget_add"), FORM)
    assert added.status_code == 302
    assert Budget.objects.get().limit == 2_000_000
    fractional = admin_client.post(reverse("admin:budgets_budget_add"), {**FORM, "name": "x", "limit": "1.5"})
    assert fractional.status_code == 200
    assert "must be above 0 (a whole number of tokens)" in fractional.content.decode()
    site_match = admin_client.post(reverse("admin:budgets_budget_add"), {**FORM, "name": "y", "scope": "site",
                                                                          "match": "alice"})
    assert "must be a string, and empty for a site budget" in site_match.content.decode()
    assert Budget.objects.count() == 1


def test_counters_and_slots_cannot_be_added_by_hand(admin_client):
    for name in ("budgets_budgetcounter", "budgets_activerunslot"):
        assert admin_client.get(reverse(f"admin:{name}_add")).status_code == 403
        assert admin_client.get(reverse(f"admin:{name}_changelist")).status_code == 200
