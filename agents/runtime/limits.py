"""The limits on what callers send, and the debug switch on provider payloads (docs/security.md).

The runtime reads them here, never from Django: a site configures them once at start-up
(``mastra_site.apps`` passes the ``MASTRA_MAX_*`` settings to :func:`configure_limits`); plain
Python use keeps the defaults.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .errors import AgentConfigError, SignalError


@dataclass(frozen=True)
class Limits:
    #: the most bytes one signal or notification may take as compact JSON (contents, attributes,
    #: metadata, provider options; for a notification its summary and payload too)
    max_signal_bytes: int = 1024 * 1024
    #: the most attributes one signal or notification may carry
    max_attributes: int = 64
    #: the most notifications one ``send_notification_signal`` call may send
    max_notifications_per_call: int = 100
    #: the most inputs waiting in one thread's queue (a new one beyond it is refused)
    max_pending_inputs: int = 1000
    #: the highest ``max_steps`` a call may ask for
    max_steps: int = 1000
    #: the highest ``model_settings.max_retries`` a call may ask for
    max_retries: int = 10
    #: keep provider request bodies and response headers in ``step-finish`` (debugging only)
    keep_provider_payloads: bool = False


_current = Limits()


def current_limits() -> Limits:
    return _current


def configure_limits(**values) -> Limits:
    """Replace the named limits (keyword names of :class:`Limits`) and return the new set. A limit
    must be a positive whole number (``max_retries`` may be 0); raises ``AgentConfigError``."""
    global _current
    fields = {f.name for f in dataclasses.fields(Limits)}
    for name, value in values.items():
        if name not in fields:
            raise AgentConfigError(f"limits.{name}", "unknown limit")
        if name == "keep_provider_payloads":
            if not isinstance(value, bool):
                raise AgentConfigError(f"limits.{name}", "must be true or false")
            continue
        low = 0 if name == "max_retries" else 1
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise AgentConfigError(f"limits.{name}", f"must be a whole number of at least {low}")
    _current = dataclasses.replace(_current, **values)
    return _current


def check_pending_inputs(count: int) -> None:
    """Raise ``SignalError`` (``too_many_pending_inputs``) when a thread already has ``count``
    inputs waiting and that is the limit; the caller stores nothing."""
    if count >= _current.max_pending_inputs:
        raise SignalError(f"the thread already has {count} inputs waiting (the limit is "
                          f"{_current.max_pending_inputs})", code="too_many_pending_inputs")
