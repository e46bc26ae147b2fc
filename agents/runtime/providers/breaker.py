"""Circuit breakers per provider and model, shared by every run of the process.

After ``breaker_failures`` consecutive failures of one ``provider/model`` (failures that say the
provider is failing: :func:`~agents.runtime.providers.resilience.counts_against_provider`), its
breaker *opens*: runs skip that model (to the next of their chain, or fail at once with
``model_circuit_open`` when it was their last) for ``breaker_cooldown_s``. Then one call is let
through (*half-open*; the others keep skipping it meanwhile): its success closes the breaker, its
failure opens it for another cool-down. A success anywhere resets the count.

The state lives in this process only (a second process learns the outage on its own, after its
own failures): it is a memory of recent calls, not a shared decision. :func:`breakers_snapshot`
lists the breakers that have failures, for the operator dashboard. Times come from the injected
clock of :mod:`agents.runtime.providers.resilience`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from ..redaction import redact_text
from .resilience import counts_against_provider, current_resilience


@dataclass
class _State:
    failures: int = 0  # consecutive
    open_until: float | None = None  # clock time; None: closed
    trial: bool = False  # a half-open trial call is under way
    opened: int = 0  # how many times it opened
    last_error: str = ""
    last_code: str = ""


_states: dict[str, _State] = {}
_lock = threading.Lock()


def breaker_allows(key: str) -> bool:
    """Whether a call of ``key`` (``provider/model``) may go ahead now. An open breaker whose
    cool-down is over lets this one call through as its trial, and keeps skipping others until the
    trial ends (:func:`breaker_success` / :func:`breaker_failure`)."""
    settings = current_resilience()
    if settings.breaker_failures <= 0:
        return True
    with _lock:
        state = _states.get(key)
        if state is None or state.open_until is None:
            return True
        now = settings.clock()
        if now < state.open_until:
            return False
        # half-open: this call is the trial; others wait for its outcome (at most one cool-down)
        state.trial = True
        state.open_until = now + settings.breaker_cooldown_s
        return True


def breaker_success(key: str) -> None:
    """A call of ``key`` succeeded: the breaker closes and its count starts again."""
    with _lock:
        if key in _states:
            del _states[key]


def breaker_failure(key: str, exc: BaseException) -> bool:
    """Count a failed call of ``key``; returns True when the breaker is open after it. Failures that
    do not say the provider is failing (a bad request, a missing key) neither count nor reset."""
    if not counts_against_provider(exc):
        return False
    settings = current_resilience()
    if settings.breaker_failures <= 0:
        return False
    with _lock:
        state = _states.setdefault(key, _State())
        state.failures += 1
        state.last_error = redact_text(str(exc))[:500]
        state.last_code = str(getattr(exc, "code", "") or "")
        if state.trial or state.failures >= settings.breaker_failures:
            if state.open_until is None or state.trial:
                state.opened += 1
            state.trial = False
            state.open_until = settings.clock() + settings.breaker_cooldown_s
            return True
        return False


def breakers_snapshot() -> list[dict[str, Any]]:
    """The breakers with failures, open ones first, then by key: ``{"key", "state" ("open" |
    "half-open" | "closed"), "failures", "reopens_in_s" (open only), "opened", "last_code",
    "last_error"}``."""
    settings = current_resilience()
    now = settings.clock()
    out = []
    with _lock:
        for key, state in _states.items():
            if state.open_until is None:
                kind, left = "closed", None
            elif state.trial:
                kind, left = "half-open", None
            elif now < state.open_until:
                kind, left = "open", round(state.open_until - now, 1)
            else:
                kind, left = "half-open", 0.0  # cool-down over: the next call is the trial
            out.append({"key": key, "state": kind, "failures": state.failures, "reopens_in_s": left,
                        "opened": state.opened, "last_code": state.last_code, "last_error": state.last_error})
    order = {"open": 0, "half-open": 1, "closed": 2}
    return sorted(out, key=lambda b: (order[b["state"]], b["key"]))


def breakers_reset() -> None:
    """Forget every breaker (for tests and after a provider's incident is over)."""
    with _lock:
        _states.clear()


__all__ = ["breaker_allows", "breaker_failure", "breaker_success", "breakers_reset", "breakers_snapshot"]
