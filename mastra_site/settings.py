"""Settings, all from the environment (DESIGN §6).

With no environment at all the site runs embedded: a SQLite file, the in-memory channel layer, the
in-process scheduler and the offline ``local/echo`` model. ``DATABASE_URL`` and ``REDIS_URL`` switch
to PostgreSQL and Redis (channels-redis, the Celery broker and the cache that holds the rate counters).

The embedded default is safe on a laptop: it answers only loopback hosts, ``DEBUG`` is on only
while every allowed host is a loopback one, and without ``SECRET_KEY`` a random key is generated
once per install (``MASTRA_SECRET_KEY_FILE``). ``mastra_site.checks`` refuses to serve a public
host with ``DEBUG`` on or the known development key (docs/security.md).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from corsheaders.defaults import default_headers as cors_default_headers
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    """``true``/``false`` (also ``1``/``0``, ``yes``/``no``, ``on``/``off``, any case); unset or
    empty is ``default``. Anything else raises ``ImproperlyConfigured``."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false (1/0, yes/no, on/off), not {value!r}")


def env_int(name: str, default: int, *, minimum: int, maximum: int) -> int:
    """A whole number from ``minimum`` to ``maximum``; unset or empty is ``default``. Anything
    else (``abc``, ``1e15``, a number out of bounds) raises ``ImproperlyConfigured`` naming the
    variable, the value and the bounds."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        number = int(value.strip())
    except ValueError:
        number = None
    if number is None or not minimum <= number <= maximum:
        raise ImproperlyConfigured(f"{name} must be a whole number from {minimum} to {maximum}, not {value!r}")
    return number


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (compared in upper case when they are upper case); unset or empty is
    ``default``; anything else raises ``ImproperlyConfigured``."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    word = value.strip().upper() if all(c.isupper() for c in choices) else value.strip()
    if word not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return word


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


#: hosts that only this machine can reach (``testserver`` is Django's test client)
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1", "testserver", ".localhost"})


def is_loopback_host(host: str) -> bool:
    host = host.strip().lower()
    return host in LOOPBACK_HOSTS or host.endswith(".localhost")


def install_secret_key(path: Path) -> str:
    """The key stored in ``path``, created (random, mode 0600) the first time. Two processes starting
    together agree: the key is written to a private file and linked into place, so a reader never
    sees a half-written key and the first link wins."""
    try:
        key = path.read_text().strip()
    except FileNotFoundError:
        key = ""
    if key:
        return key
    temp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
        try:
            os.link(temp, path)
        except FileExistsError:
            pass
        finally:
            temp.unlink(missing_ok=True)
        key = path.read_text().strip()
    except OSError as exc:
        raise ImproperlyConfigured(f"SECRET_KEY is not set and {path} cannot be written ({exc.strerror}): "
                                   "set SECRET_KEY or MASTRA_SECRET_KEY_FILE") from None
    if not key:
        raise ImproperlyConfigured(f"SECRET_KEY is not set and {path} is empty: delete it or set SECRET_KEY")
    return key


#: the key older versions used by default; refused for a public host (mastra.E002/E005)
DEFAULT_SECRET_KEY = "insecure-dev-key-change-me"
SECRET_KEY_FROM_ENV = bool(env_str("SECRET_KEY").strip())
SECRET_KEY = (env_str("SECRET_KEY").strip() if SECRET_KEY_FROM_ENV
              else install_secret_key(Path(env_str("MASTRA_SECRET_KEY_FILE", str(BASE_DIR / ".secret_key")))))
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
LOOPBACK_ONLY = all(is_loopback_host(host) for host in ALLOWED_HOSTS)
# on by default only while nothing but this machine can reach the site
DEBUG = env_bool("DEBUG", LOOPBACK_ONLY)

# HTTPS behind a proxy (``manage.py check --deploy`` is clean with these set, docs/security.md)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
# the health probes stay on plain HTTP: a load balancer probes a process directly (mastra_site.health)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0, maximum=63_072_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")


def env_origins(name: str) -> list[str]:
    """Origins (``scheme://host[:port]``, http or https, nothing after) separated by commas, or
    ``*`` alone (every origin); unset or empty is none. Anything else raises
    ``ImproperlyConfigured`` naming the value."""
    origins = env_list(name)
    if origins == ["*"]:
        return origins
    for origin in origins:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path or parts.query or \
                parts.fragment or "@" in parts.netloc:
            raise ImproperlyConfigured(f"{name} must be * or origins such as https://app.example.com "
                                       f"separated by commas, not {origin!r}")
    return origins


# Browser apps on other origins calling the HTTP API (its CORS headers, django-cors-headers, applied
# by agents.api.cors): off unless origins are listed; ``*`` lets every origin read the answers to
# token-authenticated requests, as Mastra's server does. Never with credentials: a session cookie
# is not sent across origins (docs/api.md)
MASTRA_API_CORS_ORIGINS = env_origins("MASTRA_API_CORS_ORIGINS")
CORS_ALLOW_ALL_ORIGINS = MASTRA_API_CORS_ORIGINS == ["*"]
CORS_ALLOWED_ORIGINS = [] if CORS_ALLOW_ALL_ORIGINS else MASTRA_API_CORS_ORIGINS
CORS_ALLOW_CREDENTIALS = False
CORS_URLS_REGEX = r"^/api/"
CORS_ALLOW_HEADERS = (*cors_default_headers, "last-event-id", "x-request-id")
CORS_EXPOSE_HEADERS = ["Content-Length", "Retry-After", "X-Request-ID"]
CORS_PREFLIGHT_MAX_AGE = 3600


def env_proxy_header(name: str) -> tuple[str, str] | None:
    """``X-Forwarded-Proto`` (a header the proxy sets to ``https``) as Django's
    ``("HTTP_X_FORWARDED_PROTO", "https")``; unset or empty is ``None``."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    if not all(c.isalnum() or c in "-_" for c in value):
        raise ImproperlyConfigured(f"{name} must be a header name such as X-Forwarded-Proto, not {value!r}")
    header = value.upper().replace("-", "_")
    return (header if header.startswith("HTTP_") else f"HTTP_{header}", "https")


SECURE_PROXY_SSL_HEADER = env_proxy_header("SECURE_PROXY_SSL_HEADER")

INSTALLED_APPS = [
    "daphne",
    "mastra_site.apps.MastraAdminConfig",  # django.contrib.admin with the operator dashboard
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",  # HTTP API: tokens (manage.py drf_create_token <user>)
    "drf_spectacular",  # HTTP API: OpenAPI schema at /api/schema/
    "corsheaders",  # HTTP API: CORS headers with MASTRA_API_CORS_ORIGINS (its settings checked)
    "drf_spectacular_sidecar",  # HTTP API: Swagger UI's files for /api/docs/, served by the site (no CDN)
    "channels",
    "agents",
    "inbox",
    "schedules",  # mastra.schedules: agents on a cron (docs/schedules.md)
    "agent_channels",
    "ledger",  # the cost ledger: model prices, one row per model step (docs/operations.md)
    "budgets",  # budgets and concurrency limits, enforced before each model call (docs/operations.md)
    "mastra_site.apps.MastraSiteConfig",
    "chat",  # browser chat UI (docs/chat.md)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # the static files from STATIC_ROOT (after manage.py collectstatic), served by the ASGI application
    "mastra_site.staticfiles.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "mastra_site.urls"
ASGI_APPLICATION = "mastra_site.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],  # site-wide: base layout, sign-in, error pages, the admin's front page
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / env_str('MASTRA_SQLITE_NAME', 'db.sqlite3')}"),
        conn_max_age=env_int("DB_CONN_MAX_AGE", 0, minimum=0, maximum=86_400),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL and a busy timeout let the runner threads and the request threads share the file.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": env_int("MASTRA_SQLITE_TIMEOUT_S", 20, minimum=1, maximum=3_600), "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
         "transaction_mode": "IMMEDIATE"}
    )
    # A file (not :memory:) so that other processes in multi-process tests share it; one per test
    # process so that concurrent test runs never share one.
    DATABASES["default"]["TEST"] = {
        "NAME": BASE_DIR / env_str("MASTRA_SQLITE_TEST_NAME", f"test-db-{os.getpid()}.sqlite3")}

