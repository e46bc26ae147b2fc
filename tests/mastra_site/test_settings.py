"""Settings come from the environment (DESIGN §6). Each case imports the settings in a fresh
process with a chosen environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ENV_KEYS = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "MASTRA_DEFAULT_MODEL", "MASTRA_SQLITE_NAME",
            "MASTRA_SQLITE_TEST_NAME", "DB_CONN_MAX_AGE", "DEBUG", "SECRET_KEY", "MASTRA", "WEB_CONCURRENCY",
            "MASTRA_THREAD_LEASE_TTL_MS", "MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S", "MASTRA_NOTIFICATION_SCHEDULER",
            "LOG_LEVEL", "MASTRA_THREAD_DB_THREADS", "MASTRA_ACCEPTS_AT_ONCE")

PROBE = """
import json
import django
django.setup()
from django.conf import settings
from django.db import connections
from channels.layers import get_channel_layer

db = settings.DATABASES["default"]
layer = get_channel_layer()
print(json.dumps({
    "engine": db["ENGINE"], "name": str(db["NAME"]), "host": db.get("HOST"), "port": db.get("PORT"),
    "user": db.get("USER"), "password": db.get("PASSWORD"), "options": db.get("OPTIONS", {}),
    "vendor": connections["default"].vendor,
    "layer_backend": settings.CHANNEL_LAYERS["default"]["BACKEND"],
    "layer_hosts": settings.CHANNEL_LAYERS["default"].get("CONFIG", {}).get("hosts"),
    "layer_config": settings.CHANNEL_LAYERS["default"].get("CONFIG"),
    "layer_class": type(layer).__module__ + "." + type(layer).__name__,
    "broker": settings.CELERY_BROKER_URL, "eager": settings.CELERY_TASK_ALWAYS_EAGER,
    "model": settings.MASTRA_DEFAULT_MODEL, "mastra": settings.MASTRA, "debug": settings.DEBUG,
    "lease_ttl_ms": settings.MASTRA_THREAD_LEASE_TTL_MS, "web_concurrency": settings.WEB_CONCURRENCY,
    "dispatch_interval_s": settings.MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S,
    "conn_max_age": db["CONN_MAX_AGE"], "log_level": settings.LOGGING["root"]["level"],
    "db_threads": settings.MASTRA_THREAD_DB_THREADS, "accepts_at_once": settings.MASTRA_ACCEPTS_AT_ONCE,
}))
"""


def run_probe(**env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ENV_KEYS}
    clean.update(DJANGO_SETTINGS_MODULE="mastra_site.settings", PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=clean, capture_output=True, text=True,
                          timeout=60)


def probe(**env: str) -> dict:
    proc = run_probe(**env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def refusal(**env: str) -> str:
    """The last line of the error a process with this environment stops on while loading settings."""
    proc = run_probe(**env)
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout + proc.stderr
    return proc.stderr.strip().splitlines()[-1]


def test_default_is_sqlite_in_memory_layer_and_echo_model():
    s = probe()
    assert s["engine"] == "django.db.backends.sqlite3"
    assert s["vendor"] == "sqlite"
    assert s["name"] == str(ROOT / "db.sqlite3")
    assert s["options"]["timeout"] == 20
    assert s["layer_backend"] == "channels.layers.InMemoryChannelLayer"
    assert s["layer_class"] == "channels.layers.InMemoryChannelLayer"
    assert s["layer_hosts"] is None
    assert s["broker"] == "" and s["eager"] is True
    assert s["model"] == "local/echo"
    assert s["mastra"] == "mastra_site.mastra:mastra"


def test_database_url_selects_postgresql():
    s = probe(DATABASE_URL="postgres://mastra:s3cret@db.example.internal:5433/mastra_prod")
    assert s["engine"] == "django.db.backends.postgresql"
    assert s["vendor"] == "postgresql"
    assert (s["name"], s["host"], s["port"], s["user"], s["password"]) == (
        "mastra_prod", "db.example.internal", 5433, "mastra", "s3cret")
    assert "init_command" not in s["options"]
    # a database that does not answer fails in seconds (/readyz); the URL may say otherwise
    assert s["options"] == {"connect_timeout": 5}
    assert probe(DATABASE_URL="postgres://u:p@pg:5432/app?connect_timeout=30")["options"] == {"connect_timeout": 30}
    # the channel layer does not depend on the database
    assert s["layer_backend"] == "channels.layers.InMemoryChannelLayer"


def test_redis_url_selects_channels_redis_and_the_celery_broker():
    s = probe(REDIS_URL="redis://cache.example.internal:6380/2")
    assert s["layer_backend"] == "channels_redis.pubsub.RedisPubSubChannelLayer"
    assert s["layer_class"] == "channels_redis.pubsub.RedisPubSubChannelLayer"
    assert s["layer_hosts"] == ["redis://cache.example.internal:6380/2"]
    assert s["broker"] == "redis://cache.example.internal:6380/2" and s["eager"] is False
    assert s["engine"] == "django.db.backends.sqlite3"


def test_production_env_sets_both():
    s = probe(DATABASE_URL="postgres://u:p@pg:5432/app", REDIS_URL="redis://redis:6379/0",
              MASTRA_DEFAULT_MODEL="openai/gpt-4o-mini")
    assert (s["vendor"], s["layer_backend"], s["model"]) == (
        "postgresql", "channels_redis.pubsub.RedisPubSubChannelLayer", "openai/gpt-4o-mini")


def test_the_list_based_channels_redis_layer_may_be_chosen():
    PREFIX = os.environ.get("MASTRA_CHANNEL_PREFIX", "mastra")  # each test run has its own (tests/pytest_env.py)
    s = probe(REDIS_URL="redis://redis:6379/0", MASTRA_CHANNEL_LAYER="core", MASTRA_CHANNEL_CAPACITY="500")
    assert s["layer_backend"] == "channels_redis.core.RedisChannelLayer"
    assert s["layer_config"] == {"hosts": ["redis://redis:6379/0"], "prefix": PREFIX, "capacity": 500, "expiry": 60}
    assert probe(REDIS_URL="redis://redis:6379/0")["layer_config"] == {"hosts": ["redis://redis:6379/0"],
                                                                      "prefix": PREFIX}
    assert refusal(REDIS_URL="redis://redis:6379/0", MASTRA_CHANNEL_LAYER="rabbit") == (
        "django.core.exceptions.ImproperlyConfigured: MASTRA_CHANNEL_LAYER must be one of pubsub, core, not 'rabbit'")


def test_sqlite_file_name_and_default_model_are_configurable():
    s = probe(MASTRA_SQLITE_NAME="other.sqlite3", MASTRA_DEFAULT_MODEL="local/echo")
    assert s["name"] == str(ROOT / "other.sqlite3")
    assert s["model"] == "local/echo"


def test_the_embedded_default_passes_the_system_checks_without_a_warning():
    clean = {k: v for k, v in os.environ.items() if k not in ENV_KEYS}
    clean.update(DJANGO_SETTINGS_MODULE="mastra_site.settings", PYTHONPATH=str(ROOT),
                 MASTRA_SQLITE_NAME=f"check-{os.getpid()}.sqlite3")
    proc = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=clean, capture_output=True,
                          text=True, timeout=60)
    (ROOT / f"check-{os.getpid()}.sqlite3").unlink(missing_ok=True)
    assert proc.returncode == 0, proc.stderr
    assert "System check identified no issues (0 silenced)." in proc.stdout, proc.stdout + proc.stderr


def test_numbers_and_switches_have_defaults():
    s = probe()
    assert (s["lease_ttl_ms"], s["web_concurrency"], s["dispatch_interval_s"], s["conn_max_age"], s["log_level"],
            s["debug"]) == (15_000, 1, 15, 0, "INFO", True)
    s = probe(MASTRA_THREAD_LEASE_TTL_MS=" 1500 ", WEB_CONCURRENCY="4", MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S="60",
              DB_CONN_MAX_AGE="", LOG_LEVEL="warning", DEBUG="Off", REDIS_URL="redis://redis:6379/0")
    assert (s["lease_ttl_ms"], s["web_concurrency"], s["dispatch_interval_s"], s["conn_max_age"], s["log_level"],
            s["debug"]) == (1500, 4, 60, 0, "WARNING", False)


def test_the_inputs_accepted_at_once_follow_the_database_threads_unless_set():
    assert (probe()["db_threads"], probe()["accepts_at_once"]) == (1, 1)
    s = probe(MASTRA_THREAD_DB_THREADS="4")
    assert (s["db_threads"], s["accepts_at_once"]) == (4, 4)
    s = probe(MASTRA_THREAD_DB_THREADS="4", MASTRA_ACCEPTS_AT_ONCE="0")  # 0: no limit
    assert (s["db_threads"], s["accepts_at_once"]) == (4, 0)
    assert probe(MASTRA_ACCEPTS_AT_ONCE="16")["accepts_at_once"] == 16
    assert refusal(MASTRA_ACCEPTS_AT_ONCE="-1") == (
        "django.core.exceptions.ImproperlyConfigured: MASTRA_ACCEPTS_AT_ONCE must be a whole number from 0 to "
        "10000, not '-1'")


def test_a_bad_number_stops_the_process_with_its_bounds():
    assert refusal(WEB_CONCURRENCY="abc") == (
        "django.core.exceptions.ImproperlyConfigured: WEB_CONCURRENCY must be a whole number from 1 to 1024, "
        "not 'abc'")
    for value in ("0", "-5", "1e15", "1000000000000000", "15.5"):
        assert refusal(MASTRA_THREAD_LEASE_TTL_MS=value) == (
            "django.core.exceptions.ImproperlyConfigured: MASTRA_THREAD_LEASE_TTL_MS must be a whole number from "
            f"100 to 3600000, not {value!r}")
    assert refusal(MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S="0") == (
        "django.core.exceptions.ImproperlyConfigured: MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S must be a whole "
        "number from 1 to 86400, not '0'")
    assert refusal(DB_CONN_MAX_AGE="-1") == (
        "django.core.exceptions.ImproperlyConfigured: DB_CONN_MAX_AGE must be a whole number from 0 to 86400, "
        "not '-1'")


def test_a_bad_switch_or_choice_stops_the_process():
    assert refusal(DEBUG="maybe") == (
        "django.core.exceptions.ImproperlyConfigured: DEBUG must be true or false (1/0, yes/no, on/off), "
        "not 'maybe'")
    assert refusal(MASTRA_NOTIFICATION_SCHEDULER="2") == (
        "django.core.exceptions.ImproperlyConfigured: MASTRA_NOTIFICATION_SCHEDULER must be true or false "
        "(1/0, yes/no, on/off), not '2'")
    assert refusal(LOG_LEVEL="loud") == (
        "django.core.exceptions.ImproperlyConfigured: LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, "
        "CRITICAL, not 'loud'")


def test_several_processes_need_a_channel_layer_that_links_them():
    clean = {k: v for k, v in os.environ.items() if k not in ENV_KEYS}
    clean.update(DJANGO_SETTINGS_MODULE="mastra_site.settings", PYTHONPATH=str(ROOT), WEB_CONCURRENCY="2",
                 MASTRA_SQLITE_NAME=f"check-{os.getpid()}.sqlite3")
    proc = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=clean, capture_output=True,
                          text=True, timeout=60)
    (ROOT / f"check-{os.getpid()}.sqlite3").unlink(missing_ok=True)
    assert proc.returncode == 1
    assert "?: (mastra.E003) the in-memory channel layer cannot serve several processes" in proc.stderr, proc.stderr


CELERY_PROBE = """
import json, sys
import django
django.setup()
import redis
from mastra_site.celery import app

