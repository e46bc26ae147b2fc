"""Probes for a load balancer or an orchestrator (README, Health endpoints).

``GET /healthz``: the process answers (liveness); no database, no Redis. ``GET /readyz``: the
process can serve (readiness): the database answers, no migration is unapplied, and Redis answers a
PING when ``REDIS_URL`` is set. 200 when all hold, else 503 naming what failed; never a 500, never
a long wait (Redis: :data:`TIMEOUT_S`; PostgreSQL: the ``connect_timeout`` of ``settings.DATABASES``).

Neither needs a sign-in and neither says more than ``ok``/what failed (no versions, no settings).
``SECURE_REDIRECT_EXEMPT`` keeps them on plain HTTP when ``SECURE_SSL_REDIRECT`` is on.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

log = logging.getLogger(__name__)

#: seconds to wait for Redis to connect and to answer
TIMEOUT_S = 2.0


@never_cache
@require_safe
def healthz(request):
    return JsonResponse({"status": "ok"})


@never_cache
@require_safe
def readyz(request):
    database = check_database()
    checks = {"database": database,
              "migrations": check_migrations() if database == "ok" else "unknown",
              "redis": check_redis()}
    ready = all(state in ("ok", "skipped") for state in checks.values())
    return JsonResponse({"status": "ok" if ready else "unavailable", "checks": checks}, status=200 if ready else 503)


def check_database() -> str:
    connection = connections[DEFAULT_DB_ALIAS]
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any failure is "unavailable", never a 500
        log.warning("readyz: the database does not answer: %s", exc)
        connection.close_if_unusable_or_obsolete()
        return "unavailable"
    return "ok"


def check_migrations() -> str:
    connection = connections[DEFAULT_DB_ALIAS]
    try:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:
        log.warning("readyz: the migrations cannot be read: %s", exc)
        return "unavailable"
    if plan:
        log.warning("readyz: %d migration(s) unapplied (manage.py migrate)", len(plan))
        return "pending"
    return "ok"


def check_redis() -> str:
    if not settings.REDIS_URL:
        return "skipped"
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=TIMEOUT_S, socket_timeout=TIMEOUT_S)
    try:
        client.ping()
    except Exception as exc:
        log.warning("readyz: Redis does not answer: %s", exc)
        return "unavailable"
    finally:
        client.close()
    return "ok"