if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # a database that does not answer fails a connection in seconds, not minutes (/readyz says so);
    # ``?connect_timeout=N`` in DATABASE_URL sets another
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", 5)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    # channels-redis's pub/sub layer by default: Redis pushes each thread message to the processes
    # subscribed to its thread (no polling, no per-channel capacity to overflow). The list-based
    # ``core`` layer polls one message per round trip: with a hundred busy threads a process's
    # reader fell minutes behind and messages expired (bench/websocket.py, docs/chat.md).
    MASTRA_CHANNEL_LAYER = env_choice("MASTRA_CHANNEL_LAYER", "pubsub", ("pubsub", "core"))
    _channel_config = {"hosts": [REDIS_URL],
                       # the prefix keeps separate deployments (and concurrent test runs) on one Redis apart
                       "prefix": env_str("MASTRA_CHANNEL_PREFIX", "mastra")}
    # the core layer's bounds, checked whichever layer is chosen (a bad value is a bad value)
    _channel_bounds = {"capacity": env_int("MASTRA_CHANNEL_CAPACITY", 1000, minimum=10, maximum=1_000_000),
                       "expiry": env_int("MASTRA_CHANNEL_EXPIRY_S", 60, minimum=1, maximum=86_400)}
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": {"pubsub": "channels_redis.pubsub.RedisPubSubChannelLayer",
                        "core": "channels_redis.core.RedisChannelLayer"}[MASTRA_CHANNEL_LAYER],
            "CONFIG": {**_channel_config, **(_channel_bounds if MASTRA_CHANNEL_LAYER == "core" else {})},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The default cache holds what every process must agree on: DRF's rate counters
