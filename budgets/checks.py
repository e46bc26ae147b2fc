"""System checks of the budgets' settings: a refusal at start rather than a failure in every run."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.core.checks import Error, register


@register()
def check_budget_time_zone(app_configs, **kwargs):
    name = settings.MASTRA_BUDGET_TIME_ZONE
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return [Error(f"MASTRA_BUDGET_TIME_ZONE {name!r} is not a time zone",
                      hint="Use an IANA name such as UTC or Europe/Paris.", id="budgets.E001")]
    return []
