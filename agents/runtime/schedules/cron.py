"""Cron expressions: validation and fire times in a time zone, daylight-saving transitions included.

An expression has 5 fields (``minute hour day-of-month month day-of-week``), 6 (``second`` first) or
7 (``second`` first, ``year`` last), as Mastra's (croner's) do, or is one of the nicknames
:data:`NICKNAMES`. Parsing and matching are croniter's; this module adds the time zone.

Fire times are computed on the zone's wall clock, then placed on the real time line:

- a wall time that does not exist (the hour skipped when clocks jump forward) fires at the same
  distance past the jump: a daily 02:30 in Europe/Paris fires at 03:30 CEST on the day of the jump;
- a wall time that happens twice (the hour repeated when clocks go back) fires once, at its first
  occurrence, unless the hour field is a wildcard (``* * * * *``, ``*/15 * * * *``, ``@hourly``):
  such a schedule keeps its pace through the repeated hour and fires at both occurrences (as
  Vixie cron does);
- fire times are strictly increasing: two wall times that land on the same instant fire once.

So a daily schedule fires exactly once each day, whatever the transitions.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone as dt_timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from croniter.croniter import CroniterError

from ..errors import MastraError

NICKNAMES = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
#: the longest expression kept (the column that stores it)
MAX_CRON = 255
#: how far ahead a first fire time is looked for (an expression that never fires in this window,
#: ``0 0 30 2 *``, is refused)
HORIZON_YEARS = 10
UTC = dt_timezone.utc


class CronError(MastraError):
    """A cron expression or a time zone that cannot be used (``invalid_cron``, ``invalid_timezone``)."""

    code = "invalid_cron"


def zone(name: str | None) -> ZoneInfo | dt_timezone:
    """The IANA zone ``name`` (UTC when None); :class:`CronError` ``invalid_timezone`` otherwise."""
    if name is None:
        return UTC
    try:
        if not isinstance(name, str) or not name or len(name) > 64 or name.startswith("/") or ".." in name:
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CronError(f'Invalid timezone "{name}": not an IANA time zone (e.g. "Europe/Paris", "UTC")',
                        code="invalid_timezone") from None


def hour_is_wildcard(text: str, seconds: bool) -> bool:
    """Whether the (normalized) expression's hour field is ``*`` or ``*/n``."""
    return text.split(" ")[2 if seconds else 1].startswith("*")


def normalized(cron: str) -> tuple[str, bool]:
    """``(expression for croniter, whether it has a seconds field)``; :class:`CronError` when it is
    not 5, 6 or 7 fields or a nickname."""
    if not isinstance(cron, str) or not cron.strip():
        raise CronError('Invalid cron expression: expected a non-empty cron string (e.g. "0 * * * *"), '
                        f"but received {cron!r}.")
    if len(cron) > MAX_CRON:
        raise CronError(f"Invalid cron expression: longer than {MAX_CRON} characters.")
    text = " ".join(cron.split())
    if text.startswith("@"):
        if text.lower() not in NICKNAMES:
            raise CronError(f'Invalid cron expression "{cron}": unknown nickname; use one of '
                            f"{', '.join(NICKNAMES)}.")
        return NICKNAMES[text.lower()], False
    fields = len(text.split(" "))
    if fields not in (5, 6, 7):
        raise CronError(f'Invalid cron expression "{cron}": exactly five, six or seven space separated parts '
                        "are required (six or seven: seconds first; seven: year last).")
    return text, fields > 5


def _iterator(cron: str, start: datetime) -> croniter:
    text, seconds = normalized(cron)
    try:
        return croniter(text, start, second_at_beginning=seconds, max_years_between_matches=HORIZON_YEARS)
    except (CroniterError, ValueError, KeyError, TypeError) as exc:
        raise CronError(f'Invalid cron expression "{cron}": {exc}') from None


def to_utc(wall: datetime, tz) -> datetime:
    """The instant of the naive wall time ``wall`` in ``tz`` (first occurrence when repeated; past
    the jump when skipped: ``fold=0`` takes the offset in force before the transition)."""
    return wall.replace(tzinfo=tz, fold=0).astimezone(UTC)


def _instants(wall: datetime, tz, both_folds: bool) -> list[datetime]:
    first = to_utc(wall, tz)
    if not both_folds:
        return [first]
    second = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    # a repeated wall time has two instants; a skipped one maps back to another wall time
    repeated = second != first and second.astimezone(tz).replace(tzinfo=None) == wall
    return [first, second] if repeated else [first]


def fire_times(cron: str, timezone: str | None, after: datetime) -> Iterator[datetime]:
    """The fire times (aware, UTC) strictly after ``after`` (aware), in increasing order, forever
    (or until the expression has no more: a year field)."""
    tz = zone(timezone)
    if after.tzinfo is None:
        raise ValueError("after must be an aware datetime")
    text, seconds = normalized(cron)
    both_folds = hour_is_wildcard(text, seconds) and tz is not UTC
    wall = after.astimezone(tz).replace(tzinfo=None)
    # start two hours earlier on the wall clock: after a clock went back, wall times up to that
    # much before ``after``'s own may still be ahead of it (they are skipped below when they are not)
    it = _iterator(cron, wall - timedelta(hours=2, microseconds=wall.microsecond))
    last = after
    pending: list[datetime] = []  # a repeated hour's second instants wait for their turn here
    while True:
        try:
            wall_next = it.get_next(datetime)
        except CroniterError:
            break
        instants = _instants(wall_next, tz, both_folds)
        for instant in instants[1:]:
            heapq.heappush(pending, instant)
        while pending and pending[0] <= instants[0]:
            instant = heapq.heappop(pending)
            if instant > last:
                last = instant
                yield instant
        if instants[0] > last:
            last = instants[0]
            yield instants[0]
    while pending:
        instant = heapq.heappop(pending)
        if instant > last:
            last = instant
            yield instant


def next_fire_after(cron: str, timezone: str | None, after: datetime) -> datetime:
    """The first fire time strictly after ``after``; :class:`CronError` when there is none within
    :data:`HORIZON_YEARS`."""
    for instant in fire_times(cron, timezone, after):
        return instant
    raise CronError(f'Cron expression "{cron}" has no future occurrence after {after.isoformat()}')


def cron_check(cron: str, timezone: str | None, *, now: datetime) -> datetime:
    """Validate ``cron`` and ``timezone`` (Mastra's ``validateCron``) and return the next fire time
    after ``now``; :class:`CronError` with a message naming the problem."""
    zone(timezone)
    return next_fire_after(cron, timezone, now)


def next_fire_times(cron: str, timezone: str | None, after: datetime, count: int = 5) -> list[datetime]:
    """The next ``count`` fire times after ``after`` (the admin form shows five)."""
    out = []
    for instant in fire_times(cron, timezone, after):
        out.append(instant)
        if len(out) == count:
            break
    return out