# (MASTRA_API_SEND_RATE). With REDIS_URL it is Redis, shared by the processes; the key prefix keeps
# separate deployments (and concurrent test runs) on one Redis apart. Note that Django's
# ``RedisCache.clear()`` flushes the whole Redis database: delete keys by prefix instead.
# Without REDIS_URL the site is one process and a per-process cache is the whole truth.
MASTRA_CACHE_PREFIX = env_str("MASTRA_CACHE_PREFIX", env_str("MASTRA_CHANNEL_PREFIX", "mastra"))
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "KEY_PREFIX": MASTRA_CACHE_PREFIX}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Celery: a broker only when REDIS_URL (or CELERY_BROKER_URL) is set; otherwise tasks run eagerly
# and the in-process scheduler dispatches due notifications.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
# Workflows on Celery: canvas results come back through a result backend (the broker's Redis by default)
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", CELERY_BROKER_URL) or None
# On Redis, the broker's queues and the results' keys start with the deployment's prefix, as the
# channel layer's and the cache's do: deployments sharing one Redis do not take each other's tasks.
MASTRA_CELERY_PREFIX = env_str("MASTRA_CELERY_PREFIX", env_str("MASTRA_CHANNEL_PREFIX", "mastra"))
_REDIS_SCHEMES = ("redis://", "rediss://", "redis+socket://")
if CELERY_BROKER_URL.startswith(_REDIS_SCHEMES):
    CELERY_BROKER_TRANSPORT_OPTIONS = {"global_keyprefix": f"{MASTRA_CELERY_PREFIX}:"}
if (CELERY_RESULT_BACKEND or "").startswith(_REDIS_SCHEMES):
    CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"global_keyprefix": f"{MASTRA_CELERY_PREFIX}:"}

MASTRA = env_str("MASTRA", "mastra_site.mastra:mastra")
MASTRA_DEFAULT_MODEL = env_str("MASTRA_DEFAULT_MODEL", "local/echo")
MASTRA_THREAD_LEASE_TTL_MS = env_int("MASTRA_THREAD_LEASE_TTL_MS", 15_000, minimum=100, maximum=3_600_000)
# On PostgreSQL the thread runtime's database calls run on this many threads of their own (each
# thread's calls on one of them, in order; agents.connections KEYED), one connection each; at 1
# (the default) on the worker thread, which keeps the event loop's wait for the interpreter short
MASTRA_THREAD_DB_THREADS = env_int("MASTRA_THREAD_DB_THREADS", 1, minimum=1, maximum=64)
# Inputs (send-message, signals, a chat's message, a channel's event) a process accepts at once; the
# others wait their turn, first come first served, so that the runs going on keep theirs
# (agents.runtime.threads.admission). By default one per database thread of the runtime; 0: no limit
MASTRA_ACCEPTS_AT_ONCE = env_int("MASTRA_ACCEPTS_AT_ONCE", MASTRA_THREAD_DB_THREADS, minimum=0, maximum=10_000)
#: runs a thread input may take without saving their end before it is parked as failed
MASTRA_INPUT_MAX_ATTEMPTS = env_int("MASTRA_INPUT_MAX_ATTEMPTS", 3, minimum=1, maximum=100)
MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S = env_int("MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S", 15, minimum=1,
                                                  maximum=86_400)
