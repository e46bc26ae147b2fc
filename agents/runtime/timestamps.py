"""UTC timestamps as the runtime writes them: ``datetime.isoformat`` of an aware UTC datetime
(``2026-12-04T12:57:23.822178+00:00``; no fraction when the microseconds are 0).

A run writes several (its messages' ``createdAt``, its spans' start and end), and building a
``datetime`` for each cost 1.25 µs: a tenth of a ``generate`` without memory (profiled with py-spy,
``bench/agent_overhead.py`` case a). These reuse the date and time of day of the last second they
formatted and write the microseconds after it: 0.5 µs, the same text to the character
(``tests/agents/test_timestamps.py`` checks it against ``datetime``).
"""

from __future__ import annotations

import math
import time
from datetime import datetime, timezone

#: (a second since the epoch, its ``YYYY-MM-DDTHH:MM:SS``): the last one formatted (one tuple,
#: replaced whole, so that threads never see a second with another's text)
_last_second: tuple[int, str] = (-1, "")


def _second_text(seconds: int) -> str:
    global _last_second
    cached = _last_second
    if cached[0] != seconds:
        cached = _last_second = (seconds, datetime.fromtimestamp(seconds, timezone.utc).isoformat()[:19])
    return cached[1]


def _text(seconds: int, micros: int) -> str:
    head = _second_text(seconds)
    return f"{head}.{micros:06d}+00:00" if micros else f"{head}+00:00"


def now_iso() -> str:
    """Now, as ``datetime.now(timezone.utc).isoformat()`` says it (microseconds rounded down)."""
    seconds, nanos = divmod(time.time_ns(), 1_000_000_000)
    return _text(seconds, nanos // 1000)


def iso_of(stamp: float) -> str:
    """Unix seconds, as ``datetime.fromtimestamp(stamp, timezone.utc).isoformat()`` says them
    (microseconds rounded half to even, as ``datetime`` rounds them)."""
    seconds = math.floor(stamp)
    micros = round((stamp - seconds) * 1e6)
    if micros >= 1_000_000:
        seconds, micros = seconds + 1, micros - 1_000_000
    return _text(seconds, micros)


__all__ = ["iso_of", "now_iso"]
