"""The price table (``ModelPrice``)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models

PRICE = {"max_digits": 12, "decimal_places": 6}


class ModelPrice(models.Model):
    """The list price of one model from a day on, in USD per million tokens.

    A price change adds a row with a later ``effective_from``; earlier rows stay, so a step is
    always costed at the price of its own day (``ledger.prices.step_cost``). ``cached_input`` empty:
    cached input tokens cost the input price; ``reasoning`` empty: reasoning tokens cost the output
    price (every provider counts them among the output tokens).
    """

    provider = models.CharField(max_length=64)
    model = models.CharField(max_length=255, help_text="the model id as in 'provider/model', e.g. gpt-4o; "
                             "a dated snapshot (gpt-4o-2024-08-06, claude-sonnet-4-5-20250929) takes its price")
    input = models.DecimalField(**PRICE, help_text="USD per million input tokens")
    output = models.DecimalField(**PRICE, help_text="USD per million output tokens")
    cached_input = models.DecimalField(**PRICE, null=True, blank=True,
                                       help_text="USD per million cached input tokens (empty: the input price)")
    reasoning = models.DecimalField(**PRICE, null=True, blank=True,
                                    help_text="USD per million reasoning tokens (empty: the output price)")
    currency = models.CharField(max_length=3, default="USD", editable=False)
    effective_from = models.DateField(help_text="the first day (UTC) this price applies to")
    note = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        ordering = ["provider", "model", "-effective_from"]
        constraints = [models.UniqueConstraint(fields=["provider", "model", "effective_from"],
                                               name="ledger_price_unique_day")]
        verbose_name = "model price"

    def __str__(self) -> str:
        return f"{self.provider}/{self.model} from {self.effective_from}"

    def clean(self) -> None:
        for name in ("input", "output", "cached_input", "reasoning"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValidationError({name: "a price is not negative"})