# Limits on what callers send (docs/security.md); the runtime gets them through
# agents.runtime.limits.configure_limits at start-up (mastra_site.apps).
MASTRA_MAX_SIGNAL_BYTES = env_int("MASTRA_MAX_SIGNAL_BYTES", 1024 * 1024, minimum=1024, maximum=64 * 1024 * 1024)
MASTRA_MAX_SIGNAL_ATTRIBUTES = env_int("MASTRA_MAX_SIGNAL_ATTRIBUTES", 64, minimum=1, maximum=10_000)
MASTRA_MAX_NOTIFICATIONS_PER_CALL = env_int("MASTRA_MAX_NOTIFICATIONS_PER_CALL", 100, minimum=1, maximum=500)
MASTRA_MAX_PENDING_INPUTS = env_int("MASTRA_MAX_PENDING_INPUTS", 1000, minimum=1, maximum=1_000_000)
MASTRA_MAX_STEPS = env_int("MASTRA_MAX_STEPS", 1000, minimum=1, maximum=100_000)
MASTRA_MAX_RETRIES = env_int("MASTRA_MAX_RETRIES", 10, minimum=0, maximum=100)
# model retries, fallbacks and circuit breakers (agents.runtime.providers.resilience, docs/agents.md)
MASTRA_RETRY_BASE_MS = env_int("MASTRA_RETRY_BASE_MS", 1000, minimum=0, maximum=600000)
MASTRA_RETRY_MAX_MS = env_int("MASTRA_RETRY_MAX_MS", 30000, minimum=0, maximum=3600000)
MASTRA_RETRY_AFTER_MAX_MS = env_int("MASTRA_RETRY_AFTER_MAX_MS", 30000, minimum=0, maximum=3600000)
MASTRA_BREAKER_FAILURES = env_int("MASTRA_BREAKER_FAILURES", 5, minimum=0, maximum=1000)
MASTRA_BREAKER_COOLDOWN_MS = env_int("MASTRA_BREAKER_COOLDOWN_MS", 30000, minimum=0, maximum=86400000)
# refused webhook requests kept (counted per minute; the oldest rows beyond this are deleted: a flood
# of bad requests cannot grow the table, inbox.webhooks.refusals)
MASTRA_WEBHOOK_REFUSALS_MAX = env_int("MASTRA_WEBHOOK_REFUSALS_MAX", 1000, minimum=10, maximum=1_000_000)
# a process writes a refusal row at most once per this many ms (the requests in between are added then)
MASTRA_WEBHOOK_REFUSAL_WRITE_MS = env_int("MASTRA_WEBHOOK_REFUSAL_WRITE_MS", 1000, minimum=0, maximum=60_000)
# admin editor: how often (ms) a process checks whether a publish changed the agents' overrides
MASTRA_EDITOR_REFRESH_MS = env_int("MASTRA_EDITOR_REFRESH_MS", 1000, minimum=0, maximum=3_600_000)
# debugging only: keep provider request bodies and response headers in step-finish events
MASTRA_KEEP_PROVIDER_PAYLOADS = env_bool("MASTRA_KEEP_PROVIDER_PAYLOADS", False)
# serving processes (the ASGI server's own variable): more than one needs a channel layer that
# links processes (mastra.E003)
WEB_CONCURRENCY = env_int("WEB_CONCURRENCY", 1, minimum=1, maximum=1024)
# Due notifications: Celery beat with a broker; the notification-dispatch job of mastra_site.workers without one.
MASTRA_NOTIFICATION_SCHEDULER = env_bool("MASTRA_NOTIFICATION_SCHEDULER", not CELERY_BROKER_URL)
# Retention (docs/operations.md): days a row is kept once it is done with, per kind of row; 0 keeps
# it forever. A new kind of row adds a key here and a policy in its app's ``retention`` module
# (mastra_site.sweeper lists them). Tool approval decisions (the audit trail) have no policy: kept.
MASTRA_RETENTION_DAYS = {
    # the thread's event log, beyond the last MASTRA_EVENT_RETENTION events it keeps per thread: a
    # subscriber resuming from before a swept stretch gets the thread's snapshot first
    "thread_events": env_int("MASTRA_RETAIN_THREAD_EVENTS_DAYS", 14, minimum=0, maximum=36_500),
    # consumed and cancelled thread inputs (their text is in the thread's messages)
    "thread_inputs": env_int("MASTRA_RETAIN_THREAD_INPUTS_DAYS", 30, minimum=0, maximum=36_500),
    # finished runs, their trace spans and their scores
    "runs": env_int("MASTRA_RETAIN_RUNS_DAYS", 90, minimum=0, maximum=36_500),
    # notification records no longer pending (delivered, seen, dismissed, archived, discarded, failed)
    "notifications": env_int("MASTRA_RETAIN_NOTIFICATIONS_DAYS", 90, minimum=0, maximum=36_500),
    # webhook deliveries (the redelivery guard: a redelivery older than this is stored again)
    "webhook_deliveries": env_int("MASTRA_RETAIN_WEBHOOK_DELIVERIES_DAYS", 30, minimum=0, maximum=36_500),
    # budget counters of past periods (days, months, runs), after their period ended
    "budget_counters": env_int("MASTRA_RETAIN_BUDGET_COUNTERS_DAYS", 400, minimum=0, maximum=36_500),
    # the cost ledger's rows, one per model step (kept longer than runs: the costs by run, thread, day)
    "ledger_entries": env_int("MASTRA_RETAIN_LEDGER_DAYS", 400, minimum=0, maximum=36_500),
    # the ledger's daily sums (by day, agent, resource, channel and model), kept after the rows go
    "ledger_daily": env_int("MASTRA_RETAIN_LEDGER_DAILY_DAYS", 3650, minimum=0, maximum=36_500),
}
# The cost ledger (docs/operations.md#the-ledger): one row per model step, written in the background
# in batches of MASTRA_LEDGER_BATCH, every MASTRA_LEDGER_INTERVAL_MS, from a queue of at most
# MASTRA_LEDGER_QUEUE steps per process (a step past it is dropped, counted and shown).
MASTRA_LEDGER = env_bool("MASTRA_LEDGER", True)
MASTRA_LEDGER_QUEUE = env_int("MASTRA_LEDGER_QUEUE", 8192, minimum=1, maximum=1_000_000)
MASTRA_LEDGER_BATCH = env_int("MASTRA_LEDGER_BATCH", 500, minimum=1, maximum=10_000)
MASTRA_LEDGER_INTERVAL_MS = env_int("MASTRA_LEDGER_INTERVAL_MS", 1000, minimum=10, maximum=600_000)
# Trace spans (docs/agents.md#traces) are stored in the background: each run's end queues its trace
# (at most MASTRA_TRACE_QUEUE traces per process; one past it is dropped and counted) and a writer
# thread stores them in batches of MASTRA_TRACE_BATCH_SIZE traces every MASTRA_TRACE_INTERVAL_MS.
# MASTRA_TRACE_BATCH=false stores each run's spans on its own end, before the run returns.
MASTRA_TRACE_BATCH = env_bool("MASTRA_TRACE_BATCH", True)
# the objects a process builds while it starts are frozen out of the garbage collector's full
# collections (agents.heap): no 100-200 ms stop of the event loop to walk them under load
MASTRA_GC_FREEZE = env_bool("MASTRA_GC_FREEZE", True)
# a serving process's youngest garbage-collector generation holds this many objects before it is
# collected (agents.heap.heap_thresholds; CPython's 700 promotes a step's short-lived objects
# to the old generation, whose full collections stop the event loop); 0 keeps CPython's
MASTRA_GC_YOUNG_OBJECTS = env_int("MASTRA_GC_YOUNG_OBJECTS", 5000, minimum=0, maximum=1_000_000)
# a serving process makes a full garbage collection after this many collections of the middle
# generation at the earliest (agents.heap.heap_thresholds; CPython's 10 meant a 250-430 ms stop of
# the event loop every few seconds under load, its frozen heap not counted); 0 keeps CPython's
MASTRA_GC_FULL_EVERY = env_int("MASTRA_GC_FULL_EVERY", 100, minimum=0, maximum=100_000)
# a web process's threads on one CPU (mastra_site.cpu_affinity): empty leaves them where the kernel
# puts them, "auto" gives each web process a CPU of its own, or a CPU list ("1", "0,2", "0-3")
MASTRA_CPU_AFFINITY = env_str("MASTRA_CPU_AFFINITY", "").strip()
if MASTRA_CPU_AFFINITY not in ("", "auto"):
    from mastra_site.cpu_affinity import parse_cpus

    parse_cpus(MASTRA_CPU_AFFINITY)
