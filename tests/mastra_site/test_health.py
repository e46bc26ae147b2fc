"""``/healthz`` (the process answers, no database) and ``/readyz`` (database, migrations, Redis):
no sign-in, no versions or settings in the answer, 503 naming what failed (never a 500), never
redirected to HTTPS (a load balancer probes over HTTP)."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection
from django.db.migrations.executor import MigrationExecutor

from tests.chat.browser import free_port

pytestmark = pytest.mark.django_db


def test_healthz_answers_without_touching_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})
    assert response["Content-Type"] == "application/json"
    assert "no-store" in response["Cache-Control"]


def test_readyz_is_ok_with_the_database_migrated_and_no_redis(client, settings):
    settings.REDIS_URL = ""
    response = client.get("/readyz")
    assert (response.status_code, response.json()) == (
        200, {"status": "ok", "checks": {"database": "ok", "migrations": "ok", "redis": "skipped"}})
    assert "no-store" in response["Cache-Control"]


def test_readyz_pings_redis_when_it_is_configured(client, settings, redis_url):
    settings.REDIS_URL = redis_url
    response = client.get("/readyz")
    assert (response.status_code, response.json()) == (
        200, {"status": "ok", "checks": {"database": "ok", "migrations": "ok", "redis": "ok"}})


def test_readyz_is_503_when_redis_does_not_answer(client, settings):
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    response = client.get("/readyz")
    assert (response.status_code, response.json()) == (
        503, {"status": "unavailable", "checks": {"database": "ok", "migrations": "ok", "redis": "unavailable"}})


def test_readyz_is_503_when_the_database_does_not_answer(client, settings, monkeypatch):
    settings.REDIS_URL = ""

    def refuse(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection, "cursor", refuse)
    response = client.get("/readyz")
    assert (response.status_code, response.json()) == (
        503, {"status": "unavailable", "checks": {"database": "unavailable", "migrations": "unknown",
                                                  "redis": "skipped"}})


def test_readyz_is_503_while_a_migration_is_unapplied(client, settings, monkeypatch):
    settings.REDIS_URL = ""
    pending = [(MigrationExecutor(connection).loader.get_migration("agents", "0001_initial"), False)]
    monkeypatch.setattr(MigrationExecutor, "migration_plan", lambda self, targets, clean_start=False: pending)
    response = client.get("/readyz")
    assert (response.status_code, response.json()) == (
        503, {"status": "unavailable", "checks": {"database": "ok", "migrations": "pending", "redis": "skipped"}})


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_probes_are_not_redirected_to_https(client, settings, path):
    settings.SECURE_SSL_REDIRECT = True
    settings.REDIS_URL = ""
    response = client.get(path)
    assert response.status_code == 200
    # every other page still is
    assert client.get("/login/").status_code == 301
