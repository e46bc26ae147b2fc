"""Safe defaults and the start-up refusal of unsafe ones (docs/security.md). Each case runs
Django in a fresh process with a chosen environment."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# every variable these tests set, removed from the inherited environment first
ENV_KEYS = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS",
            "MASTRA_SECRET_KEY_FILE", "MASTRA_SQLITE_NAME", "WEB_CONCURRENCY", "SECURE_SSL_REDIRECT",
            "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS",
            "SECURE_HSTS_PRELOAD", "SECURE_PROXY_SSL_HEADER", "CSRF_TRUSTED_ORIGINS", "MASTRA_MAX_SIGNAL_BYTES",
            "MASTRA_MAX_SIGNAL_ATTRIBUTES", "MASTRA_MAX_NOTIFICATIONS_PER_CALL", "MASTRA_MAX_PENDING_INPUTS",
            "MASTRA_MAX_STEPS", "MASTRA_MAX_RETRIES", "MASTRA_KEEP_PROVIDER_PAYLOADS", "MASTRA_CHANNEL_CAPACITY",
            "MASTRA_CHANNEL_EXPIRY_S", "MASTRA_SQLITE_TIMEOUT_S", "MASTRA_API_CORS_ORIGINS")
LONG_KEY = "k8Qz-3vN_p1Lw7Rx9Tb2Yc5Hd0Jf4Gs6Am8Ue1Io3Py7Ka2Wn5Zq9Xe4Vr6Bt0Cm"
PUBLIC = {"ALLOWED_HOSTS": "mastra.example.com"}

PROBE = """
import dataclasses, json
import django
django.setup()
from django.conf import settings
from agents.runtime.limits import current_limits
print(json.dumps({"debug": settings.DEBUG, "key": settings.SECRET_KEY, "from_env": settings.SECRET_KEY_FROM_ENV,
                  "hsts": settings.SECURE_HSTS_SECONDS, "proxy": settings.SECURE_PROXY_SSL_HEADER,
                  "limits": dataclasses.asdict(current_limits())}))
"""


@pytest.fixture
def env(tmp_path):
    """A clean environment: a SQLite file and a secret-key file of this test's own."""
    clean = {k: v for k, v in os.environ.items() if k not in ENV_KEYS}
    clean.update(DJANGO_SETTINGS_MODULE="mastra_site.settings", PYTHONPATH=str(ROOT),
                 MASTRA_SQLITE_NAME=str(tmp_path / "db.sqlite3"), MASTRA_SECRET_KEY_FILE=str(tmp_path / "secret"))
    return clean


def run(env: dict, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env={**env, **extra}, capture_output=True, text=True,
                          timeout=90)


