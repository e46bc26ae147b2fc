"""The default cache (DRF's rate counters): Redis shared by the processes when REDIS_URL is set,
with a key prefix per deployment (and per test run); a per-process cache otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json
import django
django.setup()
from django.conf import settings
from django.core.cache import caches
cache = caches["default"]
print(json.dumps({**settings.CACHES["default"], "class": type(cache).__module__ + "." + type(cache).__name__}))
"""


def cache_settings(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("REDIS_URL", "MASTRA_CHANNEL_PREFIX", "MASTRA_CACHE_PREFIX", "DATABASE_URL")}
    clean.update(DJANGO_SETTINGS_MODULE="mastra_site.settings", PYTHONPATH=str(ROOT), **env)
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=clean, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_without_redis_the_cache_is_the_process_s_own():
    assert cache_settings() == {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                                "class": "django.core.cache.backends.locmem.LocMemCache"}


def test_with_redis_the_cache_is_redis_under_the_channel_prefix():
    assert cache_settings(REDIS_URL="redis://redis.internal:6380/2", MASTRA_CHANNEL_PREFIX="site-a") == {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://redis.internal:6380/2",
        "KEY_PREFIX": "site-a", "class": "django.core.cache.backends.redis.RedisCache"}
    assert cache_settings(REDIS_URL="redis://redis:6379/0")["KEY_PREFIX"] == "mastra"
    assert cache_settings(REDIS_URL="redis://redis:6379/0", MASTRA_CHANNEL_PREFIX="site-a",
                          MASTRA_CACHE_PREFIX="cache-a")["KEY_PREFIX"] == "cache-a"


def test_a_test_run_has_its_own_prefix():
    from django.conf import settings

    # tests/pytest_env.py gives each run its channel prefix, which the cache prefix follows
    assert settings.MASTRA_CACHE_PREFIX == os.environ["MASTRA_CHANNEL_PREFIX"] == f"mastra-test-{os.getpid()}"
