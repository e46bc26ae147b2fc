"""The send routes' rate counters, forgotten between tests."""

from __future__ import annotations


def clear_rate_counters() -> None:
    """Forget the send routes' rate counters. On Redis only this run's keys (its prefix): Django's
    ``RedisCache.clear()`` would flush the whole database, other runs' channels and counters too."""
    from django.conf import settings
    from django.core.cache import cache

    config = settings.CACHES["default"]
    if not config["BACKEND"].endswith(".RedisCache"):
        cache.clear()
        return
    from tests.redis_keys import forget_keys

    forget_keys(config["LOCATION"], cache.make_key("throttle_*"))