MASTRA_TRACE_QUEUE = env_int("MASTRA_TRACE_QUEUE", 8192, minimum=1, maximum=1_000_000)
MASTRA_TRACE_BATCH_SIZE = env_int("MASTRA_TRACE_BATCH_SIZE", 256, minimum=1, maximum=10_000)
MASTRA_TRACE_INTERVAL_MS = env_int("MASTRA_TRACE_INTERVAL_MS", 1000, minimum=10, maximum=600_000)
# the price table's copy in each process is read again after this many seconds (an edit is seen
# at once in the process that made it)
LEDGER_PRICE_CACHE_SECONDS = env_int("MASTRA_LEDGER_PRICE_CACHE_S", 60, minimum=0, maximum=86_400)
# The sweeper deletes expired rows in batches of MASTRA_SWEEP_BATCH rows, one short transaction each,
# pausing at least MASTRA_SWEEP_PAUSE_MS between them and long enough to work at most
# MASTRA_SWEEP_DUTY_PERCENT of its time (bench/retention.py), so that live writes are not held up.
MASTRA_SWEEP_INTERVAL_S = env_int("MASTRA_SWEEP_INTERVAL_S", 3600, minimum=1, maximum=7 * 86_400)
MASTRA_SWEEP_BATCH = env_int("MASTRA_SWEEP_BATCH", 500, minimum=1, maximum=100_000)
MASTRA_SWEEP_PAUSE_MS = env_int("MASTRA_SWEEP_PAUSE_MS", 20, minimum=0, maximum=60_000)
MASTRA_SWEEP_DUTY_PERCENT = env_int("MASTRA_SWEEP_DUTY_PERCENT", 25, minimum=1, maximum=100)
# Celery beat runs the sweep with a broker; the retention-sweep job of mastra_site.workers without one.
MASTRA_SWEEP_SCHEDULER = env_bool("MASTRA_SWEEP_SCHEDULER", not CELERY_BROKER_URL)
# Erasure records keep the erased resource id only as an HMAC under this salt (docs/operations.md);
# set it to keep those hashes comparable across a change of SECRET_KEY.
MASTRA_ERASURE_SALT = env_str("MASTRA_ERASURE_SALT").strip() or SECRET_KEY
# Budgets and limits (docs/operations.md): the time zone budget days and months start in; how long a
# process keeps the admin's budgets before reading them again (its own changes are seen at once);
# at most this many active runs per resource and per agent (0: no limit; a run over it is refused
# with too_many_active_runs); how long a run's slot outlives its last model call (a dead process's
# slot frees itself then)
MASTRA_BUDGET_TIME_ZONE = env_str("MASTRA_BUDGET_TIME_ZONE", "UTC").strip() or "UTC"
MASTRA_BUDGETS_CACHE_S = env_int("MASTRA_BUDGETS_CACHE_S", 5, minimum=0, maximum=3_600)
MASTRA_MAX_ACTIVE_RUNS_PER_RESOURCE = env_int("MASTRA_MAX_ACTIVE_RUNS_PER_RESOURCE", 0, minimum=0, maximum=100_000)
MASTRA_MAX_ACTIVE_RUNS_PER_AGENT = env_int("MASTRA_MAX_ACTIVE_RUNS_PER_AGENT", 0, minimum=0, maximum=100_000)
MASTRA_ACTIVE_RUN_TTL_S = env_int("MASTRA_ACTIVE_RUN_TTL_S", 900, minimum=10, maximum=86_400)
# the demo site's daily budget for all its runs, in USD (0: none) - mastra_site/mastra.py
MASTRA_DEMO_DAILY_BUDGET_USD = env_str("MASTRA_DEMO_DAILY_BUDGET_USD", "5").strip() or "0"
# schedules (docs/schedules.md): who claims and runs fires, how often, how late a fire may be
MASTRA_SCHEDULE_SCHEDULER = env_bool("MASTRA_SCHEDULE_SCHEDULER", not CELERY_BROKER_URL)
MASTRA_SCHEDULE_TICK_S = env_int("MASTRA_SCHEDULE_TICK_S", 5, minimum=1, maximum=3_600)
MASTRA_SCHEDULE_MISFIRE_GRACE_S = env_int("MASTRA_SCHEDULE_MISFIRE_GRACE_S", 60, minimum=1, maximum=86_400)
MASTRA_SCHEDULE_FIRE_LEASE_S = env_int("MASTRA_SCHEDULE_FIRE_LEASE_S", 60, minimum=3, maximum=86_400)
# Channels (agent_channels, docs/channels.md): how often a process hands received platform events to
# the agents, relays runs' chunks to the outbox and sends what is due; the least time between two
# writes of one GitHub installation (GitHub's secondary limits: 80 content-creating requests a
# minute); the attempts of a platform write before it is failed (shown in the admin)
MASTRA_CHANNELS_POLL_MS = env_int("MASTRA_CHANNELS_POLL_MS", 500, minimum=20, maximum=60_000)
MASTRA_CHANNELS_SCHEDULER = env_bool("MASTRA_CHANNELS_SCHEDULER", True)
# whether the process that receives a platform event hands it to the agent at once (the run then
# starts there); off, the processes running the channels' work do (serving processes that only ack)
MASTRA_CHANNELS_HANDOFF_INLINE = env_bool("MASTRA_CHANNELS_HANDOFF_INLINE", True)
MASTRA_CHANNELS_GITHUB_WRITE_INTERVAL_MS = env_int("MASTRA_CHANNELS_GITHUB_WRITE_INTERVAL_MS", 1000, minimum=0,
                                                   maximum=60_000)