prefix = sys.argv[1]
client = redis.Redis.from_url(app.conf.broker_url)
app.send_task("mastra_site.probe", args=[1], queue="celery")
keys = client.keys(prefix + ":*")
print(json.dumps({"keys": sorted(k.decode() for k in keys), "queued": client.llen(prefix + ":celery"),
                  "result_key": app.backend.get_key_for_task("t1").decode()}))
client.delete(*keys)
"""


def test_the_celery_broker_and_results_on_redis_use_the_deployments_prefix(redis_url):
    """Two deployments on one Redis: each takes only its own tasks."""
    import uuid

    prefix = f"test-celery-{uuid.uuid4().hex[:8]}"
    clean = {k: v for k, v in os.environ.items() if k not in ENV_KEYS}
    clean.update(DJANGO_SETTINGS_MODULE="mastra_site.settings", PYTHONPATH=str(ROOT), REDIS_URL=redis_url,
                 MASTRA_CHANNEL_PREFIX=prefix)
    proc = subprocess.run([sys.executable, "-c", CELERY_PROBE, prefix], cwd=ROOT, env=clean, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["keys"] == [f"{prefix}:_kombu.binding.celery", f"{prefix}:_kombu.binding_permanent.celery",
                            f"{prefix}:celery"]
    assert seen["queued"] == 1
    assert seen["result_key"] == f"{prefix}:celery-task-meta-t1"
