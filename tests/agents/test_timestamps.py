"""The runtime's UTC timestamps (``agents.runtime.timestamps``) say what ``datetime.isoformat``
says, to the character: the microseconds written or left out, rounded as ``datetime`` rounds
them, across second, day and year boundaries."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from unittest import mock

from agents.runtime import timestamps
from agents.runtime.timestamps import iso_of, now_iso


def reference_of(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, timezone.utc).isoformat()


def test_iso_of_matches_datetime_over_two_hundred_thousand_stamps():
    rng = random.Random(20261204)
    edges = [0.0, 1.0, 0.5, 1e-7, 0.9999995, 0.99999949, 1796388410.0, 1796388410.0000005,
             1796388410.9999995, 1796388410.9999994, 1798761599.9999996,  # the last instant of 2026
             1798761600.0, 253402300799.0]  # 9999-12-31T23:59:59
    stamps = edges + [rng.uniform(0, 4e9) for _ in range(100_000)] + \
        [rng.randrange(1_700_000_000, 1_900_000_000) + rng.randrange(1_000_000) / 1e6 for _ in range(100_000)]
    mismatched = [s for s in stamps if iso_of(s) != reference_of(s)]
    assert mismatched == []


def test_a_whole_second_has_no_fraction_as_datetime_writes_it():
    assert iso_of(1796388410.0) == "2026-12-04T12:46:50+00:00"
    assert iso_of(1796388410.25) == "2026-12-04T12:46:50.250000+00:00"
    assert iso_of(1796388410.9999996) == "2026-12-04T12:46:51+00:00"  # rounded up into the next second


def test_now_iso_is_datetime_now_rounded_down_to_the_microsecond():
    for nanos in (1796388410_000_000_000, 1796388410_000_000_999, 1796388410_000_001_000, 1796388410_999_999_999,
                  1798761599_999_999_999, 1798761600_000_000_000):
        with mock.patch.object(timestamps.time, "time_ns", return_value=nanos):
            expected = datetime.fromtimestamp(nanos // 10**9, timezone.utc).replace(
                microsecond=nanos % 10**9 // 1000).isoformat()
            assert now_iso() == expected


def test_now_iso_tells_the_time():
    before = datetime.now(timezone.utc)
    stamp = now_iso()
    after = datetime.now(timezone.utc)
    assert before <= datetime.fromisoformat(stamp) <= after
    assert stamp.endswith("+00:00")


def test_a_second_formatted_in_between_never_leaks_into_another():
    """The last second's text is one cached value: alternating seconds each get their own."""
    a, b = 1796388410.5, 1896388410.5
    for _ in range(3):
        assert iso_of(a) == reference_of(a) and iso_of(b) == reference_of(b)