MASTRA_CHANNELS_MAX_ATTEMPTS = env_int("MASTRA_CHANNELS_MAX_ATTEMPTS", 6, minimum=1, maximum=100)
CELERY_BEAT_SCHEDULE = {
    "schedules-tick": {
        "task": "schedules.tick",
        "schedule": float(MASTRA_SCHEDULE_TICK_S),
        "options": {"expires": float(MASTRA_SCHEDULE_TICK_S)},
    },
    "dispatch-due-notifications": {
        "task": "inbox.dispatch_due_notifications",
        "schedule": float(MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S),
        "options": {"expires": float(MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S)},
    },
    "sweep-retention": {
        "task": "mastra_site.sweep_retention",
        "schedule": float(MASTRA_SWEEP_INTERVAL_S),
        "options": {"expires": float(MASTRA_SWEEP_INTERVAL_S)},
    },
    # the channels' outbox, relay and handoff, also run by every serving process
    "channels-work": {
        "task": "agent_channels.channels_work",
        "schedule": 2.0,
        "options": {"expires": 2.0},
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Static files (mastra_site.staticfiles): ``manage.py collectstatic`` copies them into STATIC_ROOT under
# hashed names, and WhiteNoise serves them with a year's Cache-Control (other files: WHITENOISE_MAX_AGE).
STATIC_URL = "static/"
# site-wide static files (the favicon); each app keeps its own in <app>/static/
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "mastra_site.staticfiles.StaticFilesStorage"},
}

