"""Which runs a scorer scores: ``sampling={"type": "none"}`` (every run, the default) or
``{"type": "ratio", "rate": r}`` (each run with probability ``r``, 0 ≤ r ≤ 1).

The draws come from one process-wide random source; :func:`set_sampling_random` swaps it (tests pass
``random.Random(seed)`` for a reproducible sequence)."""

from __future__ import annotations

import random
from typing import Any

from ..errors import AgentConfigError

_source: Any = random.Random()


def set_sampling_random(source: Any) -> Any:
    """Use ``source`` (an object with ``random()``) for sampling draws; returns the previous one."""
    global _source
    previous, _source = _source, source
    return previous


def sampling_check(sampling: Any, field: str) -> dict:
    """A sampling config, checked; raises :class:`AgentConfigError` naming ``field``."""
    if sampling is None:
        return {"type": "none"}
    if not isinstance(sampling, dict) or sampling.get("type") not in ("none", "ratio"):
        raise AgentConfigError(field, "must be {'type': 'none'} or {'type': 'ratio', 'rate': 0..1}")
    if sampling["type"] == "ratio":
        rate = sampling.get("rate")
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise AgentConfigError(f"{field}.rate", "must be a number between 0 and 1")
    return dict(sampling)


def sampled(sampling: dict) -> bool:
    """Whether this run is scored under ``sampling`` (one draw per ratio decision)."""
    if sampling.get("type", "none") == "none":
        return True
    return _source.random() < sampling["rate"]


__all__ = ["sampled", "sampling_check", "set_sampling_random"]
