"""Deleting a test run's own keys from a shared Redis (never ``FLUSHDB``: other runs share it)."""

from __future__ import annotations


def forget_keys(redis_url: str, pattern: str) -> None:
    """Delete the keys of ``redis_url`` that match ``pattern`` (``SCAN``'s glob)."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        keys = list(client.scan_iter(match=pattern))
        if keys:
            client.delete(*keys)
    finally:
        client.close()
