"""The price table: shipped defaults, effective dates, the providers' token conventions, the
no-query lookup and the admin that adds prices without rewriting them."""

from __future__ import annotations

from datetime import date, datetime, timezone
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ledger.models import ModelPrice
from ledger.prices import prices_forget, step_cost

pytestmark = pytest.mark.django_db

AT = datetime(2026, 6, 1, 12, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def fresh_table():
    prices_forget()
    yield
    prices_forget()


def test_shipped_defaults_price_the_listed_models():
    assert step_cost("openai", "gpt-4o", {"inputTokens": 1_000_000, "outputTokens": 1_000_000}, AT) == Decimal("12.5")
    assert step_cost("anthropic", "claude-sonnet-4-5", {"inputTokens": 1000, "outputTokens": 500}, AT) \
        == Decimal("0.0105")
    assert step_cost("google", "gemini-2.5-flash", {"inputTokens": 2000, "outputTokens": 100}, AT) \
        == Decimal("0.00085")
    assert step_cost("local", "echo", {"inputTokens": 5, "outputTokens": 3}, AT) == Decimal("0")


def test_a_model_without_a_price_is_none_not_zero():
    assert step_cost("openai", "gpt-unknown", {"inputTokens": 10, "outputTokens": 10}, AT) is None
    assert step_cost("acme", "gpt-4o", {"inputTokens": 10, "outputTokens": 10}, AT) is None
    # before the first effective day: no price either
    assert step_cost("openai", "gpt-4o", {"inputTokens": 10, "outputTokens": 10},
                     datetime(2024, 12, 31, 23, 59, tzinfo=timezone.utc)) is None


def test_a_step_without_reported_usage_has_no_cost():
    assert step_cost("openai", "gpt-4o", {}, AT) is None
    assert step_cost("openai", "gpt-4o", {"totalTokens": 5}, AT) is None


def test_a_dated_snapshot_takes_its_models_price():
    usage = {"inputTokens": 1_000_000, "outputTokens": 0}
    assert step_cost("openai", "gpt-4o-2024-08-06", usage, AT) == Decimal("2.5")
    assert step_cost("anthropic", "claude-sonnet-4-5-20250929", usage, AT) == Decimal("3")
    assert step_cost("openai", "gpt-4o-mini-2024-07-18", usage, AT) == Decimal("0.15")
    assert step_cost("openai", "gpt-4o-audio-preview", usage, AT) is None  # not a snapshot: no guess


def test_cached_and_reasoning_tokens_follow_each_providers_counting():
    # OpenAI counts cached input among the input tokens, reasoning among the output tokens
    usage = {"inputTokens": 1_000_000, "cachedInputTokens": 400_000, "outputTokens": 1_000_000,
             "reasoningTokens": 600_000}
    assert step_cost("openai", "gpt-4o", usage, AT) == Decimal("1.5") + Decimal("0.5") + Decimal("10")
    # Anthropic reports cache reads beside its input tokens
    usage = {"inputTokens": 1_000_000, "cachedInputTokens": 1_000_000, "outputTokens": 0}
    assert step_cost("anthropic", "claude-sonnet-4-5", usage, AT) == Decimal("3.3")
    # snake_case keys (the runtime's own form) read the same
    assert step_cost("openai", "gpt-4o", {"input_tokens": 1_000_000, "cached_input_tokens": 400_000,
                                          "output_tokens": 0}, AT) == Decimal("2")


def test_a_reasoning_price_of_its_own_applies_to_the_reasoning_tokens():
    ModelPrice.objects.create(provider="acme", model="thinker", input=Decimal("1"), output=Decimal("2"),
                              reasoning=Decimal("4"), effective_from=date(2026, 1, 1))
    usage = {"inputTokens": 0, "outputTokens": 1_000_000, "reasoningTokens": 250_000}
    assert step_cost("acme", "thinker", usage, AT) == Decimal("1.5") + Decimal("1")


def test_a_price_change_applies_from_its_day_and_leaves_earlier_steps_alone():
    ModelPrice.objects.create(provider="openai", model="gpt-4o", input=Decimal("5"), output=Decimal("20"),
                              effective_from=date(2026, 6, 1))
    usage = {"inputTokens": 1_000_000, "outputTokens": 0}
    assert step_cost("openai", "gpt-4o", usage, datetime(2026, 5, 31, 23, 59, tzinfo=timezone.utc)) == Decimal("2.5")
    assert step_cost("openai", "gpt-4o", usage, AT) == Decimal("5")
    assert ModelPrice.objects.filter(provider="openai", model="gpt-4o").count() == 2


def test_the_lookup_costs_no_query_once_loaded():
    usage = {"inputTokens": 10, "outputTokens": 10}
    step_cost("openai", "gpt-4o", usage, AT)
    with CaptureQueriesContext(connection) as queries:
        for _ in range(100):
            step_cost("openai", "gpt-4o", usage, AT)
            step_cost("openai", "no-such-model", usage, AT)
    assert len(queries) == 0


def test_an_edit_in_this_process_is_seen_at_once():
    usage = {"inputTokens": 1_000_000, "outputTokens": 0}
    assert step_cost("acme", "m", usage, AT) is None
    ModelPrice.objects.create(provider="acme", model="m", input=Decimal("7"), output=Decimal("7"),
                              effective_from=date(2026, 1, 1))
    assert step_cost("acme", "m", usage, AT) == Decimal("7")


def test_the_admin_adds_a_price_and_shows_saved_prices_read_only(client):
    admin = get_user_model().objects.create_superuser("alice", "alice@example.com", "pw")
    client.force_login(admin)
    row = ModelPrice.objects.get(provider="openai", model="gpt-4o")
    page = client.get(f"/admin/ledger/modelprice/{row.pk}/change/")
    assert page.status_code == 200
    body = page.content.decode()
    assert 'name="input"' not in body and "New price from this one" in body
    # a POST that tries to rewrite the price changes nothing
    client.post(f"/admin/ledger/modelprice/{row.pk}/change/", {"input": "99", "output": "99", "note": "x"})
    row.refresh_from_db()
    assert row.input == Decimal("2.5") and row.note == "x"
    added = client.post("/admin/ledger/modelprice/add/", {
        "provider": "openai", "model": "gpt-4o", "input": "3", "output": "12", "cached_input": "",
        "reasoning": "", "effective_from": "2026-07-01", "note": "new list price"})
    assert added.status_code == 302
    assert list(ModelPrice.objects.filter(provider="openai", model="gpt-4o").values_list("effective_from", "input")) \
        == [(date(2026, 7, 1), Decimal("3.000000")), (date(2025, 1, 1), Decimal("2.500000"))]