def probe(env: dict, **extra: str) -> dict:
    proc = run(env, "-c", PROBE, **extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def last_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return proc.stderr.strip().splitlines()[-1]


def test_the_laptop_default_is_loopback_only_with_a_generated_key(env, tmp_path):
    first = probe(env)
    assert first["debug"] is True and first["from_env"] is False
    key_file = tmp_path / "secret"
    assert key_file.read_text() == first["key"] and len(first["key"]) >= 60
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert first["key"] != "insecure-dev-key-change-me"
    assert probe(env)["key"] == first["key"]  # generated once per install


def test_a_public_host_turns_debug_off_by_default(env):
    assert probe(env, **PUBLIC)["debug"] is False
    assert probe(env, ALLOWED_HOSTS="localhost,127.0.0.1")["debug"] is True


def test_a_key_from_the_environment_wins_and_writes_no_file(env, tmp_path):
    assert probe(env, SECRET_KEY=LONG_KEY)["key"] == LONG_KEY
    assert not (tmp_path / "secret").exists()


def test_an_unwritable_key_file_is_a_clear_error(env, tmp_path):
    proc = run(env, "-c", PROBE, MASTRA_SECRET_KEY_FILE=str(tmp_path / "missing" / "secret"))
    assert last_error_line(proc) == (
        "django.core.exceptions.ImproperlyConfigured: SECRET_KEY is not set and "
        f"{tmp_path / 'missing' / 'secret'} cannot be written (No such file or directory): set SECRET_KEY or "
        "MASTRA_SECRET_KEY_FILE")


def test_check_refuses_a_public_host_with_debug_or_the_development_key(env):
    proc = run(env, "manage.py", "check", DEBUG="true", SECRET_KEY="insecure-dev-key-change-me", **PUBLIC)
    assert proc.returncode == 1
    assert ("?: (mastra.E004) DEBUG is on while ALLOWED_HOSTS lets other machines in (mastra.example.com)\n"
            "\tHINT: Set DEBUG=false, or keep ALLOWED_HOSTS to localhost.") in proc.stderr, proc.stderr
    assert ("?: (mastra.E005) SECRET_KEY is the development default while ALLOWED_HOSTS lets other machines in "
            "(mastra.example.com)") in proc.stderr, proc.stderr
    # debug on a loopback-only site is fine
    assert run(env, "manage.py", "check", DEBUG="true").returncode == 0


def test_migrate_runs_the_same_check(env, tmp_path):
    proc = run(env, "manage.py", "migrate", DEBUG="true", **PUBLIC)
    assert proc.returncode == 1
    assert "(mastra.E004)" in proc.stderr, proc.stderr
    with sqlite3.connect(tmp_path / "db.sqlite3") as db:  # nothing was migrated
        assert db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall() == []


def test_the_asgi_application_refuses_to_start(env):
    proc = run(env, "-c", "import mastra_site.asgi", DEBUG="yes", SECRET_KEY="insecure-dev-key-change-me", **PUBLIC)
    assert last_error_line(proc) == (
        "django.core.exceptions.ImproperlyConfigured: mastra.E004: DEBUG is on while ALLOWED_HOSTS lets other "
        "machines in (mastra.example.com). Set DEBUG=false, or keep ALLOWED_HOSTS to localhost.; mastra.E005: "
        "SECRET_KEY is the development default while ALLOWED_HOSTS lets other machines in (mastra.example.com). "
        "Set SECRET_KEY to a long random value.")
    assert run(env, "-c", "import mastra_site.asgi", SECRET_KEY=LONG_KEY, **PUBLIC).returncode == 0


def test_check_deploy_is_clean_with_the_production_environment(env):
    production = {"DEBUG": "false", "SECRET_KEY": LONG_KEY, "ALLOWED_HOSTS": "mastra.example.com",
                  "REDIS_URL": "redis://redis.example.internal:6379/0",
                  "DATABASE_URL": "postgres://mastra:pw@db.example.internal:5432/mastra", "SECURE_SSL_REDIRECT": "true",
                  "SESSION_COOKIE_SECURE": "true", "CSRF_COOKIE_SECURE": "true", "SECURE_HSTS_SECONDS": "31536000",
                  "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true", "SECURE_HSTS_PRELOAD": "true",
                  "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto"}
    proc = run(env, "manage.py", "check", "--deploy", **production)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "System check identified no issues (0 silenced).", proc.stdout + proc.stderr
    s = probe(env, **production)
    assert (s["hsts"], s["proxy"]) == (31536000, ["HTTP_X_FORWARDED_PROTO", "https"])


def test_limits_reach_the_runtime(env):
    s = probe(env)
    assert s["limits"] == {"max_signal_bytes": 1048576, "max_attributes": 64, "max_notifications_per_call": 100,
                           "max_pending_inputs": 1000, "max_steps": 1000, "max_retries": 10,
                           "keep_provider_payloads": False}
    s = probe(env, MASTRA_MAX_SIGNAL_BYTES="4096", MASTRA_MAX_SIGNAL_ATTRIBUTES="3",
              MASTRA_MAX_NOTIFICATIONS_PER_CALL="2", MASTRA_MAX_PENDING_INPUTS="5", MASTRA_MAX_STEPS="7",
              MASTRA_MAX_RETRIES="0", MASTRA_KEEP_PROVIDER_PAYLOADS="true")
    assert s["limits"] == {"max_signal_bytes": 4096, "max_attributes": 3, "max_notifications_per_call": 2,
                           "max_pending_inputs": 5, "max_steps": 7, "max_retries": 0,
                           "keep_provider_payloads": True}


@pytest.mark.parametrize("name,value,bounds", [
    ("SECURE_HSTS_SECONDS", "-1", "0 to 63072000"),
    ("MASTRA_MAX_SIGNAL_BYTES", "10", "1024 to 67108864"),
    ("MASTRA_MAX_SIGNAL_ATTRIBUTES", "0", "1 to 10000"),
    ("MASTRA_MAX_NOTIFICATIONS_PER_CALL", "501", "1 to 500"),
    ("MASTRA_MAX_PENDING_INPUTS", "1e6", "1 to 1000000"),
    ("MASTRA_MAX_STEPS", "abc", "1 to 100000"),
    ("MASTRA_MAX_RETRIES", "-1", "0 to 100"),
    ("MASTRA_CHANNEL_CAPACITY", "5", "10 to 1000000"),
    ("MASTRA_CHANNEL_EXPIRY_S", "0", "1 to 86400"),
    ("MASTRA_SQLITE_TIMEOUT_S", "99999", "1 to 3600"),
])
def test_a_bad_number_is_a_clear_configuration_error(env, name, value, bounds):
    extra = {"REDIS_URL": "redis://redis:6379/0"} if name.startswith("MASTRA_CHANNEL") else {}
    proc = run(env, "-c", PROBE, **{name: value}, **extra)
    assert last_error_line(proc) == (
        f"django.core.exceptions.ImproperlyConfigured: {name} must be a whole number from {bounds}, not {value!r}")


CORS_PROBE = """
import json
import django
django.setup()
from django.conf import settings
print(json.dumps([settings.CORS_ALLOW_ALL_ORIGINS, settings.CORS_ALLOWED_ORIGINS, settings.CORS_ALLOW_CREDENTIALS]))
"""


def test_api_cors_origins_come_from_the_environment(env):
    def cors(value=None):
        proc = run(env, "-c", CORS_PROBE, **({} if value is None else {"MASTRA_API_CORS_ORIGINS": value}))
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    assert cors() == [False, [], False]  # off
    assert cors("*") == [True, [], False]
    assert cors(" https://app.example.com , http://localhost:3000 ") == [
        False, ["https://app.example.com", "http://localhost:3000"], False]


@pytest.mark.parametrize("value, bad", [("app.example.com", "app.example.com"),
                                        ("https://app.example.com/chat", "https://app.example.com/chat"),
                                        ("*,https://app.example.com", "*"),
                                        ("ftp://files.example.com", "ftp://files.example.com")])
def test_a_bad_api_cors_origin_is_a_clear_configuration_error(env, value, bad):
    assert last_error_line(run(env, "-c", PROBE, MASTRA_API_CORS_ORIGINS=value)) == (
        "django.core.exceptions.ImproperlyConfigured: MASTRA_API_CORS_ORIGINS must be * or origins such as "
        f"https://app.example.com separated by commas, not {bad!r}")


def test_a_bad_proxy_header_or_switch_is_a_clear_configuration_error(env):
    assert last_error_line(run(env, "-c", PROBE, SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto: https")) == (
        "django.core.exceptions.ImproperlyConfigured: SECURE_PROXY_SSL_HEADER must be a header name such as "
        "X-Forwarded-Proto, not 'X-Forwarded-Proto: https'")
    assert last_error_line(run(env, "-c", PROBE, MASTRA_KEEP_PROVIDER_PAYLOADS="sometimes")) == (
        "django.core.exceptions.ImproperlyConfigured: MASTRA_KEEP_PROVIDER_PAYLOADS must be true or false "
        "(1/0, yes/no, on/off), not 'sometimes'")


# -- the process layout (mastra.E006 to E008, W002) ------------------------------------------------

SQLITE = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"}}
POSTGRES = {"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "mastra"}}
IN_MEMORY = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
REDIS_LAYER = {"default": {"BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
                           "CONFIG": {"hosts": ["redis://redis:6379/0"]}}}


def core_layer(expiry: int) -> dict:
    return {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                        "CONFIG": {"hosts": ["redis://redis:6379/0"], "capacity": 1000, "expiry": expiry}}}


def layout(settings, *, processes=1, databases=POSTGRES, layer=REDIS_LAYER, broker="redis://redis:6379/0",
           eager=None, keepalive=25) -> list[tuple[str, str, str]]:
    """``(id, message, hint)`` of the layout checks' findings with these settings (no database is used)."""
    from mastra_site.checks import check_channel_expiry, check_process_layout

    settings.WEB_CONCURRENCY = processes
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Overriding setting DATABASES")
        settings.DATABASES = databases
    settings.CHANNEL_LAYERS = layer
    settings.CELERY_BROKER_URL = broker
    settings.CELERY_TASK_ALWAYS_EAGER = (not broker) if eager is None else eager
    settings.MASTRA_API_KEEPALIVE_S = keepalive
    return [(f.id, f.msg, f.hint) for f in check_process_layout(None) + check_channel_expiry(None)]


def test_the_production_layout_passes(settings):
    assert layout(settings, processes=4) == []
    assert layout(settings, processes=4, layer=core_layer(60)) == []
    # the embedded default: one process, SQLite, the in-memory layer, eager tasks
    assert layout(settings, databases=SQLITE, layer=IN_MEMORY, broker="") == []


def test_several_processes_or_celery_workers_on_sqlite_are_refused(settings):
    hint = "Set DATABASE_URL to PostgreSQL, or run one process without a broker."
    assert layout(settings, databases=SQLITE) == [
        ("mastra.E006", "the SQLite database cannot serve several processes (Celery workers (a broker is set))", hint)]
    assert layout(settings, processes=3, databases=SQLITE) == [
        ("mastra.E006", "the SQLite database cannot serve several processes (WEB_CONCURRENCY=3 and Celery workers "
                        "(a broker is set))", hint)]
    # a broker with eager tasks runs them in the serving process: one process
    assert layout(settings, databases=SQLITE, eager=True) == []


def test_celery_workers_need_a_channel_layer_that_reaches_them(settings):
    assert layout(settings, layer=IN_MEMORY) == [
        ("mastra.E007", "the in-memory channel layer cannot reach the Celery workers' runs (CELERY_BROKER_URL is "
                        "set without REDIS_URL)", "Set REDIS_URL so that channels-redis links the processes.")]


def test_eager_tasks_with_several_processes_are_refused(settings):
    assert layout(settings, processes=2, broker="") == [
        ("mastra.E008", "Celery tasks run eagerly in each of the WEB_CONCURRENCY=2 processes (no broker: every "
                        "process dispatches the due notifications itself)",
         "Set REDIS_URL (or CELERY_BROKER_URL) and run a Celery worker and beat.")]
    assert [f[0] for f in layout(settings, processes=2, eager=True)] == ["mastra.E008"]


def test_channel_messages_expiring_before_the_keep_alive_are_a_warning(settings):
    assert layout(settings, layer=core_layer(20)) == [
        ("mastra.W002", "channel messages expire after 20 s (MASTRA_CHANNEL_EXPIRY_S), before the 25 s keep-alive "
                        "of a quiet connection",
         "Set MASTRA_CHANNEL_EXPIRY_S to 25 or more (the chat page pings every 25 s; MASTRA_API_KEEPALIVE_S=25).")]
    assert [f[:2] for f in layout(settings, layer=core_layer(60), keepalive=90)] == [
        ("mastra.W002", "channel messages expire after 60 s (MASTRA_CHANNEL_EXPIRY_S), before the 90 s keep-alive "
                        "of a quiet connection")]
    assert layout(settings, layer=core_layer(25)) == []
    assert layout(settings, layer=REDIS_LAYER, keepalive=90) == []  # the pub/sub layer has no expiry


def test_check_refuses_redis_with_sqlite(env):
    proc = run(env, "manage.py", "check", REDIS_URL="redis://redis:6379/0")
    assert proc.returncode == 1
    assert ("?: (mastra.E006) the SQLite database cannot serve several processes (Celery workers (a broker is set))"
            "\n\tHINT: Set DATABASE_URL to PostgreSQL, or run one process without a broker.") in proc.stderr, proc.stderr
    proc = run(env, "manage.py", "check", REDIS_URL="redis://redis:6379/0", MASTRA_CHANNEL_LAYER="core",
               MASTRA_CHANNEL_EXPIRY_S="10", DATABASE_URL="postgres://u:p@127.0.0.1:1/none")
    assert "?: (mastra.W002) channel messages expire after 10 s" in proc.stderr, proc.stderr
