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
    import redis

    client = redis.Redis.from_url(config["LOCATION"])
    try:
        keys = list(client.scan_iter(cache.make_key("throttle_*")))
        if keys:
            client.delete(*keys)
    finally:
        client.close()