# HTTP API (agents.api, docs/api.md): token ("Token <key>" or "Bearer <key>") and session auth,
# signed-in users only, a per-user rate on the routes that send into threads (429 past it), a body
# size limit (413 past it) and the SSE keep-alive interval.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["agents.api.auth.CachedTokenAuthentication",
                                       "agents.api.auth.BearerTokenAuthentication",
                                       "agents.api.auth.SessionCookieAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_RATES": {"agent-send": env_str("MASTRA_API_SEND_RATE", "600/min")},
    "EXCEPTION_HANDLER": "agents.api.errors.api_exception_handler",
}
# A token checked in the database is trusted for MASTRA_API_TOKEN_CACHE_S seconds in that process
# (0: every request reads it); deleting it, or changing its user, is seen at once in the process that
# made the change and within those seconds in the others (agents.api.auth.TokenCache).
MASTRA_API_TOKEN_CACHE_S = env_int("MASTRA_API_TOKEN_CACHE_S", 10, minimum=0, maximum=3600)
MASTRA_API_TOKEN_CACHE_MAX = env_int("MASTRA_API_TOKEN_CACHE_MAX", 10_000, minimum=1, maximum=1_000_000)
SPECTACULAR_SETTINGS = {
    "TITLE": "mastra-django HTTP API",
    "DESCRIPTION": "Mastra's agent routes (for @mastra/client-js), thread signals, memory, the notification "
                   "inbox and webhooks. See docs/api.md.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # the schema and the docs need a signed-in user, as every route does (docs/security.md)
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "agents.api.openapi.agent_ids_hook"],
}
MASTRA_API_MAX_BODY = env_int("MASTRA_API_MAX_BODY", 1024 * 1024, minimum=1024, maximum=64 * 1024 * 1024)
# voice (agents.api.voice): the largest recording a listen request takes, and the longest (WAV: read from its header)
MASTRA_VOICE_MAX_AUDIO_BYTES = env_int("MASTRA_VOICE_MAX_AUDIO_BYTES", 10 * 1024 * 1024, minimum=1024,
                                       maximum=100 * 1024 * 1024)
