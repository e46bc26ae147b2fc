"""What a model step cost, from the price table (``ledger.models.ModelPrice``).

:func:`step_cost` reads a copy of the whole table kept in the process (a few hundred rows at most):
in steady state a call costs no query. The copy is reloaded after ``PRICE_CACHE_SECONDS`` (setting
``LEDGER_PRICE_CACHE_SECONDS``, default 60), at once after an edit in this process
(:func:`prices_forget`, connected to the model's signals), so an admin edit reaches every process
within that time.

How the providers count tokens decides the formula. Every provider counts reasoning tokens among
the output tokens. OpenAI and Google (and OpenAI-compatible servers) count cached input tokens among
the input tokens; Anthropic reports its cache reads beside them (``CACHED_BESIDE_INPUT``).
"""

from __future__ import annotations

import bisect
import re
import threading
import time
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal

from django.conf import settings

#: providers whose cached input tokens are not among their input tokens
CACHED_BESIDE_INPUT = frozenset({"anthropic"})
#: a dated snapshot or alias of a listed model takes the listed model's price
SNAPSHOT_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")
MILLION = Decimal(1_000_000)
#: costs are kept to 1e-10 USD (a token of the cheapest model costs about 5e-8)
COST_QUANTUM = Decimal("0.0000000001")


@dataclass(frozen=True)
class Price:
    """One row of the table, as :func:`step_cost` uses it (USD per million tokens)."""

    effective_from: date
    input: Decimal
    output: Decimal
    cached_input: Decimal | None
    reasoning: Decimal | None


_lock = threading.Lock()
_table: dict[tuple[str, str], tuple[list[date], list[Price]]] | None = None
_loaded_at = 0.0


def cache_seconds() -> float:
    return float(getattr(settings, "LEDGER_PRICE_CACHE_SECONDS", 60))


def prices_forget(*args, **kwargs) -> None:
    """Drop this process's copy of the table (the next lookup reads it again)."""
    global _table
    with _lock:
        _table = None


def _load() -> dict[tuple[str, str], tuple[list[date], list[Price]]]:
    from .models import ModelPrice

    table: dict[tuple[str, str], list[Price]] = {}
    for row in ModelPrice.objects.order_by("effective_from").values_list(
            "provider", "model", "effective_from", "input", "output", "cached_input", "reasoning"):
        provider, model, day, inp, out, cached, reasoning = row
        table.setdefault((provider, model), []).append(Price(day, inp, out, cached, reasoning))
    return {key: ([p.effective_from for p in rows], rows) for key, rows in table.items()}


def prices_table() -> dict[tuple[str, str], tuple[list[date], list[Price]]]:
    """The table by ``(provider, model)``: effective days ascending and their prices."""
    global _table, _loaded_at
    table = _table
    if table is not None and time.monotonic() - _loaded_at < cache_seconds():
        return table
    with _lock:
        if _table is None or time.monotonic() - _loaded_at >= cache_seconds():
            _table = _load()
            _loaded_at = time.monotonic()
        return _table


def price_at(provider: str, model: str, at: datetime) -> Price | None:
    """The price of ``provider/model`` on ``at``'s day (UTC), else None. A dated snapshot
    (``gpt-4o-2024-08-06``) or ``-latest`` alias without a row of its own takes its model's price."""
    table = prices_table()
    found = table.get((provider, model))
    if found is None:
        base = SNAPSHOT_SUFFIX.sub("", model)
        found = table.get((provider, base)) if base != model else None
    if found is None:
        return None
    days, rows = found
    day = (at.astimezone(timezone.utc) if at.tzinfo is not None else at).date()
    index = bisect.bisect_right(days, day) - 1
    return rows[index] if index >= 0 else None


def _count(usage: dict, camel: str, snake: str) -> int | None:
    value = usage.get(camel, usage.get(snake))
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def step_cost(provider: str, model: str, usage: dict, at: datetime) -> Decimal | None:
    """The cost in USD of one model step of ``provider/model`` at ``at`` with ``usage`` as the
    runtime reports it (``inputTokens``, ``outputTokens``, ``cachedInputTokens``,
    ``reasoningTokens``; the snake_case keys are read too). None when the table has no price for
    that model on that day, or when the usage holds no token count (the provider reported none):
    unknown, never 0."""
    if not usage:
        return None
    inp = _count(usage, "inputTokens", "input_tokens")
    out = _count(usage, "outputTokens", "output_tokens")
    if inp is None and out is None:
        return None
    price = price_at(provider, model, at)
    if price is None:
        return None
    inp, out = inp or 0, out or 0
    cached = _count(usage, "cachedInputTokens", "cached_input_tokens") or 0
    reasoning = _count(usage, "reasoningTokens", "reasoning_tokens") or 0
    if provider in CACHED_BESIDE_INPUT:
        fresh = inp
    else:
        fresh, cached = max(inp - cached, 0), min(cached, inp)
    reasoning = min(reasoning, out)
    cached_price = price.cached_input if price.cached_input is not None else price.input
    reasoning_price = price.reasoning if price.reasoning is not None else price.output
    total = (fresh * price.input + cached * cached_price + (out - reasoning) * price.output
             + reasoning * reasoning_price) / MILLION
    return total.quantize(COST_QUANTUM)


__all__ = ["CACHED_BESIDE_INPUT", "Price", "price_at", "prices_forget", "prices_table", "step_cost"]
