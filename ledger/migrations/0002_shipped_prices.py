"""The shipped default prices: the providers' public list prices in USD per million tokens, from
2025-01-01 (standard tier; Google's for prompts up to 200k tokens). Operators edit them in the admin
(a change adds a row with its own effective date). ``local/echo`` is the offline test model: free."""

from datetime import date
from decimal import Decimal

from django.db import migrations

FROM = date(2025, 1, 1)
NOTE = "shipped default (list price)"

#: (provider, model, input, output, cached input); reasoning tokens cost the output price
PRICES = [
    ("openai", "gpt-5", "1.25", "10.00", "0.125"),
    ("openai", "gpt-5-mini", "0.25", "2.00", "0.025"),
    ("openai", "gpt-5-nano", "0.05", "0.40", "0.005"),
    ("openai", "gpt-4.1", "2.00", "8.00", "0.50"),
    ("openai", "gpt-4.1-mini", "0.40", "1.60", "0.10"),
    ("openai", "gpt-4.1-nano", "0.10", "0.40", "0.025"),
    ("openai", "gpt-4o", "2.50", "10.00", "1.25"),
    ("openai", "gpt-4o-mini", "0.15", "0.60", "0.075"),
    ("openai", "o1", "15.00", "60.00", "7.50"),
    ("openai", "o3", "2.00", "8.00", "0.50"),
    ("openai", "o3-mini", "1.10", "4.40", "0.55"),
    ("openai", "o4-mini", "1.10", "4.40", "0.275"),
    ("anthropic", "claude-opus-4-5", "5.00", "25.00", "0.50"),
    ("anthropic", "claude-opus-4-1", "15.00", "75.00", "1.50"),
    ("anthropic", "claude-opus-4-0", "15.00", "75.00", "1.50"),
    ("anthropic", "claude-opus-4", "15.00", "75.00", "1.50"),
    ("anthropic", "claude-sonnet-4-5", "3.00", "15.00", "0.30"),
    ("anthropic", "claude-sonnet-4-0", "3.00", "15.00", "0.30"),
    ("anthropic", "claude-sonnet-4", "3.00", "15.00", "0.30"),
    ("anthropic", "claude-3-7-sonnet", "3.00", "15.00", "0.30"),
    ("anthropic", "claude-haiku-4-5", "1.00", "5.00", "0.10"),
    ("anthropic", "claude-3-5-haiku", "0.80", "4.00", "0.08"),
    ("google", "gemini-2.5-pro", "1.25", "10.00", "0.125"),
    ("google", "gemini-2.5-flash", "0.30", "2.50", "0.03"),
    ("google", "gemini-2.5-flash-lite", "0.10", "0.40", "0.01"),
    ("google", "gemini-2.0-flash", "0.10", "0.40", "0.025"),
    ("google", "gemini-2.0-flash-lite", "0.075", "0.30", None),
    ("local", "echo", "0", "0", None),
]


def add_prices(apps, schema_editor):
    ModelPrice = apps.get_model("ledger", "ModelPrice")
    for provider, model, inp, out, cached in PRICES:
        ModelPrice.objects.get_or_create(
            provider=provider, model=model, effective_from=FROM,
            defaults={"input": Decimal(inp), "output": Decimal(out),
                      "cached_input": Decimal(cached) if cached is not None else None,
                      "note": "offline test model" if provider == "local" else NOTE})


def remove_prices(apps, schema_editor):
    ModelPrice = apps.get_model("ledger", "ModelPrice")
    for provider, model, *_ in PRICES:
        ModelPrice.objects.filter(provider=provider, model=model, effective_from=FROM).delete()


class Migration(migrations.Migration):
    dependencies = [("ledger", "0001_model_prices")]
    operations = [migrations.RunPython(add_prices, remove_prices)]