MASTRA_VOICE_MAX_AUDIO_SECONDS = env_int("MASTRA_VOICE_MAX_AUDIO_SECONDS", 300, minimum=1, maximum=3600)
MASTRA_API_KEEPALIVE_S = env_int("MASTRA_API_KEEPALIVE_S", 25, minimum=1, maximum=3_600)

# Browser chat UI (docs/chat.md): its login pages, and the largest websocket frame it reads
# (a frame over it gets an error frame; a message is bounded by MASTRA_MAX_SIGNAL_BYTES).
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "chat"
LOGOUT_REDIRECT_URL = "login"
MASTRA_CHAT_MAX_FRAME_BYTES = env_int("MASTRA_CHAT_MAX_FRAME_BYTES", MASTRA_MAX_SIGNAL_BYTES + 64 * 1024,
                                      minimum=1024, maximum=128 * 1024 * 1024)
# daphne's own websocket limit (autobahn's, per message and per frame), read by daphne's runserver;
# the daphne command takes the same number as --websocket-max-message-size/--websocket-max-frame-size
# (README, Processes). Above the site's frame limit, so that a frame over it is read and answered with
# frame_too_large (daphne's default, 1 MiB, dropped the connection below the site's limit); bounded,
# so that a far larger frame is cut by the protocol instead of being buffered.
DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE = DAPHNE_WEBSOCKET_MAX_FRAME_SIZE = MASTRA_CHAT_MAX_FRAME_BYTES + 64 * 1024
# The newest messages a thread's snapshot carries (the page reads older ones over HTTP, as many at a
# time): opening a thread costs the same however long it is, and its snapshot fits one websocket
# message (fewer messages when theirs would not).
MASTRA_CHAT_SNAPSHOT_MESSAGES = env_int("MASTRA_CHAT_SNAPSHOT_MESSAGES", 100, minimum=1, maximum=10_000)

# ``text`` (the default) is for people; ``json`` is one JSON object per line for a log collector:
# timestamp, level, logger, message, exception, and request_id / run_id / thread_id when known
# (mastra_site.logging_context).
LOG_FORMAT = env_choice("LOG_FORMAT", "text", ("text", "json"))
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_LEVEL = env_choice("LOG_LEVEL", "INFO", LOG_LEVELS)
# The HTTP clients under the provider SDKs and the channels' clients (httpx, httpx2) log every request
# at INFO ("HTTP Request: POST ... 200 OK"): one line per model step and per platform write, which the
# traces, the ledger and the channels' outbox already hold. Their level is this one (never below
# LOG_LEVEL); INFO or DEBUG shows each request again. The SDKs' own loggers (their retries, at INFO)
# follow LOG_LEVEL.
LOG_LEVEL_HTTP_CLIENT = LOG_LEVELS[max(LOG_LEVELS.index(LOG_LEVEL), LOG_LEVELS.index(
    env_choice("LOG_LEVEL_HTTP_CLIENT", "WARNING", LOG_LEVELS)))]
# Django's own logger keeps its level (INFO) and its mail to ADMINS, but not its console handler:
# under DEBUG that handler printed every line of Django's (each request of the development server,
# each "Not Found") a second time beside the site's, and as plain text among LOG_FORMAT=json lines.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"log_context": {"()": "mastra_site.logging_context.LogContextFilter"},
                "require_debug_false": {"()": "django.utils.log.RequireDebugFalse"}},
    "formatters": {
        "json": {"()": "pythonjsonlogger.json.JsonFormatter", "fmt": "%(levelname)s %(name)s %(message)s",
                 "rename_fields": {"levelname": "level", "name": "logger", "exc_info": "exception"},
                 "timestamp": True},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["log_context"],
                             **({"formatter": "json"} if LOG_FORMAT == "json" else {})},
                 "mail_admins": {"level": "ERROR", "filters": ["require_debug_false"],
                                 "class": "django.utils.log.AdminEmailHandler"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django": {"handlers": ["mail_admins"], "level": "INFO"},
                **{name: {"level": LOG_LEVEL_HTTP_CLIENT} for name in ("httpx", "httpx2")}},
}
