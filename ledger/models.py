"""The price table (``ModelPrice``), the ledger's rows (``LedgerEntry``), their daily sums
(``LedgerDaily``, ``LedgerResourceDaily``) and the writes that failed (``LedgerWriteFailure``)."""

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


COST = {"max_digits": 20, "decimal_places": 10}


class LedgerEntry(models.Model):
    """One answered model call of a run (``kind``: one of its steps, or its thread's title asked
    after it): who ran it (agent, editor version, resource, thread, run, channel),
    which model answered it, its tokens as the provider reported them (null: none reported,
    unknown), its latency and its cost (null: the price table has no price for that model on that
    day, or the tokens are unknown; shown as "no price", never 0). Written in batches by
    ``ledger.writer``; :class:`LedgerDaily` and :class:`LedgerResourceDaily` are kept in step with
    it in the same transaction (a title counts there as one more step)."""

    class Kind(models.TextChoices):
        STEP = "step", "step"
        TITLE = "title", "thread title"

    created_at = models.DateTimeField(help_text="the step's end")
    day = models.DateField(help_text="the step's day (UTC)")
    agent_id = models.CharField(max_length=255)
    editor_version = models.CharField(max_length=64, blank=True, default="")
    resource_id = models.CharField(max_length=255, blank=True, default="")
    thread_id = models.CharField(max_length=255, blank=True, default="")
    run_id = models.CharField(max_length=64, db_index=True)
    channel = models.CharField(max_length=16, blank=True, default="")
    provider = models.CharField(max_length=64, blank=True, default="")
    model = models.CharField(max_length=255, blank=True, default="")
    # db_default too: rows written by SQL alone (the benches' fills) are steps
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.STEP, db_default=Kind.STEP,
                            help_text="a step of the run, or its thread's title (asked after the run)")
    step_number = models.PositiveIntegerField(default=0, help_text="a title's: the number of steps of its run")
    input_tokens = models.BigIntegerField(null=True, blank=True)
    output_tokens = models.BigIntegerField(null=True, blank=True)
    cached_input_tokens = models.BigIntegerField(null=True, blank=True)
    reasoning_tokens = models.BigIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(**COST, null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        verbose_name = "ledger entry"
        verbose_name_plural = "ledger entries"
        indexes = [models.Index(fields=["day", "agent_id"], name="ledger_entry_day_agent"),
                   models.Index(fields=["resource_id", "day"], name="ledger_entry_resource_day")]

    @property
    def call_label(self) -> str:
        """``step 2``, or ``title`` (the thread's title, asked after the run)."""
        return "title" if self.kind == self.Kind.TITLE else f"step {self.step_number}"

    def __str__(self) -> str:
        return f"{self.run_id} {self.call_label} ({self.provider}/{self.model})"


class DailySums(models.Model):
    """Sums of ledger rows: ``steps`` counts every step; ``priced_steps`` those with a cost (``cost``
    sums theirs); tokens sum the known counts, ``unknown_usage_steps`` counts the steps with none
    reported."""

    day = models.DateField()
    steps = models.BigIntegerField(default=0)
    priced_steps = models.BigIntegerField(default=0)
    unknown_usage_steps = models.BigIntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cached_input_tokens = models.BigIntegerField(default=0)
    reasoning_tokens = models.BigIntegerField(default=0)
    cost = models.DecimalField(**COST, default=0)

    class Meta:
        abstract = True
        ordering = ["-day"]


class LedgerDaily(DailySums):
    """The ledger summed per day, agent, channel and model: what the costs pages read for every
    dimension but the resource (a few thousand rows a month, whatever the number of steps)."""

    agent_id = models.CharField(max_length=255)
    channel = models.CharField(max_length=16, blank=True, default="")
    provider = models.CharField(max_length=64, blank=True, default="")
    model = models.CharField(max_length=255, blank=True, default="")

    class Meta(DailySums.Meta):
        verbose_name = "cost"
        verbose_name_plural = "costs"
        constraints = [models.UniqueConstraint(fields=["day", "agent_id", "channel", "provider", "model"],
                                               name="ledger_daily_key")]

    def __str__(self) -> str:
        return f"{self.day} {self.agent_id} {self.channel} {self.provider}/{self.model}"


class LedgerResourceDaily(DailySums):
    """The ledger summed per day and resource: the top resources (one row per active resource a day)."""

    resource_id = models.CharField(max_length=255, blank=True, default="")

    class Meta(DailySums.Meta):
        verbose_name = "cost by resource"
        verbose_name_plural = "costs by resource"
        constraints = [models.UniqueConstraint(fields=["day", "resource_id"], name="ledger_resource_daily_key")]

    def __str__(self) -> str:
        return f"{self.day} {self.resource_id}"


class LedgerWriteFailure(models.Model):
    """Steps whose ledger rows could not be written (``kind`` ``failed``: the batch's write raised,
    ``error`` says why) or were dropped because the writer's queue was full (``dropped``): ``count``
    of them, from ``process``. Shown on the dashboard and the costs page: spend is never lost
    silently. (The rows themselves are not kept here: they name resources, which erasure finds by
    their ``resource_id`` columns.)"""

    class Kind(models.TextChoices):
        FAILED = "failed"
        DROPPED = "dropped"

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    count = models.PositiveIntegerField()
    error = models.TextField(blank=True, default="")
    process = models.CharField(max_length=128, blank=True, default="")

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "failed ledger write"

    def __str__(self) -> str:
        return f"{self.kind} {self.count} at {self.created_at:%Y-%m-%d %H:%M}"
