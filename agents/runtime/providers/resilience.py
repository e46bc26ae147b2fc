"""How a run waits before asking a failed model again: backoff with jitter, ``Retry-After``, and
which failures retrying cannot fix.

A model step that fails with a :class:`~agents.runtime.errors.ModelError` is

- asked again of the same model when the error is ``retryable`` (HTTP 408, 409, 429, 5xx, a dropped
  connection or a cut stream, a timeout), at most ``max_retries`` times, after
  :func:`retry_delay`: the provider's ``Retry-After`` (``retry-after-ms`` or ``retry-after``) when
  it sent one, capped at ``retry_after_max_s``; otherwise exponential backoff with jitter,
  ``base × factor^n`` capped at ``retry_max_s``, of which the second half is random;
- handed at once to the next model of the chain otherwise (401, 403, 400 invalid request, a
  context too long, a missing key): asking the same model again would fail the same way.

A ``Retry-After`` longer than the cap sends the step to the next model at once when there is one
(waiting the cap and asking again would most likely be refused again), else the cap is waited.

The settings are the process's (:func:`configure_resilience`; the site passes its
``MASTRA_RETRY_*`` and ``MASTRA_BREAKER_*`` settings at start-up). ``sleep``, ``clock`` and
``random`` are injectable so that tests see the exact waits without waiting them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random as random_module
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from ..errors import AgentConfigError, ModelError

#: statuses that say the provider (not the request) failed: they count against its circuit breaker
PROVIDER_FAULT_STATUSES = frozenset({401, 403, 408, 409, 429})


@dataclass(frozen=True)
class Resilience:
    #: the first backoff, in seconds (the n-th retry waits up to ``retry_base_s × retry_factor^n``)
    retry_base_s: float = 1.0
    retry_factor: float = 2.0
    #: the longest backoff, in seconds
    retry_max_s: float = 30.0
    #: the longest wait a provider's ``Retry-After`` gets, in seconds
    retry_after_max_s: float = 30.0
    #: consecutive failures of one provider/model that open its circuit breaker (0: no breaker)
    breaker_failures: int = 5
    #: seconds an open breaker skips its model before one trial call is let through
    breaker_cooldown_s: float = 30.0
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    clock: Callable[[], float] = time.monotonic
    random: Callable[[], float] = random_module.random


_current = Resilience()

_NUMBERS = {"retry_base_s": 0.0, "retry_factor": 1.0, "retry_max_s": 0.0, "retry_after_max_s": 0.0,
            "breaker_cooldown_s": 0.0}


def current_resilience() -> Resilience:
    return _current


def configure_resilience(**values: Any) -> Resilience:
    """Replace the named settings (keyword names of :class:`Resilience`) and return the new set;
    raises ``AgentConfigError`` for an unknown name or a value out of range."""
    global _current
    fields = {f.name for f in dataclasses.fields(Resilience)}
    for name, value in values.items():
        if name not in fields:
            raise AgentConfigError(f"resilience.{name}", "unknown setting")
        if name in _NUMBERS:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < _NUMBERS[name]:
                raise AgentConfigError(f"resilience.{name}", f"must be a number of at least {_NUMBERS[name]}")
        elif name == "breaker_failures":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise AgentConfigError(f"resilience.{name}", "must be a whole number of at least 0")
        elif not callable(value):
            raise AgentConfigError(f"resilience.{name}", "must be callable")
    _current = dataclasses.replace(_current, **values)
    return _current


def set_resilience(settings: Resilience) -> Resilience:
    """Put back a whole set of settings (one :func:`current_resilience` returned, for tests)."""
    global _current
    _current = settings
    return _current


def is_retryable(exc: BaseException) -> bool:
    """Whether asking the same model again may succeed (the provider marked the error so)."""
    return isinstance(exc, ModelError) and exc.retryable


def counts_against_provider(exc: BaseException) -> bool:
    """Whether ``exc`` says the provider/model is failing (a circuit breaker counts it): a retryable
    error, a 5xx, or a refused key (401/403); not a request the provider judged invalid (400,
    404, 413, 422, a context too long) and not a key missing here."""
    if not isinstance(exc, ModelError):
        return False
    status = exc.status or 0
    return exc.retryable or status in PROVIDER_FAULT_STATUSES or status >= 500


def backoff_s(retry_number: int, settings: Resilience | None = None) -> float:
    """The backoff before retry ``retry_number`` (0 for the first): half of
    ``min(retry_max_s, retry_base_s × retry_factor^n)`` fixed, the other half random."""
    s = settings or _current
    ceiling = min(s.retry_max_s, s.retry_base_s * (s.retry_factor ** retry_number))
    return ceiling / 2 + s.random() * ceiling / 2


def retry_delay(exc: BaseException, *, retry_number: int, retries_left: int, other_models: bool,
                settings: Resilience | None = None) -> float | None:
    """Seconds to wait before asking the same model again after ``exc``, or None: go to the next
    model now (not retryable, no retries left, or a ``Retry-After`` beyond the cap while another
    model can answer). See the module docstring."""
    s = settings or _current
    if not is_retryable(exc) or retries_left <= 0:
        return None
    asked = exc.retry_after if isinstance(exc, ModelError) else None
    if asked is not None:
        if asked > s.retry_after_max_s and other_models:
            return None
        return min(asked, s.retry_after_max_s)
    return backoff_s(retry_number, s)


__all__ = ["PROVIDER_FAULT_STATUSES", "Resilience", "backoff_s", "configure_resilience", "counts_against_provider",
           "current_resilience", "is_retryable", "retry_delay", "set_resilience"]
